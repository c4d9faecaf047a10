package mock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// picture is a w×h image whose pixels depend on seed, so two seeds give two different files.
func picture(w, h int, seed int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x*seed + y), uint8(y * (seed + 3)), uint8((x ^ y) + seed), 255})
		}
	}
	return img
}

// encodeImage is a w×h picture encoded as format (png, jpeg or gif), in base64.
func encodeImage(t *testing.T, format string, w, h, seed int) string {
	t.Helper()
	var b bytes.Buffer
	var err error
	switch format {
	case "png":
		err = png.Encode(&b, picture(w, h, seed))
	case "jpeg":
		err = jpeg.Encode(&b, picture(w, h, seed), &jpeg.Options{Quality: 80})
	case "gif":
		err = gif.Encode(&b, picture(w, h, seed), nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

func dataURL(t *testing.T, format string, w, h, seed int) string {
	return "data:image/" + format + ";base64," + encodeImage(t, format, w, h, seed)
}

func imagePart(url string) map[string]any {
	return map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}}
}

func textPart(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// postJSON posts body to path and returns the status and the answer read as JSON.
func postJSON(t *testing.T, m *Running, path string, body any, header map[string]string) (int, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	status, raw := postWith(t, m, path, b, header)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: HTTP %d, not JSON: %s", path, status, raw)
	}
	return status, out
}

// postWith posts a JSON body to path, with the headers given, and returns the status and the whole
// answer (a stream read to its end).
func postWith(t *testing.T, m *Running, path string, body []byte, header map[string]string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, m.BaseURL()+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: reading the answer: %v", path, err)
	}
	return resp.StatusCode, raw
}

// errorMessage is an OpenAI error body's message, "" for another body.
func errorMessage(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	msg, _ := e["message"].(string)
	return msg
}

// chatUsage posts a chat request with these messages and returns its prompt and cached tokens.
func chatUsage(t *testing.T, m *Running, messages []map[string]any) (prompt, cached int) {
	t.Helper()
	status, out := postJSON(t, m, "/chat/completions", map[string]any{"model": "m", "messages": messages, "max_tokens": 2}, nil)
	if status != http.StatusOK {
		t.Fatalf("HTTP %d: %v", status, out)
	}
	u, _ := out["usage"].(map[string]any)
	return num(u, "prompt_tokens"), num(u, "prompt_tokens_details", "cached_tokens")
}

// The rule's counts for the test's sizes: 64×48 is 3×2 patches of 28, 600×400 is 22×15.
const small, large = 6, 330

// A request's images are prompt tokens by the patch rule, at their parts' places; the same request
// again hits the cache through them, and another image misses from where it starts.
func TestImageTokensAreCachedByContent(t *testing.T) {
	m := start(t, nil)
	system := map[string]any{"role": "system", "content": strings.Repeat("You describe photos for a catalogue. ", 12)}
	text := tokenCount(t, "system:\n", system["content"].(string), "user:\n", "What is in this picture?", " And in this one?")

	one := []map[string]any{system, {"role": "user", "content": []any{textPart("What is in this picture?"), imagePart(dataURL(t, "png", 64, 48, 1))}}}
	if prompt, _ := chatUsage(t, m, one); prompt != text-tokenCount(t, " And in this one?")+small {
		t.Fatalf("one 64×48 PNG: prompt_tokens %d, want %d text + %d image", prompt, text-tokenCount(t, " And in this one?"), small)
	}

	two := func(first, second string) []map[string]any {
		return []map[string]any{system, {"role": "user", "content": []any{
			textPart("What is in this picture?"), imagePart(first), textPart(" And in this one?"), imagePart(second)}}}
	}
	png1, jpeg1, jpeg2 := dataURL(t, "png", 64, 48, 1), dataURL(t, "jpeg", 600, 400, 1), dataURL(t, "jpeg", 600, 400, 2)
	prompt, cached := chatUsage(t, m, two(png1, jpeg1))
	if want := text + small + large; prompt != want {
		t.Fatalf("a PNG and a 600×400 JPEG: prompt_tokens %d, want %d (%d text + %d + %d)", prompt, want, text, small, large)
	}
	beforeSecond := prompt - large // the tokens laid out before the JPEG's
	if cached >= beforeSecond {
		t.Fatalf("first sight of the JPEG: %d of %d tokens cached", cached, prompt)
	}
	if _, again := chatUsage(t, m, two(png1, jpeg1)); again != prompt/16*16 {
		t.Fatalf("the same request again: %d cached, want every whole block, %d", again, prompt/16*16)
	}
	if _, other := chatUsage(t, m, two(png1, jpeg2)); other != beforeSecond/16*16 {
		t.Fatalf("another second image: %d cached, want the blocks before it, %d", other, beforeSecond/16*16)
	}
	firstAt := prompt - large - small - tokenCount(t, " And in this one?")
	if _, other := chatUsage(t, m, two(dataURL(t, "png", 64, 48, 2), jpeg1)); other != firstAt/16*16 {
		t.Fatalf("another first image: %d cached, want the blocks before it, %d", other, firstAt/16*16)
	}
}

// A conversation that keeps its image resends it every turn and finds it cached; one that drops it
// for a note sends fewer tokens. Both are what a vision chat's history costs on a real server.
func TestImageHistoryKeptHitsTheCache(t *testing.T) {
	m := start(t, nil)
	photo := dataURL(t, "jpeg", 600, 400, 7)
	for _, keep := range []bool{true, false} {
		first := map[string]any{"role": "user", "content": []any{textPart(fmt.Sprintf("keep %v: what is this?", keep)), imagePart(photo)}}
		history := []map[string]any{first}
		p1, _ := chatUsage(t, m, history)
		if !keep {
			history[0] = map[string]any{"role": "user", "content": fmt.Sprintf("keep %v: what is this? [image]", keep)}
		}
		history = append(history, map[string]any{"role": "assistant", "content": "A harbour at dusk."}, map[string]any{"role": "user", "content": "And the boats?"})
		p2, c2 := chatUsage(t, m, history)
		switch {
		case keep && (p2 <= p1 || c2 != p1/16*16):
			t.Fatalf("kept: turn 2 prompt %d cached %d; turn 1 was %d tokens with the image", p2, c2, p1)
		case !keep && (p2 > p1-large/2 || c2 > 16):
			t.Fatalf("dropped: turn 2 prompt %d cached %d; turn 1 was %d tokens with the image", p2, c2, p1)
		}
	}
}

// ImageTokensFixed counts every image alike; GIF and WebP are read too; an http(s) URL is charged as
// a 1024×1024 image without being fetched.
func TestImageTokenRules(t *testing.T) {
	webp, err := os.ReadFile("testdata/gopher.lossless.webp") // 75×100, from golang.org/x/image's test data
	if err != nil {
		t.Fatal(err)
	}
	webpURL := "data:image/webp;base64," + base64.StdEncoding.EncodeToString(webp)
	user := func(url string) []map[string]any {
		return []map[string]any{{"role": "user", "content": []any{textPart("Look:"), imagePart(url)}}}
	}
	text := tokenCount(t, "user:\n", "Look:")
	patch, fixed := start(t, nil), start(t, func(c *Config) { c.ImageTokensFixed = 256 })
	for _, tc := range []struct {
		name       string
		url        string
		patch, fix int
	}{
		{"600×400 JPEG", dataURL(t, "jpeg", 600, 400, 3), large, 256},
		{"64×48 GIF", dataURL(t, "gif", 64, 48, 3), small, 256},
		{"75×100 WebP", webpURL, 3 * 4, 256},
		{"http URL", "https://example.com/cat.png", 37 * 37, 256},
	} {
		if got, _ := chatUsage(t, patch, user(tc.url)); got != text+tc.patch {
			t.Errorf("%s, patches of 28: prompt_tokens %d, want %d + %d", tc.name, got, text, tc.patch)
		}
		if got, _ := chatUsage(t, fixed, user(tc.url)); got != text+tc.fix {
			t.Errorf("%s, fixed 256: prompt_tokens %d, want %d + %d", tc.name, got, text, tc.fix)
		}
	}
	for _, c := range []func(*Config){
		func(c *Config) { c.ImageTokensPatch = 0 },
		func(c *Config) { c.ImageTokensFixed = maxImageTokens + 1 },
	} {
		cfg := DefaultConfig()
		c(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--image-tokens-") {
			t.Errorf("config %+v: %v, want an error naming the --image-tokens- flag", cfg, err)
		}
	}
}

// A broken image part is a 400 in the API's own error shape, naming the part and what is wrong.
func TestImageBadPartsAreRefused(t *testing.T) {
	m := start(t, nil)
	good := encodeImage(t, "png", 64, 48, 1)
	notImage := base64.StdEncoding.EncodeToString([]byte("just some text, not a picture"))
	chat := func(part map[string]any) any {
		return map[string]any{"model": "m", "max_tokens": 2, "messages": []any{
			map[string]any{"role": "system", "content": "hi"},
			map[string]any{"role": "user", "content": []any{textPart("see"), part}}}}
	}
	for _, tc := range []struct {
		part map[string]any
		want string
	}{
		{imagePart("data:image/png;base64" + good), "no comma"},
		{imagePart("data:image/png," + good), "is not base64"},
		{imagePart("data:image/png;base64,@@@@" + good), "not valid base64"},
		{imagePart("data:image/png;base64," + good + "!!"), "not valid base64"},
		{imagePart("data:image/png;base64," + notImage), "not an image the mock reads (PNG, JPEG, GIF or WebP)"},
		{imagePart("data:image/png;base64,"), "empty"},
		{imagePart("ftp://example.com/a.png"), "accepted: a data URL"},
		{map[string]any{"type": "image_url", "image_url": map[string]any{}}, "image_url.url is required"},
	} {
		status, out := postJSON(t, m, "/chat/completions", chat(tc.part), nil)
		msg := errorMessage(out)
		if status != http.StatusBadRequest || !strings.HasPrefix(msg, "messages[1].content[1]: ") || !strings.Contains(msg, tc.want) {
			t.Errorf("%.60v: HTTP %d %q; want 400 naming messages[1].content[1] and saying %q", tc.part, status, msg, tc.want)
		}
	}
}

// The Messages API's image blocks: base64 sources of the four media types, counted and cached as
// chat's; a mismatched or unknown media type and broken data are 400s in its error shape.
func TestImagesInMessages(t *testing.T) {
	m := start(t, nil)
	anthropic := map[string]string{"anthropic-version": "2023-06-01"}
	block := func(mediaType, data string) map[string]any {
		return map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": mediaType, "data": data}}
	}
	body := func(img map[string]any) any {
		return map[string]any{"model": "m", "max_tokens": 2, "messages": []any{
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "What is this?"}, img}}}}
	}
	photo := block("image/jpeg", encodeImage(t, "jpeg", 600, 400, 4))
	want := tokenCount(t, "user:\n", "What is this?") + large
	for turn := range 2 {
		status, out := postJSON(t, m, "/messages", body(photo), anthropic)
		u, _ := out["usage"].(map[string]any)
		input, read := num(u, "input_tokens"), num(u, "cache_read_input_tokens")
		if status != http.StatusOK || input+read != want || turn == 1 && read != want/16*16 {
			t.Fatalf("turn %d: HTTP %d, input %d + cache read %d; want %d in all, every whole block read the second time", turn, status, input, read, want)
		}
	}
	// An image in a tool_result counts too.
	nested := map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": []any{block("image/png", encodeImage(t, "png", 64, 48, 4))}}
	if status, out := postJSON(t, m, "/messages", body(nested), anthropic); status != http.StatusOK ||
		num(out["usage"].(map[string]any), "input_tokens")+num(out["usage"].(map[string]any), "cache_read_input_tokens") != tokenCount(t, "user:\n", "What is this?")+small {
		t.Errorf("an image in a tool_result: HTTP %d %v", status, out)
	}
	for _, tc := range []struct {
		img  map[string]any
		want string
	}{
		{block("image/png", encodeImage(t, "jpeg", 64, 48, 4)), `messages.0.content.1: source.media_type is "image/png" but the data is a JPEG image`},
		{block("image/bmp", encodeImage(t, "png", 64, 48, 4)), "messages.0.content.1.source.media_type: accepted: image/jpeg, image/png, image/gif or image/webp"},
		{block("image/png", "%%%"), "messages.0.content.1: the image data is not valid base64"},
		{map[string]any{"type": "image"}, "messages.0.content.1.source: Field required"},
		{map[string]any{"type": "tool_result", "content": []any{block("image/gif", "R0lG")}}, "messages.0.content.1.content.0: "},
	} {
		status, out := postJSON(t, m, "/messages", body(tc.img), anthropic)
		e, _ := out["error"].(map[string]any)
		if msg := fmt.Sprint(e["message"]); status != http.StatusBadRequest || out["type"] != "error" || e["type"] != "invalid_request_error" || !strings.Contains(msg, tc.want) {
			t.Errorf("%.60v: HTTP %d %v; want 400 saying %q", tc.img, status, out, tc.want)
		}
	}
}

// The Responses API's input_image parts, sent whole or held by the server (previous_response_id):
// the stored conversation keeps the image's hash and tokens, so the next turn hits the cache
// through it.
func TestImagesInResponses(t *testing.T) {
	m := start(t, nil)
	input := []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "input_text", "text": "What is this?"},
		map[string]any{"type": "input_image", "image_url": dataURL(t, "jpeg", 600, 400, 5)}}}}
	status, out := postJSON(t, m, "/responses", map[string]any{"model": "m", "max_output_tokens": 2, "input": input}, nil)
	want := tokenCount(t, "user:\n", "What is this?") + large
	if in, _ := responseUsage(t, out); status != http.StatusOK || in != want {
		t.Fatalf("HTTP %d, input_tokens %d, want %d", status, in, want)
	}
	status, out = postJSON(t, m, "/responses", map[string]any{"model": "m", "max_output_tokens": 2, "previous_response_id": out["id"], "input": "And the boats?"}, nil)
	if in, cached := responseUsage(t, out); status != http.StatusOK || in < want || cached < want/16*16 {
		t.Fatalf("next turn by previous_response_id: HTTP %d, input %d cached %d; want the image's turn (%d) cached", status, in, cached, want)
	}
	for _, tc := range []struct {
		part map[string]any
		want string
	}{
		{map[string]any{"type": "input_image", "file_id": "file-1"}, "input[0].content[1]: input_image needs image_url"},
		{map[string]any{"type": "input_image", "image_url": "data:image/png;base64,AAAA"}, "input[0].content[1]: the data is not an image"},
	} {
		in := []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": "x"}, tc.part}}}
		status, out := postJSON(t, m, "/responses", map[string]any{"model": "m", "input": in}, nil)
		msg := errorMessage(out)
		if status != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: HTTP %d %q; want 400 saying %q", tc.part, status, msg, tc.want)
		}
	}
}

// An image's uncached tokens are prefill: TTFT grows by PrefillPerToken each. Only the lower bound
// is checked, the machine being shared.
func TestImageTokensChargePrefill(t *testing.T) {
	const perToken = 500 * time.Microsecond
	m := start(t, func(c *Config) { c.PrefillPerToken = perToken })
	messages := []map[string]any{{"role": "user", "content": []any{imagePart(dataURL(t, "jpeg", 600, 400, 6))}}}
	begin := time.Now()
	prompt, cached := chatUsage(t, m, messages)
	took := time.Since(begin)
	if floor := 5*time.Millisecond + time.Duration(prompt-cached)*perToken; cached != 0 || took < floor || prompt < large {
		t.Fatalf("%d prompt tokens, %d cached, answered in %s; want at least %s", prompt, cached, took, floor)
	}
}

// The cost of an image part to the mock, for a photo-sized JPEG (about 1 MB): the first sight reads
// its header and checks its base64; a resend (a kept history) only hashes it.
func BenchmarkImagePart(b *testing.B) {
	s, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	img := picture(1024, 1024, 9)
	for i := range img.Pix {
		img.Pix[i] ^= uint8(i * 2654435761 >> 13) // noise, so the JPEG is photo-sized
	}
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 95}); err != nil {
		b.Fatal(err)
	}
	url := "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
	b.Logf("JPEG of %d bytes, %d in base64", buf.Len(), len(url))
	b.Run("first-sight", func(b *testing.B) {
		for b.Loop() {
			s.images = newImageCache(1)
			if err := s.resolveImage(imageURLRef("p", url)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("resent", func(b *testing.B) {
		for b.Loop() {
			if err := s.resolveImage(imageURLRef("p", url)); err != nil {
				b.Fatal(err)
			}
		}
	})
	content, _ := json.Marshal([]any{textPart("What is this?"), imagePart(url)})
	b.Run("parse-and-resend", func(b *testing.B) {
		for b.Loop() {
			segs, err := message{Role: "user", Content: content}.chatSegments(0)
			if err != nil || s.resolveImage(segs[1].image) != nil {
				b.Fatal(err)
			}
		}
	})
}
