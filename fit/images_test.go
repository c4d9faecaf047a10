package fit

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"
)

// wrap breaks a data URL's base64 into 76-character lines, as MIME tools write it.
func wrap(u string) string {
	head, payload, _ := strings.Cut(u, ",")
	var b strings.Builder
	for len(payload) > 76 {
		b.WriteString(payload[:76] + "\r\n")
		payload = payload[76:]
	}
	return head + "," + b.String() + payload
}

func pngDataURL(t *testing.T, w, h int) string {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}

// TestImagesFromRequestLog: an OpenAI-style request log's image_url parts are counted per request
// (history's included), the last user message's apart as the turn's new ones, and data URLs' sizes
// read from their headers; a URL's size is unknown and counted as such.
func TestImagesFromRequestLog(t *testing.T) {
	photo, shot := pngDataURL(t, 1024, 768), pngDataURL(t, 640, 480)
	img := func(u string) map[string]any {
		return map[string]any{"type": "image_url", "image_url": map[string]any{"url": u}}
	}
	txt := map[string]any{"type": "text", "text": "what is this?"}
	line := func(ts int, msgs ...map[string]any) string {
		b, _ := json.Marshal(map[string]any{"timestamp": ts, "session_id": "s", "request": map[string]any{"messages": msgs},
			"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 10}})
		return string(b)
	}
	user := func(parts ...map[string]any) map[string]any {
		return map[string]any{"role": "user", "content": parts}
	}
	log := strings.Join([]string{
		line(1, user(img(photo), txt)),
		line(2, user(img(photo), txt), map[string]any{"role": "assistant", "content": "a cat"}, user(img(shot), img("https://example.com/x.png"), txt)),
		line(3, map[string]any{"role": "user", "content": "no images here"}),
		// wrapped and unpadded base64 still give their size; a data URL that is not an image does not
		line(4, user(img(wrap(shot)), img(strings.TrimRight(photo, "=")), img("data:image/png;base64,"+base64.StdEncoding.EncodeToString([]byte("not an image"))))),
	}, "\n")
	l := NewLog()
	if err := l.Read("requests.jsonl", strings.NewReader(log), ""); err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(l)
	if err != nil {
		t.Fatal(err)
	}
	im := s.Images
	if im == nil || im.Requests != 3 || im.PerRequest.Max != 3 || im.NewPerRequest == nil || im.NewPerRequest.Max != 3 || im.ByURL != 1 || im.Unreadable != 1 {
		t.Fatalf("images %+v", im)
	}
	if im.Share != 0.75 {
		t.Errorf("share %v", im.Share)
	}
	if len(im.Sizes) != 2 || im.Sizes[0] != (ImageSize{1024, 768, 3}) || im.Sizes[1] != (ImageSize{640, 480, 2}) {
		t.Errorf("sizes %+v", im.Sizes)
	}
	var out strings.Builder
	s.Print(&out, []string{"requests.jsonl"})
	for _, want := range []string{"images: 3 requests carried images (75.0 %)", "most common 1024×768 (3), 640×480 (2)", "by URL      1 images", "unreadable  1 data URLs"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "base64") {
		t.Error("the summary quotes an image")
	}
}

// TestImagesFromRecords: plload records' image_count and image_pixels are counted (the pixels a
// mean per image, as records sum them); a log without images has none.
func TestImagesFromRecords(t *testing.T) {
	rec := func(start int64, images, pixels int) string {
		s := fmt.Sprintf(`{"metadata":{"conversation_id":"c","x_correlation_id":"x","turn_index":0,"request_start_ns":%d,"request_end_ns":%d},"metrics":{"input_sequence_length":{"value":50,"unit":"tokens"},"output_sequence_length":{"value":5,"unit":"tokens"}`, start, start+1e8)
		if images > 0 {
			s += fmt.Sprintf(`,"image_count":{"value":%d,"unit":"images"},"image_pixels":{"value":%d,"unit":"pixels"}`, images, pixels)
		}
		return s + "}}"
	}
	l := NewLog()
	data := strings.Join([]string{rec(1e9, 2, 2*512*512), rec(2e9, 0, 0), rec(3e9, 1, 1024*1024)}, "\n")
	if err := l.Read("profile_export.jsonl", strings.NewReader(data), ""); err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(l)
	if err != nil {
		t.Fatal(err)
	}
	im := s.Images
	if im == nil || im.Requests != 2 || im.NewPerRequest != nil || im.Megapixels == nil || im.Megapixels.Max != 1.048576 || im.Megapixels.P50 != 0.262144 {
		t.Fatalf("images %+v (megapixels %+v)", im, im.Megapixels)
	}
	plain := NewLog()
	if err := plain.Read("profile_export.jsonl", strings.NewReader(rec(1e9, 0, 0)+"\n"+rec(2e9, 0, 0)), ""); err != nil {
		t.Fatal(err)
	}
	if s, _ := Summarize(plain); s.Images != nil {
		t.Errorf("images in a log without any: %+v", s.Images)
	}
}
