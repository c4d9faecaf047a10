package workload

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
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// imageDatasetScenario writes a chat scenario over dir/d.jsonl (format openai, plus the dataset
// keys in datasetKeys) with extra lines under target and session, and loads it.
func imageDatasetScenario(t *testing.T, dir, datasetKeys, targetLines, sessionLines string) (*Scenario, Issues) {
	t.Helper()
	text := fmt.Sprintf(`name: vision-data
seed: 7
target:
  base_url: mock
%ssession:
  think_time: 0s
%sworkload:
  dataset: {file: d.jsonl, format: openai%s}
load:
  mode: concurrency
  stages:
    - {concurrency: 2, duration: 1s}
`, targetLines, sessionLines, datasetKeys)
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(path, LoadOptions{Getenv: noEnv})
}

// testPicture is a w×h image with a gradient seeded by shade, so that two shades encode differently.
func testPicture(w, h int, shade uint8) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 7), uint8(y * 11), shade, 255})
		}
	}
	return img
}

func encodePNG(t *testing.T, w, h int, shade uint8) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, testPicture(w, h, shade)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t *testing.T, w, h int, shade uint8) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, testPicture(w, h, shade), &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func dataURL(mime string, data []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// line is one openai dataset line of the given messages, each a role and its content (a string or
// a list of parts).
func line(t *testing.T, messages ...any) string {
	t.Helper()
	var ms []map[string]any
	for i := 0; i < len(messages); i += 2 {
		ms = append(ms, map[string]any{"role": messages[i], "content": messages[i+1]})
	}
	b, err := json.Marshal(map[string]any{"messages": ms})
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func textPart(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
func imagePartOf(url string) map[string]any {
	return map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}}
}

// pngWebP is a 1×1 lossless WebP (there is no WebP encoder in Go to make one).
const pngWebP = "UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA=="

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDatasetImagesRead: an openai dataset's image_url parts — a data URL, a file by relative path
// and by file:// URL, an https URL, a GIF and a WebP — become the turns' images with their format
// and size, in the message's order; the text is the text parts joined; a message with an image and
// no text is a turn; the same image anywhere is one *Image.
func TestDatasetImagesRead(t *testing.T) {
	dir := t.TempDir()
	pngData := encodePNG(t, 40, 30, 1)
	jpegData := encodeJPEG(t, 24, 16, 1)
	writeFile(t, filepath.Join(dir, "img", "photo.jpg"), jpegData)
	var gifBuf bytes.Buffer
	if err := gif.Encode(&gifBuf, testPicture(8, 6, 3), nil); err != nil {
		t.Fatal(err)
	}
	webp, _ := base64.StdEncoding.DecodeString(pngWebP)
	const web = "https://example.com/cat.png"
	data := line(t, "system", "You look at pictures.",
		"user", []any{textPart("Look "), imagePartOf(dataURL("image/png", pngData)), textPart("here.")},
		"assistant", "A gradient.",
		"user", []any{imagePartOf("img/photo.jpg"), imagePartOf(web), textPart("And these?")}) +
		line(t, "user", []any{imagePartOf(dataURL("image/png", pngData))}) +
		line(t, "user", []any{textPart("Same photo"), imagePartOf("file://" + filepath.Join(dir, "img", "photo.jpg")),
			imagePartOf(dataURL("image/gif", gifBuf.Bytes())), imagePartOf(dataURL("image/webp", webp))})
	writeFile(t, filepath.Join(dir, "d.jsonl"), []byte(data))
	s, issues := imageDatasetScenario(t, dir, "", "", "")
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	w, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	sessions := w.Stages[0].Sessions
	if len(sessions) != 3 {
		t.Fatalf("%d sessions; want 3", len(sessions))
	}
	type imageView struct {
		Format        string
		Width, Height int
		Bytes         int
		URL           string
	}
	views := func(tu Turn) []imageView {
		var out []imageView
		for _, im := range tu.Images() {
			out = append(out, imageView{im.Format, im.Width, im.Height, len(im.Data), im.URL})
		}
		return out
	}
	for _, c := range []struct {
		session, turn int
		text          string
		want          []imageView
	}{
		{0, 0, "Look here.", []imageView{{"png", 40, 30, len(pngData), ""}}},
		{0, 1, "And these?", []imageView{{"jpeg", 24, 16, len(jpegData), ""}, {"", 0, 0, 0, web}}},
		{1, 0, "", []imageView{{"png", 40, 30, len(pngData), ""}}},
		{2, 0, "Same photo", []imageView{{"jpeg", 24, 16, len(jpegData), ""}, {"gif", 8, 6, gifBuf.Len(), ""}, {"webp", 1, 1, len(webp), ""}}},
	} {
		tu := sessions[c.session].Turns[c.turn]
		if tu.User != c.text || fmt.Sprint(views(tu)) != fmt.Sprint(c.want) {
			t.Errorf("session %d turn %d: text %q, images %+v; want %q, %+v", c.session, c.turn, tu.User, views(tu), c.text, c.want)
		}
	}
	if n := sessions[1].Turns[0].UserTokens; n != 0 {
		t.Errorf("an image alone counts %d text tokens; want 0", n)
	}
	png0, png1 := sessions[0].Turns[0].Images()[0], sessions[1].Turns[0].Images()[0]
	jpg0, jpg2 := sessions[0].Turns[1].Images()[0], sessions[2].Turns[0].Images()[0]
	if png0 != png1 || jpg0 != jpg2 {
		t.Errorf("the same image on two lines is two copies: png %p %p, jpeg %p %p", png0, png1, jpg0, jpg2)
	}
	if !bytes.Equal(png0.Data, pngData) || png0.SHA256 != sha256Hex(pngData) || jpg0.SHA256 != sha256Hex(jpegData) {
		t.Errorf("an image's bytes or sha256 are not its file's")
	}
	if u := sessions[0].Turns[1].Images()[1]; u.Data != nil || u.SHA256 != sha256Hex([]byte(web)) || u.DataURL() != web {
		t.Errorf("an https image: %d bytes, sha256 %s, url %q; want no bytes, the url's sha256, the url sent as it is", len(u.Data), u.SHA256, u.DataURL())
	}
}

// TestDatasetImagesShared: 300 conversations that repeat one image, as a data URL and as a file,
// hold two images in all.
func TestDatasetImagesShared(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.png"), encodePNG(t, 64, 64, 9))
	url := dataURL("image/jpeg", encodeJPEG(t, 64, 64, 9))
	var b strings.Builder
	for i := range 300 {
		b.WriteString(line(t, "user", []any{textPart(fmt.Sprint("question ", i)), imagePartOf("a.png"), imagePartOf(url)}))
	}
	writeFile(t, filepath.Join(dir, "d.jsonl"), []byte(b.String()))
	s, issues := imageDatasetScenario(t, dir, "", "", "")
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	distinct := map[*Image]bool{}
	for _, ss := range s.source.Sessions {
		for _, tu := range ss.Turns {
			for _, im := range tu.Images {
				distinct[im] = true
			}
		}
	}
	if len(distinct) != 2 {
		t.Errorf("%d distinct images held for 600 image parts of 2 images", len(distinct))
	}
}

// TestDatasetImagesSHA256: dataset.jsonl keeps each image from data as its sha256 (with its url for
// an image by URL), apart from a synthetic image's recipe; the same files give the same sha256, and
// changing an image's pixels changes it.
func TestDatasetImagesSHA256(t *testing.T) {
	dir := t.TempDir()
	pngData := encodePNG(t, 20, 20, 5)
	writeFile(t, filepath.Join(dir, "p.jpg"), encodeJPEG(t, 20, 20, 5))
	const web = "https://example.com/x.webp"
	writeFile(t, filepath.Join(dir, "d.jsonl"), []byte(
		line(t, "user", []any{textPart("Q"), imagePartOf(dataURL("image/png", pngData)), imagePartOf("p.jpg"), imagePartOf(web)})))
	build := func() (StagePool, []byte) {
		s, issues := imageDatasetScenario(t, dir, "", "", "")
		if err := issues.Err(); err != nil {
			t.Fatal(err)
		}
		w, err := s.Build()
		if err != nil {
			t.Fatal(err)
		}
		return w.Stages[0], datasetOf(t, &w.Stages[0])
	}
	first, file := build()
	var got struct {
		Turns []struct {
			Images []map[string]any `json:"images"`
		} `json:"turns"`
	}
	if err := json.Unmarshal(bytes.SplitN(file, []byte("\n"), 2)[0], &got); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint([]map[string]any{{"sha256": sha256Hex(pngData)}, {"sha256": sha256Hex(encodeJPEG(t, 20, 20, 5))}, {"sha256": sha256Hex([]byte(web)), "url": web}})
	if len(got.Turns) != 1 || fmt.Sprint(got.Turns[0].Images) != want {
		t.Errorf("dataset.jsonl's images: %v; want %s", got.Turns, want)
	}
	again, _ := build()
	if again.SHA256 != first.SHA256 {
		t.Errorf("the same dataset gave sha256 %s, then %s", first.SHA256, again.SHA256)
	}
	writeFile(t, filepath.Join(dir, "p.jpg"), encodeJPEG(t, 20, 20, 6))
	if changed, _ := build(); changed.SHA256 == first.SHA256 {
		t.Errorf("the sha256 stayed %s when an image file changed", first.SHA256)
	}
}

// TestDatasetImagesRefused: each bad image is refused by validate at its line, saying what is
// wrong and what is accepted, without quoting the file's text.
func TestDatasetImagesRefused(t *testing.T) {
	dir := t.TempDir()
	small := encodePNG(t, 16, 16, 1)
	writeFile(t, filepath.Join(dir, "big.png"), encodePNG(t, 200, 200, 1))
	writeFile(t, filepath.Join(dir, "text.png"), []byte("SECRET words, not an image"))
	if err := os.MkdirAll(filepath.Join(dir, "folder.png"), 0o755); err != nil {
		t.Fatal(err)
	}
	bmp := append([]byte("BM"), make([]byte, 60)...)
	for _, c := range []struct {
		name, keys string
		part       any
		want       string
	}{
		{"bad base64", "", imagePartOf("data:image/png;base64,iVBORw0K@@@@"), "base64 does not decode"},
		{"not base64", "", imagePartOf("data:image/png,rawbytes"), "is not base64"},
		{"data not an image", "", imagePartOf(dataURL("image/png", []byte("SECRET plain text"))), "the data URL is not an image"},
		{"bmp", "", imagePartOf(dataURL("image/bmp", bmp)), "the data URL is a BMP image"},
		{"truncated png", "", imagePartOf(dataURL("image/png", small[:20])), "is not a readable PNG image"},
		{"missing file", "", imagePartOf("nope/cat.png"), `file "nope/cat.png"`},
		{"a folder", "", imagePartOf("folder.png"), "is not a regular file"},
		{"file not an image", "", imagePartOf("text.png"), `file "text.png"`},
		{"file over the limit", ", max_image_bytes: 300", imagePartOf("big.png"), "over the limit of 300"},
		{"data over the limit", ", max_image_bytes: 300", imagePartOf(dataURL("image/png", encodePNG(t, 200, 200, 2))), "over the limit of 300"},
		{"no url", "", map[string]any{"type": "image_url", "image_url": map[string]any{}}, "image_url part without a url"},
		{"ftp", "", imagePartOf("ftp://example.com/a.png"), "a ftp: URL, which plload cannot read"},
		{"file URL with a host", "", imagePartOf("file://server/a.png"), `names host "server"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := line(t, "user", "SECRET first line") + line(t, "user", []any{textPart("SECRET"), c.part})
			writeFile(t, filepath.Join(dir, "d.jsonl"), []byte(data))
			_, issues := imageDatasetScenario(t, dir, c.keys, "", "")
			msg := fmt.Sprint(issues.Err())
			for _, want := range []string{"workload.dataset.file", "d.jsonl line 2: messages[0].content[1]", c.want, "accepted:", "PNG, JPEG, WebP or GIF"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the error lacks %q: %s", want, msg)
				}
			}
			if strings.Contains(msg, "SECRET") {
				t.Errorf("the error quotes the file's text: %s", msg)
			}
		})
	}
	t.Run("image in an assistant message", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "d.jsonl"), []byte(line(t, "user", "Hi", "assistant", []any{imagePartOf(dataURL("image/png", small))})))
		_, issues := imageDatasetScenario(t, dir, "", "", "")
		if msg := fmt.Sprint(issues.Err()); !strings.Contains(msg, "line 1: messages[1].content[0] is an image_url part in a message of role assistant") {
			t.Errorf("got %s", msg)
		}
	})
}

// TestDatasetImagesRules: the scenario keys around a dataset's images — the limit's value, an
// endpoint that cannot send images, and session.images, of which only history and tokens apply.
func TestDatasetImagesRules(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "d.jsonl"), []byte(line(t, "user", "Hi")+line(t, "user", []any{textPart("Q"), imagePartOf(dataURL("image/png", encodePNG(t, 16, 16, 1)))})))
	for _, c := range []struct {
		name, keys, target, session, path, want string
	}{
		{"limit 0", ", max_image_bytes: 0", "", "", "workload.dataset.max_image_bytes", "found 0; accepted: the most bytes one encoded image"},
		{"completions", "", "  endpoint: completions\n", "", "workload.dataset.file", "line 2 carries images, which target.endpoint completions cannot send; accepted: a dataset with images with target.endpoint chat, messages or responses"},
		{"synthetic sizes", "", "", "  images: {sizes: [{width: 64, height: 64}]}\n", "session.images.sizes", "whose images are the file's (the dataset's image_url parts are its images); accepted with a dataset: session.images.history and session.images.tokens"},
		{"synthetic max_bytes", "", "", "  images: {max_bytes: 1000}\n", "session.images.max_bytes", "workload.dataset.max_image_bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, issues := imageDatasetScenario(t, dir, c.keys, c.target, c.session)
			for _, is := range issues.Errors() {
				if is.Path == c.path && strings.Contains(is.Message, c.want) {
					return
				}
			}
			t.Errorf("no error at %s saying %q; got:\n%s", c.path, c.want, dump(issues))
		})
	}
	s, issues := imageDatasetScenario(t, dir, ", max_image_bytes: 1000000", "", "  images: {history: drop, tokens: {per_image: 256}}\n")
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	im := s.source.Sessions[1].Turns[0].Images[0]
	if !s.DropsImages() || s.ImageTokens(im) != 256 {
		t.Errorf("session.images history and tokens with a dataset: drops %v, %d tokens; want true, 256", s.DropsImages(), s.ImageTokens(im))
	}
	// The resolved scenario names the keys that apply, and loads again: no synthetic key is filled in.
	resolved, err := s.ResolvedYAML()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "resolved.yaml")
	writeFile(t, path, resolved)
	if _, issues := Load(path, LoadOptions{Getenv: noEnv}); issues.Err() != nil {
		t.Errorf("the resolved scenario does not load again: %v\n%s", issues.Err(), resolved)
	}
	for _, want := range []string{"history: drop", "per_image: 256", "max_image_bytes: 1000000"} {
		if !bytes.Contains(resolved, []byte(want)) {
			t.Errorf("the resolved scenario lacks %q:\n%s", want, resolved)
		}
	}
	if bytes.Contains(resolved, []byte("sizes:")) {
		t.Errorf("the resolved scenario fills in synthetic image keys:\n%s", resolved)
	}
}
