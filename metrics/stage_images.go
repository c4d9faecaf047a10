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
}

// ImageBucket is TTFT and E2E of the requests with Images images ("0", "1", "2+").
type ImageBucket struct {
	Images   string `json:"images"`
	Requests int    `json:"requests"`
	TTFT     Dist   `json:"ttft_ms"`
	E2E      Dist   `json:"e2e_ms"`
}

// imageTally gathers a stage's vision numbers.
type imageTally struct {
	seen             bool
	requests, images int
	ended            int // images of successful requests that ended in the window
	bytes            []float64
	ttft, e2e        [3][]float64
	server, client   []float64
	prompt, cached   [2]int64 // [without, with] images
	promptSeen       [2]bool
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
	with := 0
	if n > 0 {
		with = 1
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

// ended counts the images of a successful request that ended in the window.
func (t *imageTally) addEnded(r *Record) {
	if r.ImageCount.OK {
		t.ended += r.ImageCount.V
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
	}
	for i, name := range []string{"0", "1", "2+"} {
		out.ByImages = append(out.ByImages, ImageBucket{Images: name, Requests: max(len(t.ttft[i]), len(t.e2e[i])), TTFT: summarize(t.ttft[i]), E2E: summarize(t.e2e[i])})
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
