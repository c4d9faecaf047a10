package llamaserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTinyProjectorCarriesWhatMtmdReads(t *testing.T) {
	out := filepath.Join(t.TempDir(), "mmproj.gguf")
	opt := ProjectorOptions{ImageSize: 48, PatchSize: 8}
	if err := WriteTinyProjector(out, width, opt); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	meta, dims, first := readGGUFHeader(t, data)
	for k, want := range map[string]any{"general.architecture": "clip", "clip.projector_type": "mlp", "clip.has_vision_encoder": true,
		"clip.vision.image_size": uint32(48), "clip.vision.patch_size": uint32(8), "clip.vision.projection_dim": uint32(width)} {
		if meta[k] != want {
			t.Errorf("%s = %v, want %v", k, meta[k], want)
		}
	}
	if m := meta["clip.vision.image_mean"].([]any); len(m) != 3 || m[0] != float32(0.48145466) {
		t.Errorf("image_mean %v", m)
	}
	want := map[string][]uint64{
		"v.patch_embd.weight":     {8, 8, 3, visionWidth},
		"v.position_embd.weight":  {visionWidth, 36},
		"mm.0.weight":             {visionWidth, width},
		"mm.2.weight":             {width, width},
		"v.blk.1.ffn_down.weight": {visionFFN, visionWidth},
	}
	for name, d := range want {
		if diff := cmp.Diff(d, dims[name]); diff != "" {
			t.Errorf("%s dims (-want +got):\n%s", name, diff)
		}
	}
	if first["v.pre_ln.weight"] != 1 || first["mm.2.bias"] != 0 {
		t.Errorf("norms %v, biases %v", first["v.pre_ln.weight"], first["mm.2.bias"])
	}
	if n := opt.ImageTokens(); n != 36 {
		t.Errorf("%d image tokens, want 36", n)
	}
	if err := WriteTinyProjector(out, width, ProjectorOptions{ImageSize: 50, PatchSize: 8}); err == nil || !strings.Contains(err.Error(), "patch size 8") {
		t.Errorf("a patch that does not divide the image: err %v", err)
	}
}

// imageURL is a picture as a data URL: a gradient w×h, encoded as PNG or JPEG, for the server to
// decode and resize.
func imageURL(t *testing.T, w, h int, format string) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), 128, 255})
		}
	}
	var buf bytes.Buffer
	var err error
	if format == "png" {
		err = png.Encode(&buf, img)
	} else {
		err = jpeg.Encode(&buf, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return "data:image/" + format + ";base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

// chatUsage is what a streamed chat answer reports: its usage, its timings, whether text came.
type chatUsage struct {
	Prompt, Completion, Cached int // usage: prompt_tokens, completion_tokens, prompt_tokens_details.cached_tokens
	CacheN, PromptN            int // timings: cache_n, prompt_n
	Content                    bool
}

// streamChat sends one user message, streamed with usage, and reads the answer to its end.
func streamChat(t *testing.T, url string, content any) chatUsage {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"max_tokens": 4, "stream": true, "stream_options": map[string]any{"include_usage": true},
		"messages": []map[string]any{{"role": "user", "content": content}}})
	resp, err := FreshConnections.Post(url+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	stream, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d: %s", resp.StatusCode, stream)
	}
	var u chatUsage
	for _, line := range strings.Split(string(stream), "\n") {
		rest, ok := strings.CutPrefix(line, "data: ")
		if !ok || rest == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
				Details    struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
			Timings *struct {
				CacheN  int `json:"cache_n"`
				PromptN int `json:"prompt_n"`
			} `json:"timings"`
		}
		if err := json.Unmarshal([]byte(rest), &chunk); err != nil {
			t.Fatalf("chunk %q: %v", rest, err)
		}
		for _, c := range chunk.Choices {
			u.Content = u.Content || c.Delta.Content != ""
		}
		if chunk.Usage != nil {
			u.Prompt, u.Completion, u.Cached = chunk.Usage.Prompt, chunk.Usage.Completion, chunk.Usage.Details.Cached
		}
		if chunk.Timings != nil {
			u.CacheN, u.PromptN = chunk.Timings.CacheN, chunk.Timings.PromptN
		}
	}
	if !strings.Contains(string(stream), "data: [DONE]") || !u.Content || u.Completion == 0 {
		t.Errorf("want streamed text, a usage chunk and [DONE]; got %+v from:\n%s", u, stream)
	}
	return u
}

// TestRealServerTakesImages: the tiny model with the tiny projector on a real llama-server answers a
// chat with an image. The image costs ImageTokens() prompt tokens whatever its size (mtmd resizes it
// to the encoder's square); a second identical request finds them in the prompt cache, and a different
// image does not.
func TestRealServerTakesImages(t *testing.T) {
	popt := ProjectorOptions{}
	mmproj, err := TinyProjector("", popt)
	if err != nil {
		t.Fatal(err)
	}
	s := Require(t, ModelOptions{}, Options{Slots: 1, Context: 2048, Mmproj: mmproj})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", tail(s.Log(), 6000))
		}
	})
	text := "What is in this picture?"
	withImage := func(url string) []map[string]any {
		return []map[string]any{{"type": "text", "text": text}, {"type": "image_url", "image_url": map[string]string{"url": url}}}
	}
	small := withImage(imageURL(t, 96, 40, "png"))
	textOnly := streamChat(t, s.URL, text)
	first := streamChat(t, s.URL, small)
	again := streamChat(t, s.URL, small)
	other := streamChat(t, s.URL, withImage(imageURL(t, 640, 480, "jpeg")))
	t.Logf("text only %+v; with a 96×40 PNG %+v; the same again %+v; a 640×480 JPEG %+v", textOnly, first, again, other)

	image := popt.ImageTokens()
	if first.Prompt != textOnly.Prompt+image || other.Prompt != first.Prompt {
		t.Errorf("prompt tokens: %d for the text, %d with a small image, %d with a large one; want the image to add %d whatever its size",
			textOnly.Prompt, first.Prompt, other.Prompt, image)
	}
	// The text before the image is cached from the text-only request; the image is not, the first time.
	if first.Cached > first.Prompt-image || first.Cached != first.CacheN {
		t.Errorf("first request with the image: %d cached (timings %d) of %d", first.Cached, first.CacheN, first.Prompt)
	}
	// The server evaluates at least the prompt's last token again, so all but one are cached.
	if again.Cached != again.Prompt-1 || again.CacheN != again.Cached || again.PromptN != 1 {
		t.Errorf("the same request again: %d cached (timings %d, %d evaluated) of %d; want all but the last", again.Cached, again.CacheN, again.PromptN, again.Prompt)
	}
	// Another picture at the same place: the cache holds the text up to it, not the first picture's tokens.
	if other.Cached > other.Prompt-image {
		t.Errorf("a different image: %d cached of %d; the first image's %d tokens must not match it", other.Cached, other.Prompt, image)
	}
}
