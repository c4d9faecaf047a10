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
		if images > 0 {
			r.ImageCount, r.ImageBytes, r.ClientImageTokens = Some(images), Some(images*1000), Some(images*300)
		}
		return r
	}
	for _, r := range []*Record{req(0, 0, 10, 10, 0), req(200, 1, 40, 310, 0), req(400, 2, 60, 610, 300), req(600, 3, 80, 910, 900)} {
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
	if !im.CacheHit.OK || im.CacheHit.V != 1200.0/1830 || !im.CacheHitWithout.OK || im.CacheHitWithout.V != 0 {
		t.Errorf("cache hit %v with images, %v without", im.CacheHit, im.CacheHitWithout)
	}
}
