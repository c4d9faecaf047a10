package metrics

import "fmt"

// Vision requests: what images cost. A chat app resends a shared photo with every later turn, so
// the numbers that decide a vision deployment's cost are by images in the request (TTFT and E2E of
// requests with none, one, two or more), the images and bytes sent, the image tokens the server
// counted against the client's estimate, and the prefix cache's hit on requests that carry images.

// ImagesSummary is a stage's vision numbers (stage.json summary.images); absent when no request
// carried an image.
type ImagesSummary struct {
	// Requests is the successful in-window requests that carried images; Images their images.
	Requests int `json:"requests"`
	Images   int `json:"images"`
	// ImagesPerSec is the images of the successful requests that ended in the window, per second.
	ImagesPerSec float64 `json:"images_per_sec"`
	// BytesPerRequest is the encoded image bytes per request that carried images.
	BytesPerRequest Dist `json:"image_bytes_per_request"`
	// ByImages splits TTFT and E2E by the images in the request: 0, 1, 2+.
	ByImages []ImageBucket `json:"by_images"`
	// ServerImageTokens is, per request with images and usage, the server's prompt tokens less the
	// client's count of the text: the image tokens as the server counted them (chat-template
	// tokens included, a few per message); ClientImageTokens the client's estimate of the same
	// images by the family's rule.
	ServerImageTokens Dist `json:"server_image_tokens"`
	ClientImageTokens Dist `json:"client_image_tokens"`
	// CacheHit is the prefix cache's hit (cached ÷ prompt tokens) over the requests that carried
	// images; CacheHitWithout over those that did not.
	CacheHit        Opt[float64] `json:"cache_hit"`
	CacheHitWithout Opt[float64] `json:"cache_hit_without_images"`
	// ByPixels splits TTFT and E2E by the pixels of the request's images (ImagePixelBuckets),
	// the buckets that have requests only.
	ByPixels []PixelBucket `json:"by_pixels"`
	// ImageInTokPerSec and TextInTokPerSec split the input tokens of the successful requests that
	// ended in the window, per second: image tokens (the server's prompt less the client's text
	// count where usage says, the chat template's tokens with them; else the client's estimate)
	// and the rest of the server's prompt (the client's count without usage).
	ImageInTokPerSec float64 `json:"image_input_tok_per_sec"`
	TextInTokPerSec  float64 `json:"text_input_tok_per_sec"`
}

// ImageBucket is the requests with Images images ("0", "1", "2+"): their TTFT and E2E, the
// request body's bytes (the upload a turn costs), and their share of the stage's cost.
type ImageBucket struct {
	Images       string `json:"images"`
	Requests     int    `json:"requests"`
	TTFT         Dist   `json:"ttft_ms"`
	E2E          Dist   `json:"e2e_ms"`
	RequestBytes Dist   `json:"request_bytes"`
	// USDPer1KTurns is the stage's $/1K turns × these requests' mean E2E ÷ every request's: a
	// request pays for the time it holds a place in the server's batch (docs/measurement.md).
	USDPer1KTurns *float64 `json:"usd_per_1k_turns,omitempty"`
}

// PixelBucket is TTFT and E2E of the requests whose images' pixels add up to at most MaxPixels
// (and more than the bucket before's).
type PixelBucket struct {
	Pixels    string `json:"pixels"`
	MaxPixels int    `json:"max_pixels,omitempty"` // 0: the last bucket, unbounded
	Requests  int    `json:"requests"`
	TTFT      Dist   `json:"ttft_ms"`
	E2E       Dist   `json:"e2e_ms"`
}

// ImagePixelBuckets are the upper bounds of TTFT by image pixels: 512×512 and its doublings
// (one 512², two, one 1024², two, four), then everything above.
var ImagePixelBuckets = []int{512 * 512, 2 * 512 * 512, 1024 * 1024, 2 * 1024 * 1024, 4 * 1024 * 1024}

// pixelBucket is the index in ImagePixelBuckets (len for above the last) of a request's pixels.
func pixelBucket(pixels int) int {
	for i, hi := range ImagePixelBuckets {
		if pixels <= hi {
			return i
		}
	}
	return len(ImagePixelBuckets)
}

// pixelLabel names bucket i in megapixels ("0.262–0.524 MP").
func pixelLabel(i int) string {
	mp := func(px int) string { return fmt.Sprintf("%.3g", float64(px)/1e6) }
	switch {
	case i == 0:
		return "≤ " + mp(ImagePixelBuckets[0]) + " MP"
	case i == len(ImagePixelBuckets):
		return "> " + mp(ImagePixelBuckets[i-1]) + " MP"
	}
	return mp(ImagePixelBuckets[i-1]) + "–" + mp(ImagePixelBuckets[i]) + " MP"
}

// imageTally gathers a stage's vision numbers.
type imageTally struct {
	seen                bool
	requests, images    int
	ended               int // images of successful requests that ended in the window
	bytes               []float64
	ttft, e2e, reqBytes [3][]float64
	pixTTFT, pixE2E     [][]float64 // by pixelBucket
	imageTok, textTok   int64       // input tokens of requests that ended in the window
	server, client      []float64
	prompt, cached      [2]int64 // [without, with] images
	promptSeen          [2]bool
}

// add takes a successful in-window request.
func (t *imageTally) add(r *Record) {
	n := 0
	if r.ImageCount.OK {
		n = r.ImageCount.V
		t.seen = t.seen || n > 0
	}
	b := min(n, 2)
	appendOpt(&t.ttft[b], r.TTFT)
	appendOpt(&t.e2e[b], r.RequestLatency)
	appendOptInt(&t.reqBytes[b], r.RequestBytes)
	with := 0
	if n > 0 {
		with = 1
		if r.ImagePixels.OK {
			if t.pixTTFT == nil {
				t.pixTTFT, t.pixE2E = make([][]float64, len(ImagePixelBuckets)+1), make([][]float64, len(ImagePixelBuckets)+1)
			}
			p := pixelBucket(r.ImagePixels.V)
			appendOpt(&t.pixTTFT[p], r.TTFT)
			appendOpt(&t.pixE2E[p], r.RequestLatency)
		}
		t.requests++
		t.images += n
		if r.ImageBytes.OK {
			t.bytes = append(t.bytes, float64(r.ImageBytes.V))
		}
		if r.UsagePromptTokens.OK && r.ClientPromptTokens.OK {
			t.server = append(t.server, float64(r.UsagePromptTokens.V-r.ClientPromptTokens.V))
		}
		appendOptInt(&t.client, r.ClientImageTokens)
	}
	if r.UsagePromptTokens.OK && r.UsageCachedTokens.OK {
		t.prompt[with] += int64(r.UsagePromptTokens.V)
		t.cached[with] += int64(min(r.UsageCachedTokens.V, r.UsagePromptTokens.V))
		t.promptSeen[with] = true
	}
}

// ended counts the images and input tokens of a successful request that ended in the window.
func (t *imageTally) addEnded(r *Record) {
	image := 0
	if r.ImageCount.OK {
		t.ended += r.ImageCount.V
		switch {
		case r.UsagePromptTokens.OK && r.ClientPromptTokens.OK:
			image = max(0, r.UsagePromptTokens.V-r.ClientPromptTokens.V)
		case r.ClientImageTokens.OK:
			image = r.ClientImageTokens.V
		}
	}
	t.imageTok += int64(image)
	// The text is the rest of the server's prompt, so the two add up to the stage's input tokens
	// (its chat template's tokens included); without usage, the client's count, which is the
	// text's alone.
	switch {
	case r.UsagePromptTokens.OK:
		t.textTok += int64(max(0, r.UsagePromptTokens.V-image))
	case r.InputSequenceLength.OK:
		t.textTok += int64(r.InputSequenceLength.V)
	}
}

// result is the summary over seconds of window; nil when no request carried an image.
func (t *imageTally) result(seconds float64) *ImagesSummary {
	if !t.seen {
		return nil
	}
	out := &ImagesSummary{Requests: t.requests, Images: t.images, BytesPerRequest: summarize(t.bytes),
		ServerImageTokens: summarize(t.server), ClientImageTokens: summarize(t.client), ByImages: []ImageBucket{}}
	if seconds > 0 {
		out.ImagesPerSec = float64(t.ended) / seconds
		out.ImageInTokPerSec, out.TextInTokPerSec = float64(t.imageTok)/seconds, float64(t.textTok)/seconds
	}
	for i, name := range []string{"0", "1", "2+"} {
		out.ByImages = append(out.ByImages, ImageBucket{Images: name, Requests: max(len(t.ttft[i]), len(t.e2e[i])),
			TTFT: summarize(t.ttft[i]), E2E: summarize(t.e2e[i]), RequestBytes: summarize(t.reqBytes[i])})
	}
	out.ByPixels = []PixelBucket{}
	for i := range t.pixTTFT {
		if n := max(len(t.pixTTFT[i]), len(t.pixE2E[i])); n > 0 {
			b := PixelBucket{Pixels: pixelLabel(i), Requests: n, TTFT: summarize(t.pixTTFT[i]), E2E: summarize(t.pixE2E[i])}
			if i < len(ImagePixelBuckets) {
				b.MaxPixels = ImagePixelBuckets[i]
			}
			out.ByPixels = append(out.ByPixels, b)
		}
	}
	hit := func(with int) Opt[float64] {
		if !t.promptSeen[with] || t.prompt[with] == 0 {
			return Opt[float64]{}
		}
		return Some(float64(t.cached[with]) / float64(t.prompt[with]))
	}
	out.CacheHit, out.CacheHitWithout = hit(1), hit(0)
	return out
}

// String is the bucket for a report's row ("2+ images").
func (b ImageBucket) String() string { return fmt.Sprintf("%s images", b.Images) }

// priceByImages gives each bucket its share of the stage's $/1K turns: its mean E2E over every
// request's, as a request holds its place in the server's batch for its E2E.
func (im *ImagesSummary) priceByImages(perKTurns *float64) {
	if im == nil || perKTurns == nil {
		return
	}
	sum, n := 0.0, 0
	for _, b := range im.ByImages {
		if b.E2E.Known() {
			sum += b.E2E.Mean * float64(b.E2E.N)
			n += b.E2E.N
		}
	}
	if n == 0 || sum <= 0 {
		return
	}
	all := sum / float64(n)
	for i := range im.ByImages {
		if b := &im.ByImages[i]; b.E2E.Known() {
			v := *perKTurns * b.E2E.Mean / all
			b.USDPer1KTurns = &v
		}
	}
}
