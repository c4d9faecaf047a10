package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg" // DecodeConfig reads what the generator wrote
	_ "image/png"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// visionScenario is a synthetic chat whose turns carry images; imagesBlock replaces its
// session.images lines.
const visionScenario = `name: vision
seed: 7
target:
  base_url: http://127.0.0.1:1/v1
  model: m
personas:
  count: 2
  system_prompt_tokens: 20
session:
  turns: 4
  user_input_tokens: 12
  max_output_tokens: 8
  think_time: 0s
  images:
    per_turn: {min: 1, max: 2}
    turns: every
    sizes: [{width: 64, height: 48}, {width: 32, height: 32, weight: 3}]
load:
  mode: concurrency
  stages:
    - {concurrency: 2, duration: 2s}
`

const visionImagesBlock = `  images:
    per_turn: {min: 1, max: 2}
    turns: every
    sizes: [{width: 64, height: 48}, {width: 32, height: 32, weight: 3}]
`

// withImages is visionScenario with its session.images block replaced by block (indented as
// session's keys are).
func withImages(block string) string {
	return strings.Replace(visionScenario, visionImagesBlock, block, 1)
}

func buildVision(t *testing.T, yaml string) (*Scenario, *Workload) {
	t.Helper()
	s, issues := Parse("t.yaml", []byte(yaml), LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil {
		t.Fatalf("%v\n--- file:\n%s", err, yaml)
	}
	w, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	return s, w
}

// What session.images cannot use is refused at its key, at a line, saying what is accepted.
func TestImageRules(t *testing.T) {
	cases := []struct {
		name, images, path, message string
	}{
		{"per_turn over 16", "  images: {per_turn: 17}\n", "session.images.per_turn.value", "≤ 16"},
		{"per_turn below 1", "  images: {per_turn: {min: 0, max: 2}}\n", "session.images.per_turn.min", "found 0"},
		{"turns a word", "  images: {turns: second}\n", "session.images.turns", "accepted: first, every, or the share"},
		{"turns over 1", "  images: {turns: 1.5}\n", "session.images.turns", "found 1.5; accepted: first, every"},
		{"turns a percentage", "  images: {turns: 30%}\n", "session.images.turns", "30% is 0.3"},
		{"sizes empty", "  images: {sizes: []}\n", "session.images.sizes", "the list is empty"},
		{"width too small", "  images: {sizes: [{width: 8, height: 64}]}\n", "session.images.sizes[0].width", "found 8; accepted: the image's width in pixels, from 16 to 8192"},
		{"height too large", "  images: {sizes: [{width: 64, height: 9000}]}\n", "session.images.sizes[0].height", "from 16 to 8192"},
		{"height missing", "  images: {sizes: [{width: 64}]}\n", "session.images.sizes[0].height", "found 0"},
		{"weight zero", "  images: {sizes: [{width: 64, height: 64, weight: 0}]}\n", "session.images.sizes[0].weight", "accepted: a weight > 0"},
		{"format gif", "  images: {format: gif}\n", "session.images.format", "accepted: jpeg, png"},
		{"format jpg", "  images: {format: jpg}\n", "session.images.format", `did you mean "jpeg"?`},
		{"quality 0", "  images: {jpeg_quality: 0}\n", "session.images.jpeg_quality", "found 0; accepted: a JPEG quality from 1 to 100"},
		{"quality 101", "  images: {jpeg_quality: 101}\n", "session.images.jpeg_quality", "from 1 to 100"},
		{"quality with png", "  images: {format: png, jpeg_quality: 90}\n", "session.images.jpeg_quality", "png, which is lossless"},
		{"history", "  images: {history: forget}\n", "session.images.history", "accepted: keep, drop"},
		{"max_bytes 0", "  images: {max_bytes: 0}\n", "session.images.max_bytes", "found 0; accepted: the most bytes"},
		{"tokens both", "  images: {tokens: {per_image: 256, patch: 28}}\n", "session.images.tokens", "found both per_image and patch"},
		{"tokens neither", "  images: {tokens: {}}\n", "session.images.tokens", "found neither per_image nor patch"},
		{"tokens per_image below 0", "  images: {tokens: {per_image: -1}}\n", "session.images.tokens.per_image", "found -1"},
		{"tokens patch too large", "  images: {tokens: {patch: 9000}}\n", "session.images.tokens.patch", "1 to 8192"},
		{"misspelt key", "  images: {per_trun: 2}\n", "session.images.per_trun", `did you mean "per_turn"?`},
		{"over max_bytes", "  images: {sizes: [{width: 64, height: 64}, {width: 1024, height: 1024}], max_bytes: 100000}\n", "session.images.sizes[1]",
			"over session.images.max_bytes (100000); accepted: a smaller size or a lower jpeg_quality"},
		{"png over max_bytes", "  images: {format: png, sizes: [{width: 512, height: 512}], max_bytes: 20000}\n", "session.images.sizes[0]",
			"or format jpeg"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			yaml := withImages(tc.images)
			_, issues := Parse("t.yaml", []byte(yaml), LoadOptions{Getenv: noEnv})
			for _, is := range issues.Errors() {
				if is.Path == tc.path && strings.Contains(is.Message, tc.message) && is.Line > 1 {
					return
				}
			}
			t.Errorf("no error at %s saying %q, at a line; got:\n%v", tc.path, tc.message, issues)
		})
	}
}

// Images go only where the requests can carry them: chat, messages and responses, with synthetic
// sessions.
func TestImageEndpointsAndSources(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, message string
	}{
		{"completions", "  model: m\n", "  model: m\n  endpoint: completions\n", "found with target.endpoint completions, whose requests carry no images; accepted: images with target.endpoint chat, messages or responses"},
		{"embeddings", "  model: m\n", "  model: m\n  endpoint: embeddings\n", "found with target.endpoint embeddings"},
		{"rerank", "  model: m\n", "  model: m\n  endpoint: rerank\n", "found with target.endpoint rerank"},
		{"trace", "load:\n", "workload:\n  trace: {file: testdata/traces/mooncake.jsonl, format: mooncake}\nload:\n", "found with workload.trace, whose requests are lengths without content"},
		{"prompts dataset", "load:\n", "workload:\n  dataset: {file: testdata/datasets/prompts.jsonl, format: prompts}\nload:\n", "found with workload.dataset format prompts, whose lines carry no images"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := strings.Replace(visionScenario, tc.from, tc.to, 1)
			_, issues := Parse("t.yaml", []byte(yaml), LoadOptions{Getenv: noEnv})
			for _, is := range issues.Errors() {
				if is.Path == "session.images" && strings.Contains(is.Message, tc.message) && is.Line > 1 {
					return
				}
			}
			t.Errorf("no error at session.images saying %q; got:\n%v", tc.message, issues)
		})
	}
	for _, e := range []string{"chat", "messages", "responses"} {
		yaml := strings.Replace(visionScenario, "  model: m\n", "  model: m\n  endpoint: "+e+"\n", 1)
		if _, issues := Parse("t.yaml", []byte(yaml), LoadOptions{Getenv: noEnv}); issues.Err() != nil {
			t.Errorf("endpoint %s: %v", e, issues.Err())
		}
	}
}

// `images: {}` (or `images:` alone) asks for one 1024×768 JPEG at quality 85 on the first turn,
// kept in the history, at most 20 MB, counted as 28-pixel patches.
func TestImageDefaults(t *testing.T) {
	want := ImagesSpec{
		PerTurn: Dist{Kind: DistConstant, Value: 1, HasValue: true, Limit: 16}, Turns: ImageTurnsFirst,
		Sizes:  []ImageSize{{Width: 1024, Height: 768, Weight: 1}},
		Format: "jpeg", JPEGQuality: 85, History: "keep", MaxBytes: 20 << 20, Tokens: ImageTokensSpec{Patch: 28},
	}
	for _, block := range []string{"  images: {}\n", "  images:\n"} {
		s, issues := Parse("t.yaml", []byte(withImages(block)), LoadOptions{Getenv: noEnv})
		if err := issues.Err(); err != nil {
			t.Fatalf("%q: %v", block, err)
		}
		if diff := cmp.Diff(want, *s.Session.Images); diff != "" {
			t.Errorf("%q: defaults (-want +got):\n%s", block, diff)
		}
	}
	s, issues := Parse("t.yaml", []byte(withImages("  images: {format: png, sizes: [{width: 64, height: 64}]}\n")), LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil || s.Session.Images.JPEGQuality != 0 || s.Session.Images.Sizes[0].Weight != 1 {
		t.Errorf("png: quality %d, weight %g (%v); want no quality and weight 1", s.Session.Images.JPEGQuality, s.Session.Images.Sizes[0].Weight, err)
	}
}

// A share of 0 and a limit the images come near are warnings, not errors.
func TestImageWarnings(t *testing.T) {
	for _, tc := range []struct{ images, path string }{
		{"  images: {turns: 0}\n", "session.images.turns"},
		// A 512×512 photo of seed 7 is 69,153 bytes encoded: within 10% of 72,000.
		{"  images: {sizes: [{width: 512, height: 512}], max_bytes: 72000}\n", "session.images.sizes[0]"},
	} {
		_, issues := Parse("t.yaml", []byte(withImages(tc.images)), LoadOptions{Getenv: noEnv})
		warned := false
		for _, is := range issues.Warnings() {
			warned = warned || is.Path == tc.path
		}
		if !warned || issues.Err() != nil {
			t.Errorf("%q: want a warning at %s and no error; got %v", tc.images, tc.path, issues)
		}
	}
}

// The same scenario draws the same images, byte for byte, whenever a session is drawn; its recipe
// makes the file again, and no two images are the same file.
func TestImageDrawsDeterministic(t *testing.T) {
	_, w1 := buildVision(t, visionScenario)
	_, w2 := buildVision(t, visionScenario)
	p1, p2 := &w1.Stages[0], &w2.Stages[0]
	seen := map[string]bool{}
	for i := range 3 {
		a, b := p1.Turns(i), p2.Turns(i)
		again := p1.Turns(i)
		for k := range a {
			ia, ib, ic := a[k].Images(), b[k].Images(), again[k].Images()
			if len(ia) == 0 || len(ia) != len(ib) || len(ia) != len(ic) {
				t.Fatalf("session %d turn %d: %d, %d and %d images", i, k, len(ia), len(ib), len(ic))
			}
			for j, im := range ia {
				if !bytes.Equal(im.Data, ib[j].Data) || !bytes.Equal(im.Data, ic[j].Data) {
					t.Fatalf("session %d turn %d image %d: another file when drawn again", i, k, j)
				}
				rec, ok := im.Recipe()
				remade, err := rec.Encode()
				if !ok || err != nil || !bytes.Equal(remade.Data, im.Data) {
					t.Fatalf("the recipe %+v (%v, %v) does not make the same file", rec, ok, err)
				}
				if seen[string(im.Data)] {
					t.Fatalf("session %d turn %d image %d: the same file as an earlier image", i, k, j)
				}
				seen[string(im.Data)] = true
			}
		}
	}
}

// turns: first gives images to the first turn only, every to all, a share to about that share,
// each turn drawn on its own.
func TestImageTurns(t *testing.T) {
	for _, tc := range []struct {
		turns    string
		lo, hi   float64 // the share of turns with images
		onlyTurn int     // ≥ 0: the one turn that may carry them
	}{
		{"first", 0.25, 0.25, 0},
		{"every", 1, 1, -1},
		{"0.3", 0.22, 0.38, -1},
		{"0", 0, 0, -1},
	} {
		block := fmt.Sprintf("  images: {turns: %s, sizes: [{width: 16, height: 16}], format: png}\n", tc.turns)
		_, w := buildVision(t, strings.Replace(withImages(block), "duration: 2s}", "duration: 2s, sessions: 100}", 1))
		pool := &w.Stages[0]
		with, all := 0, 0
		for i := range pool.Sessions {
			for k, turn := range pool.Turns(i) {
				all++
				if n := len(turn.Images()); n > 0 {
					with++
					if tc.onlyTurn >= 0 && k != tc.onlyTurn {
						t.Fatalf("turns %s: turn %d carries %d images", tc.turns, k, n)
					}
					if n != 1 {
						t.Fatalf("turns %s: %d images, per_turn is 1", tc.turns, n)
					}
				}
			}
		}
		if share := float64(with) / float64(all); share < tc.lo || share > tc.hi || all < 24 {
			t.Errorf("turns %s: %d of %d turns carry images (%.2f), want %.2f–%.2f", tc.turns, with, all, share, tc.lo, tc.hi)
		}
	}
}

// Sizes are picked by weight, and per_turn draws the images per turn.
func TestImageSizesByWeight(t *testing.T) {
	s, issues := Parse("t.yaml", []byte(visionScenario), LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	s.Load.Stages[0].Sessions = 300
	w, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	pool := &w.Stages[0]
	sizes, counts := map[string]int{}, map[int]int{}
	g, _ := pool.text.gens.Get().(*TextGen)
	for i := range pool.Sessions {
		for _, turn := range pool.draw(g, i).Turns { // recipes: nothing is encoded
			ims := turn.Images()
			counts[len(ims)]++
			for _, im := range ims {
				if im.Data != nil {
					t.Fatal("a turn drawn for the dataset encoded its image")
				}
				sizes[fmt.Sprintf("%dx%d", im.Width, im.Height)]++
			}
		}
	}
	total := sizes["64x48"] + sizes["32x32"]
	if share := float64(sizes["32x32"]) / float64(total); share < 0.7 || share > 0.8 || len(sizes) != 2 {
		t.Errorf("sizes %v: 32x32 is %.2f of the images, want 0.75 (weight 3 of 4)", sizes, share)
	}
	if one := float64(counts[1]) / float64(counts[1]+counts[2]); one < 0.45 || one > 0.55 || len(counts) != 2 {
		t.Errorf("images per turn %v: want 1 and 2 alike", counts)
	}
}

// A JPEG and a PNG decode as what they say they are, at the drawn size.
func TestImageFormatsDecode(t *testing.T) {
	for _, format := range []string{"jpeg", "png"} {
		_, w := buildVision(t, withImages(fmt.Sprintf("  images: {format: %s, sizes: [{width: 200, height: 120}], per_turn: 2}\n", format)))
		turn, _, _ := w.Stages[0].Cursor(0).Next()
		ims := turn.Images()
		if len(ims) != 2 {
			t.Fatalf("%s: %d images on the first turn", format, len(ims))
		}
		for _, im := range ims {
			cfg, got, err := image.DecodeConfig(bytes.NewReader(im.Data))
			if err != nil || got != format || cfg.Width != 200 || cfg.Height != 120 || im.Width != 200 || im.Height != 120 {
				t.Errorf("%s: decodes as %s %d×%d (%v); drawn %d×%d", format, got, cfg.Width, cfg.Height, err, im.Width, im.Height)
			}
			if im.MIME() != "image/"+format || !strings.HasPrefix(im.DataURL(), "data:image/"+format+";base64,") {
				t.Errorf("%s: MIME %s", format, im.MIME())
			}
		}
	}
}

// A 1024×768 image takes what a real one does. Real photos encoded by Go's image/jpeg at quality 85
// take 1.8 to 2.6 bits a pixel (measured here: two 720×477 photos of boards in the Rust embedded
// book, 1.79 and 2.62; Go's own video-001 frame, 150×103, 3.16), so 1 to 3 bits a pixel, 96 to 288
// KB: one flat colour takes 13 KB. A plain app window in PNG takes about 0.5 bits a
// pixel (go-latex's gui.png, 800×900: 45 KB), one with a photo in it more; so 0.5 to 4 bits a pixel
// for the screenshot, whose thumbnail is a photo (a PNG of the photo's grain alone would be near
// its raw 2.3 MB). Each is checked over several seeds: the validate check of max_bytes counts on
// one seed's file standing for the others' (within 10%).
func TestImageBytesLookReal(t *testing.T) {
	for _, tc := range []struct {
		format  string
		quality int
		lo, hi  int
	}{
		{"jpeg", 85, 1024 * 768 * 1 / 8, 1024 * 768 * 3 / 8},
		{"png", 0, 1024 * 768 / 2 / 8, 1024 * 768 * 4 / 8},
	} {
		smallest, largest := 1<<30, 0
		for seed := range uint64(4) {
			im, err := ImageRecipe{Width: 1024, Height: 768, Format: tc.format, Quality: tc.quality, Seed: seed}.Encode()
			if err != nil {
				t.Fatal(err)
			}
			smallest, largest = min(smallest, len(im.Data)), max(largest, len(im.Data))
		}
		if smallest < tc.lo || largest > tc.hi {
			t.Errorf("%s 1024×768: %d–%d bytes, want %d–%d", tc.format, smallest, largest, tc.lo, tc.hi)
		}
		if float64(largest) > 1.1*float64(smallest) {
			t.Errorf("%s 1024×768: %d–%d bytes: seeds differ by more than 10%%", tc.format, smallest, largest)
		}
	}
	bound := encodedBound("jpeg", 64, 64)
	for seed := range uint64(3) {
		im, _ := ImageRecipe{Width: 64, Height: 64, Format: "jpeg", Quality: 100, Seed: seed}.Encode()
		if len(im.Data) > bound {
			t.Errorf("a 64×64 JPEG at quality 100 takes %d bytes, over its bound %d", len(im.Data), bound)
		}
	}
}

// A recipe that cannot be made is refused, not drawn.
func TestImageRecipeRefused(t *testing.T) {
	for _, r := range []ImageRecipe{
		{Width: 8, Height: 64, Format: "jpeg", Quality: 85},
		{Width: 64, Height: 64, Format: "gif"},
		{Width: 64, Height: 64, Format: "jpeg"},
		{Width: 64, Height: 64, Format: "png", Quality: 85},
	} {
		if im, err := r.Encode(); err == nil || im != nil {
			t.Errorf("%+v: encoded", r)
		}
	}
}

// dataset.jsonl carries each image as its recipe, which makes the file the run sends; the
// dataset's sha256 changes with an image's size, and a scenario without images draws as before.
func TestImageDatasetRecipe(t *testing.T) {
	_, w := buildVision(t, visionScenario)
	pool := &w.Stages[0]
	line := bytes.SplitN(datasetOf(t, pool), []byte("\n"), 2)[0]
	var got datasetSession
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(line, []byte(`"images":[{"width":`)) || !bytes.Contains(line, []byte(`"format":"jpeg","quality":85,"seed":`)) {
		t.Errorf("no recipe in %s", line)
	}
	cur := pool.Cursor(0)
	for k := 0; ; k++ {
		turn, _, ok := cur.Next()
		if !ok {
			break
		}
		recipes := got.Turns[k+1].Images
		if len(recipes) != len(turn.Images()) {
			t.Fatalf("turn %d: %d recipes for %d images", k, len(recipes), len(turn.Images()))
		}
		for j, rec := range recipes {
			im, err := rec.Encode()
			if err != nil || im.SHA256 != turn.Images()[j].SHA256 {
				t.Fatalf("turn %d image %d: the recipe %+v makes another file (%v)", k, j, rec, err)
			}
		}
	}
	_, resized := buildVision(t, strings.Replace(visionScenario, "width: 64, height: 48", "width: 64, height: 49", 1))
	_, requality := buildVision(t, strings.Replace(visionScenario, "weight: 3}]\n", "weight: 3}]\n    jpeg_quality: 84\n", 1))
	if resized.Stages[0].SHA256 == pool.SHA256 || requality.Stages[0].SHA256 == pool.SHA256 {
		t.Error("the dataset sha256 does not change with the images")
	}
	_, plain := buildVision(t, withImages(""))
	if plain.Stages[0].Turns(0)[0].Extra != nil || bytes.Contains(datasetOf(t, &plain.Stages[0]), []byte(`"images"`)) {
		t.Error("a scenario without images has images")
	}
}

// A turn both RAG and vision keeps its retrieval and its images.
func TestImagesWithRAG(t *testing.T) {
	yaml := strings.Replace(ragScenario, "  rag:\n", "  images: {sizes: [{width: 32, height: 32}]}\n  rag:\n", 1)
	_, w := buildVision(t, yaml)
	turn, _, _ := w.Stages[0].Cursor(0).Next()
	if turn.RetrievalRequest() == nil || len(turn.Images()) != 1 || turn.UserTokens != 15 {
		t.Errorf("retrieval %v, %d images, %d user tokens", turn.RetrievalRequest() != nil, len(turn.Images()), turn.UserTokens)
	}
}

// The client's count of an image's tokens: a fixed count, or its patches.
func TestImageTokens(t *testing.T) {
	im := &Image{Width: 1024, Height: 768}
	for _, tc := range []struct {
		images string
		want   int
	}{
		{"", 37 * 28}, // no session.images: 28-pixel patches
		{"  images: {}\n", 37 * 28},
		{"  images: {tokens: {patch: 14}}\n", 74 * 55},
		{"  images: {tokens: {per_image: 256}}\n", 256},
	} {
		s, issues := Parse("t.yaml", []byte(withImages(tc.images)), LoadOptions{Getenv: noEnv})
		if err := issues.Err(); err != nil {
			t.Fatal(err)
		}
		if got := s.ImageTokens(im); got != tc.want {
			t.Errorf("%q: %d tokens, want %d", tc.images, got, tc.want)
		}
	}
}

// The resolved scenario writes session.images with its defaults and reads back the same.
func TestImagesResolved(t *testing.T) {
	s, issues := Parse("t.yaml", []byte(withImages("  images: {turns: 0.5, history: drop}\n")), LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	text, err := s.ResolvedYAML()
	if err != nil {
		t.Fatal(err)
	}
	again, issues := Parse("resolved.yaml", text, LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if !again.DropsImages() {
		t.Error("history: drop is not read back")
	}
	if diff := cmp.Diff(s.Session.Images, again.Session.Images); diff != "" {
		t.Errorf("session.images read back (-first +again):\n%s\n%s", diff, text)
	}
}

// BenchmarkImageEncode makes 1024×1024 images: "jpeg" is what a turn's fresh photo costs (spliced
// from its size's bank, image_jpeg.go), "jpeg-whole" the same photo drawn and encoded by
// image/jpeg at quality 85, "jpeg-bank" building that size's bank once, "png" a screenshot drawn and
// encoded; "-draw" is the pixels without the encoder.
func BenchmarkImageEncode(b *testing.B) {
	jpg := ImageRecipe{Width: 1024, Height: 1024, Format: "jpeg", Quality: 85}
	jpegBankFor(jpg) // built before the timing: a run builds it in Scenario.Build
	for _, bc := range []struct {
		name string
		r    ImageRecipe
		make func(ImageRecipe) int
	}{
		{"jpeg", jpg, func(r ImageRecipe) int { return len(r.encode().Data) }},
		{"jpeg-whole", jpg, func(r ImageRecipe) int { return len(r.encodeWhole()) }},
		{"jpeg-bank", jpg, func(r ImageRecipe) int { buildJPEGBank(r.Width, r.Height, r.Quality); return 0 }},
		{"jpeg-draw", jpg, func(r ImageRecipe) int { drawImage(r); return 0 }},
		{"png", ImageRecipe{Width: 1024, Height: 1024, Format: "png"}, func(r ImageRecipe) int { return len(r.encode().Data) }},
		{"png-draw", ImageRecipe{Width: 1024, Height: 1024, Format: "png"}, func(r ImageRecipe) int { drawImage(r); return 0 }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			size := 0
			for i := 0; b.Loop(); i++ {
				bc.r.Seed = uint64(i)
				size = bc.make(bc.r)
			}
			if size > 0 {
				b.ReportMetric(float64(size), "bytes/op")
			}
		})
	}
}
