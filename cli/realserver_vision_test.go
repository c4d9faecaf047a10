package cli

import (
	"strconv"
	"testing"

	"github.com/plload/plload/llamaserver"
)

// TestRealServerVision: a vision chat against llama-server with a multimodal projector (libmtmd,
// --mmproj; llamaserver writes a tiny random LLaVA-style one): 1–2 JPEGs in each session's first
// turn, history keep. No errors; every image is accepted; the server counts each image's tokens as
// the client's estimate does (the projector's (64/8)² = 64 per image, whatever its size), the
// server's figure above it only by the chat template's few tokens per message; and the later turns,
// which resend the images, find them in the server's prompt cache.
func TestRealServerVision(t *testing.T) {
	popt := llamaserver.ProjectorOptions{}
	mmproj, err := llamaserver.TinyProjector("", popt)
	if err != nil {
		t.Fatal(err)
	}
	s := llamaserver.Require(t, llamaserver.ModelOptions{}, llamaserver.Options{Slots: 2, Context: 8192, Aliases: []string{"tiny"}, Mmproj: mmproj})
	perImage := popt.ImageTokens()
	sc := realScenario(t, s, "real-vision", "tiny", `personas: {count: 2, system_prompt_tokens: 40}
session:
  turns: 3
  user_input_tokens: {min: 10, max: 30}
  max_output_tokens: {min: 4, max: 8}
  think_time: 100ms
  images:
    per_turn: {min: 1, max: 2}
    turns: first
    sizes: [{width: 320, height: 240}, {width: 128, height: 128}]
    format: jpeg
    history: keep
    tokens: {per_image: `+strconv.Itoa(perImage)+`}
load:
  mode: concurrency
  drain_timeout: 60s
  stages:
    - {concurrency: 2, warmup: 1s, duration: 8s}
`)
	code, out, stages := realRun(t, sc)
	checkClean(t, code, out, stages, 1, 0.15)
	im, ok := at(stages[0], "summary.images").(map[string]any)
	if !ok {
		t.Fatalf("no summary.images:\n%s", out)
	}
	requests, _ := im["requests"].(float64)
	server, client := num(t, im, "server_image_tokens.mean"), num(t, im, "client_image_tokens.mean")
	if requests < 5 || client < float64(perImage) || server < client || server > client+60 {
		t.Errorf("%v requests with images: the server counted %v image tokens a request, the client estimated %v (%d an image); want the server's within the template's few tokens above", requests, server, client, perImage)
	}
	hit, _ := im["cache_hit"].(float64)
	if hit < 0.3 {
		t.Errorf("cache hit of the requests with images %v: the later turns resend the first turn's images and should find them cached", hit)
	}
	t.Logf("vision on llama-server + tiny projector: %v requests with images (%v images), %v images/s, image tokens server %.1f / client %.1f a request, cache hit with images %.3f, without %v, TTFT by images %v",
		requests, im["images"], im["images_per_sec"], server, client, hit, im["cache_hit_without_images"], ttftByImages(im))
}

// ttftByImages is the p50 TTFT of each images bucket, for the log.
func ttftByImages(im map[string]any) map[string]any {
	out := map[string]any{}
	buckets, _ := im["by_images"].([]any)
	for _, b := range buckets {
		if m, ok := b.(map[string]any); ok {
			out[m["images"].(string)] = at(m, "ttft_ms.p50")
		}
	}
	return out
}
