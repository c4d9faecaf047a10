package fit

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig reads the formats registered here
	_ "image/jpeg"
	_ "image/png"
	"slices"
	"strings"

	"github.com/plload/plload/metrics"
	_ "golang.org/x/image/webp"
)

// Images in a log. A request log's OpenAI-style messages carry image_url parts: the last user
// message's are the turn's new images and the others its history's, and a data URL's header gives
// its size. plload's records carry image_count and image_pixels, which count a request's history's
// images too (a session that keeps its photo resends it every turn), so from records the count is of
// images sent, not shared. Only counts and sizes are kept, never an image.

// imageTally is what a log's images add up to.
type imageTally struct {
	requests int     // requests that carried any image
	sent     []int   // per such request: the images it sent (history's included)
	fresh    []int   // per request-log request with images: its last user message's images
	pixels   []int64 // per image whose size is known: its pixels
	sizes    map[[2]int]int
	urls     int // images by http(s) or file URL: no size without fetching
	// unreadable is data URLs whose header did not decode as a PNG, JPEG, GIF or WebP.
	unreadable int
}

// add counts one request's images: sent in all, fresh of them new (-1: unknown), and the
// pixels of those whose size is known.
func (t *imageTally) add(sent, fresh int, pixels []int64, sizes [][2]int) {
	if sent == 0 {
		return
	}
	t.requests++
	t.sent = append(t.sent, sent)
	if fresh >= 0 {
		t.fresh = append(t.fresh, fresh)
	}
	t.pixels = append(t.pixels, pixels...)
	for _, sz := range sizes {
		if t.sizes == nil {
			t.sizes = map[[2]int]int{}
		}
		t.sizes[sz]++
	}
}

// requestImages counts the image_url parts of an OpenAI-style request's messages: all of them, the
// last user message's, and the sizes of those sent as data URLs.
func (t *imageTally) request(r *requestBody) {
	sent, fresh := 0, 0
	var pixels []int64
	var sizes [][2]int
	last := lastUser(r)
	for i, m := range r.Messages {
		var parts []struct {
			Type     string          `json:"type"`
			ImageURL json.RawMessage `json:"image_url"`
		}
		if json.Unmarshal(m.Content, &parts) != nil {
			continue // text content
		}
		n := 0
		for _, p := range parts {
			if p.Type != "image_url" {
				continue
			}
			n++
			switch w, h, isData, ok := dataURLSize(p.ImageURL); {
			case ok:
				pixels, sizes = append(pixels, int64(w)*int64(h)), append(sizes, [2]int{w, h})
			case isData:
				t.unreadable++
			default:
				t.urls++
			}
		}
		sent += n
		if i == last {
			fresh = n
		}
	}
	t.add(sent, fresh, pixels, sizes)
}

func lastUser(r *requestBody) int {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return i
		}
	}
	return -1
}

// dataURLSize reads the size of an image_url part sent as a base64 data URL from its header;
// isData says whether it was a data URL at all. The decoder streams, so only the header's bytes are
// decoded, whatever the size of the image.
func dataURLSize(raw json.RawMessage) (w, h int, isData, ok bool) {
	var u struct {
		URL string `json:"url"`
	}
	if json.Unmarshal(raw, &u) != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, 0, false, false
		}
		u.URL = s
	}
	head, payload, found := strings.Cut(u.URL, ",")
	if !found || !strings.HasPrefix(strings.ToLower(head), "data:") {
		return 0, 0, false, false
	}
	if !strings.HasSuffix(strings.ToLower(head), ";base64") {
		return 0, 0, true, false
	}
	if strings.ContainsAny(payload, " \t\r\n") { // a wrapped payload
		payload = strings.Join(strings.Fields(payload), "")
	}
	enc := base64.StdEncoding
	if len(payload)%4 != 0 { // without its padding
		enc = base64.RawStdEncoding
	}
	cfg, _, err := image.DecodeConfig(base64.NewDecoder(enc, strings.NewReader(payload)))
	if err != nil || cfg.Width < 1 || cfg.Height < 1 {
		return 0, 0, true, false
	}
	return cfg.Width, cfg.Height, true, true
}

// record counts a plload record's images: image_count sent (history's included), image_pixels
// summed over them.
func (t *imageTally) record(rec *metrics.Record) {
	if !rec.ImageCount.OK || rec.ImageCount.V <= 0 {
		return
	}
	var pixels []int64
	if rec.ImagePixels.OK {
		each := int64(rec.ImagePixels.V) / int64(rec.ImageCount.V) // the mean: records sum them
		for range rec.ImageCount.V {
			pixels = append(pixels, each)
		}
	}
	t.add(rec.ImageCount.V, -1, pixels, nil)
}

// ImageStats is a log's images (`plload fit --json` images; absent when no request carried one).
type ImageStats struct {
	// Requests is the requests that carried images; Share their part of all requests.
	Requests int     `json:"requests"`
	Share    float64 `json:"share"`
	// PerRequest is the images a request with images sent, history's included.
	PerRequest Quantiles `json:"per_request"`
	// NewPerRequest is the images of its last user message (request logs with messages only).
	NewPerRequest *Quantiles `json:"new_per_request,omitempty"`
	// Megapixels is each image's size, where known (data URLs' headers; records' mean per request).
	Megapixels *Quantiles `json:"megapixels,omitempty"`
	// Sizes are the most common width×height (request logs with data URLs), most frequent first.
	Sizes []ImageSize `json:"sizes,omitempty"`
	// ByURL is the images sent by URL, whose size the log does not hold; Unreadable the data URLs
	// whose header did not decode as an image.
	ByURL      int `json:"by_url"`
	Unreadable int `json:"unreadable"`
}

// ImageSize is one width×height and how many images had it.
type ImageSize struct {
	Width  int `json:"width"`
	Height int `json:"height"`
	Count  int `json:"count"`
}

// result is the log's image stats, or nil without images.
func (t *imageTally) result(requests int) *ImageStats {
	if t.requests == 0 {
		return nil
	}
	asFloats := func(v []int) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		slices.Sort(out)
		return out
	}
	st := &ImageStats{Requests: t.requests, PerRequest: quantiles(asFloats(t.sent)), ByURL: t.urls, Unreadable: t.unreadable}
	if requests > 0 {
		st.Share = float64(t.requests) / float64(requests)
	}
	if len(t.fresh) > 0 {
		q := quantiles(asFloats(t.fresh))
		st.NewPerRequest = &q
	}
	if len(t.pixels) > 0 {
		mp := make([]float64, len(t.pixels))
		for i, p := range t.pixels {
			mp[i] = float64(p) / 1e6
		}
		slices.Sort(mp)
		q := quantiles(mp)
		st.Megapixels = &q
	}
	for sz, n := range t.sizes {
		st.Sizes = append(st.Sizes, ImageSize{Width: sz[0], Height: sz[1], Count: n})
	}
	slices.SortFunc(st.Sizes, func(a, b ImageSize) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return a.Width*a.Height - b.Width*b.Height
	})
	st.Sizes = st.Sizes[:min(len(st.Sizes), 8)]
	return st
}

// print writes the images line of the summary.
func (s *ImageStats) print() string {
	if s == nil {
		return "images: none\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "images: %d requests carried images (%.1f %%); per request p50 %s, p99 %s, max %s (history's included)",
		s.Requests, 100*s.Share, num(s.PerRequest.P50), num(s.PerRequest.P99), num(s.PerRequest.Max))
	if q := s.NewPerRequest; q != nil {
		fmt.Fprintf(&b, "; new in the turn p50 %s, max %s", num(q.P50), num(q.Max))
	}
	b.WriteString("\n")
	if q := s.Megapixels; q != nil {
		fmt.Fprintf(&b, "  size        megapixels per image p50 %.3g, p95 %.3g, max %.3g", q.P50, q.P95, q.Max)
		if len(s.Sizes) > 0 {
			top := make([]string, len(s.Sizes))
			for i, sz := range s.Sizes {
				top[i] = fmt.Sprintf("%d×%d (%d)", sz.Width, sz.Height, sz.Count)
			}
			fmt.Fprintf(&b, "; most common %s", strings.Join(top, ", "))
		}
		b.WriteString("\n")
	}
	if s.ByURL > 0 {
		fmt.Fprintf(&b, "  by URL      %d images (their size is not in the log)\n", s.ByURL)
	}
	if s.Unreadable > 0 {
		fmt.Fprintf(&b, "  unreadable  %d data URLs whose header is not a PNG, JPEG, GIF or WebP (no size)\n", s.Unreadable)
	}
	return b.String()
}
