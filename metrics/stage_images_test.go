package metrics

import (
	"testing"
	"time"
)

// Requests are split by the images they carried; images/s counts the images of requests that ended
// in the window; the server's image tokens are its prompt less the client's text count; the cache
// hit is told apart for requests with and without images.
func TestImagesSummary(t *testing.T) {
	ms := int64(1_000_000)
	st := NewStage(StageInput{T0Ns: Some(int64(0)), Duration: 10 * time.Second})
	req := func(start int64, images int, ttft float64, prompt, cached int) *Record {
		r := &Record{RequestStartNs: start * ms, RequestAckNs: Some(start * ms), RequestEndNs: Some((start + 100) * ms), RequestLatency: Some(100.0),
			TTFT: Some(ttft), InputSequenceLength: Some(10), OutputSequenceLength: Some(5), ClientPromptTokens: Some(10),
			UsagePromptTokens: Some(prompt), UsageCachedTokens: Some(cached)}
		r.RequestBytes = Some(500 + images*1400)
		if images > 0 {
			r.ImageCount, r.ImageBytes, r.ClientImageTokens = Some(images), Some(images*1000), Some(images*300)
			r.ImagePixels = Some(images * 512 * 512)
			r.RequestLatency = Some(100.0 * float64(images+1)) // held the batch longer
		}
		return r
	}
	plain := req(0, 0, 10, 10, 0)
	plain.ClientPromptTokens = Some(8) // the server counts 2 more (its template): they are text
	for _, r := range []*Record{plain, req(200, 1, 40, 310, 0), req(400, 2, 60, 610, 300), req(600, 3, 80, 910, 900)} {
		st.Add(r)
	}
	im := st.Summary().Images
	if im == nil || im.Requests != 3 || im.Images != 6 || im.ImagesPerSec != 0.6 {
		t.Fatalf("images %+v", im)
	}
	if b := im.ByImages; len(b) != 3 || b[0].Requests != 1 || b[1].TTFT.Mean != 40 || b[2].Requests != 2 || b[2].TTFT.Mean != 70 {
		t.Errorf("by images %+v", b)
	}
	if im.ServerImageTokens.Mean != 600 || im.ClientImageTokens.Mean != 600 || im.BytesPerRequest.Mean != 2000 {
		t.Errorf("server %v, client %v image tokens, bytes %v", im.ServerImageTokens.Mean, im.ClientImageTokens.Mean, im.BytesPerRequest.Mean)
	}
	if b := im.ByImages; b[0].RequestBytes.Mean != 500 || b[2].RequestBytes.Mean != 500+2.5*1400 {
		t.Errorf("request bytes by images: %v, %v", b[0].RequestBytes.Mean, b[2].RequestBytes.Mean)
	}
	// 1 image: 512² (first bucket); 2: 2×512² (second); 3: 3×512² (third, up to 1024²).
	if p := im.ByPixels; len(p) != 3 || p[0].Requests != 1 || p[0].TTFT.Mean != 40 || p[2].Pixels != "0.524–1.05 MP" || p[2].TTFT.Mean != 80 || p[2].MaxPixels != 1024*1024 {
		t.Errorf("by pixels %+v", p)
	}
	// Image tokens from usage less the text's 10: 300, 600, 900 over the 10 s window; the text is the
	// rest of the server's prompt, 10 each, so the two add up to the input tokens.
	if im.ImageInTokPerSec != 180 || im.TextInTokPerSec != 4 {
		t.Errorf("input tok/s: image %v, text %v", im.ImageInTokPerSec, im.TextInTokPerSec)
	}
	if !im.CacheHit.OK || im.CacheHit.V != 1200.0/1830 || !im.CacheHitWithout.OK || im.CacheHitWithout.V != 0 {
		t.Errorf("cache hit %v with images, %v without", im.CacheHit, im.CacheHitWithout)
	}
}

// Each bucket's $/1K turns is the stage's scaled by its mean E2E over every request's; without a
// price there is none.
func TestImagesPricedByE2E(t *testing.T) {
	per := 2.0
	im := &ImagesSummary{ByImages: []ImageBucket{
		{Images: "0", E2E: summarize([]float64{100, 100})},
		{Images: "1", E2E: summarize([]float64{400})},
		{Images: "2+"},
	}}
	im.priceByImages(nil)
	if im.ByImages[0].USDPer1KTurns != nil {
		t.Fatal("priced without a price")
	}
	im.priceByImages(&per)
	// mean E2E of all: 200; 0 images: 100/200 × 2 = 1; 1 image: 400/200 × 2 = 4.
	if b := im.ByImages; b[0].USDPer1KTurns == nil || *b[0].USDPer1KTurns != 1 || *b[1].USDPer1KTurns != 4 || b[2].USDPer1KTurns != nil {
		t.Errorf("priced %+v", b)
	}
	var none *ImagesSummary
	none.priceByImages(&per) // a stage without images: nothing to price, no panic
}
