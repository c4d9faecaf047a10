package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// visionSession is shortSessions with images in the first turn, kept or dropped in the history.
func visionSession(history string) string {
	return `  turns: 3
  user_input_tokens: {min: 5, max: 20}
  max_output_tokens: {min: 4, max: 12}
  think_time: {min: 10ms, max: 30ms}
  images:
    per_turn: 2
    turns: first
    sizes: [{width: 64, height: 48}]
    format: png
    history: ` + history
}

// A vision chat against the mock: the first turn sends its two images; with history keep every
// later request of the session sends them again (the same bytes) and the mock's cache answers
// them; with drop the later requests carry the note instead. Records count the images each request
// sent, and the mock's usage has their tokens.
func TestVisionHistoryKeepAndDrop(t *testing.T) {
	for _, history := range []string{"keep", "drop"} {
		t.Run(history, func(t *testing.T) {
			base, log := startLoggedMock(t, nil)
			res, dir, err := runScenario(t, context.Background(), scenarioYAML(base, visionSession(history), "  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 1s}"))
			if err != nil || res[0].Errors != 0 {
				t.Fatalf("%v, %+v", err, res)
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			later, withImages := 0, 0
			for _, x := range log.items {
				if x.path != "/v1/chat/completions" {
					continue
				}
				msgs := x.body["messages"].([]any)
				users := 0
				images := 0
				for _, m := range msgs {
					mm := m.(map[string]any)
					if mm["role"] != "user" {
						continue
					}
					users++
					if parts, ok := mm["content"].([]any); ok {
						for _, p := range parts {
							pm := p.(map[string]any)
							if pm["type"] == "image_url" && strings.HasPrefix(pm["image_url"].(map[string]any)["url"].(string), "data:image/png;base64,") {
								images++
							}
						}
					}
				}
				if users > 1 {
					later++
					if images > 0 {
						withImages++
					}
				}
				if users == 1 && images != 2 {
					t.Fatalf("a first turn with %d images", images)
				}
			}
			if later == 0 || history == "keep" && withImages != later || history == "drop" && withImages != 0 {
				t.Fatalf("history %s: %d of %d later requests resent images", history, withImages, later)
			}
			recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
			for _, r := range recs {
				md, m := r["metadata"].(map[string]any), r["metrics"].(map[string]any)
				first := asFloat(md["turn_index"]) == 0
				count := metricValue(m, "image_count")
				if first && (count != 2 || metricValue(m, "image_pixels") != 2*64*48 || metricValue(m, "image_bytes") < 100) ||
					!first && history == "drop" && count != 0 || !first && history == "keep" && count != 2 {
					t.Fatalf("turn %v record: %v images, %v pixels, %v bytes", md["turn_index"], count, metricValue(m, "image_pixels"), metricValue(m, "image_bytes"))
				}
				if count > 0 && metricValue(m, "client_image_tokens") != count*6 { // ceil(64/28)·ceil(48/28) = 3·2
					t.Fatalf("client image tokens %v for %v images of 64×48", metricValue(m, "client_image_tokens"), count)
				}
			}
		})
	}
}

// A dataset request whose images include one by URL: its record counts both images and their bytes,
// and leaves image_pixels out (the URL's size is the server's to know; the other image's pixels
// alone would understate the request), while a request with a data URL only has its pixels.
func TestVisionURLImageHasNoPixels(t *testing.T) {
	img := "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	data := `{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "` + img + `"}}, {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}, {"type": "text", "text": "What are these?"}]}]}
{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "` + img + `"}}, {"type": "text", "text": "And this?"}]}]}
`
	file := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	base, _ := startLoggedMock(t, nil)
	text := scenarioYAML(base, "  think_time: 0s", "  mode: concurrency\n  stages:\n    - {concurrency: 1, requests: 2}") +
		"workload:\n  dataset: {file: " + file + ", format: openai}\n"
	res, dir, err := runScenario(t, context.Background(), text)
	if err != nil || res[0].Errors != 0 {
		t.Fatalf("%v, %+v", err, res)
	}
	recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	seen := map[float64]bool{}
	for _, r := range recs {
		m := r["metrics"].(map[string]any)
		count := metricValue(m, "image_count")
		_, hasPixels := m["image_pixels"]
		seen[count] = true
		if count == 2 && hasPixels || count == 1 && metricValue(m, "image_pixels") != 1 {
			t.Errorf("%v images: image_pixels %v", count, m["image_pixels"])
		}
	}
	if !seen[1] || !seen[2] {
		t.Fatalf("records with %v images, want 1 and 2", seen)
	}
}
