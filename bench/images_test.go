package bench

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/plload/plload/engine"
	plmetrics "github.com/plload/plload/metrics"
)

// BenchmarkVisionSendLag: do fresh images delay a send? Each op runs the same stage against the
// mock in a child process without images and then with 1–2 fresh 1024×1024 JPEGs in every turn, so
// the two are measured side by side: their send lag (credit − intended start) p50/p99/max, start lag
// (request start − intended) p99 and the client's CPU per request. Then both run again for their
// live heap's peak over the heap before them, beside the images in use at once (imagesHeld). Two
// stages at 20 turns/s: request_rate, 20 one-turn sessions a second (every turn a first turn,
// prepared ahead); arrival_rate, 5 sessions a second of 4 turns 200 ms apart (history drop), so most
// turns come after a think time.
//
//	PLLOAD_VISION_BENCH=1 go test ./bench -run '^$' -bench VisionSendLag -benchtime 1x -count 3 -v
func BenchmarkVisionSendLag(b *testing.B) {
	if os.Getenv("PLLOAD_VISION_BENCH") != "1" {
		b.Skip("set PLLOAD_VISION_BENCH=1 to run the vision send-lag benchmark (about 4 minutes a count)")
	}
	base := childMock(b)
	const span = 15 * time.Second
	const images = "  images: {per_turn: {min: 1, max: 2}, turns: every, sizes: [{width: 1024, height: 1024}], format: jpeg, jpeg_quality: 85, history: drop}\n"
	for _, st := range []struct{ name, session, load string }{
		{"request_rate", "turns: 1\n  think_time: 0s", "mode: request_rate\n  stages:\n    - {rate: 20, duration: 15s}"},
		{"arrival_rate", "turns: 4\n  think_time: 200ms", "mode: arrival_rate\n  stages:\n    - {sessions_per_sec: 5, max_concurrency: 50, duration: 15s}"},
	} {
		b.Run(st.name, func(b *testing.B) {
			scenario := func(images string) string {
				return fmt.Sprintf(`name: vision-lag
seed: 1
target: {base_url: %s, model: m, timeout: 30s}
session:
  %s
  user_input_tokens: {min: 5, max: 10}
  max_output_tokens: 2
%spersonas: {count: 1, system_prompt_tokens: 5}
load:
  drain_timeout: 10s
  %s
`, base, st.session, images, st.load)
			}
			for b.Loop() {
				// Lags first, with the collector left to the engine; then the heap, each sample a
				// forced collection's (which would add to the lags).
				text := visionStage(b, scenario(""), span, false)
				img := visionStage(b, scenario(images), span, false)
				text.heapMiB = visionStage(b, scenario(""), span, true).heapMiB
				withHeap := visionStage(b, scenario(images), span, true)
				img.heapMiB, img.inFlightMiB, img.inUseMiB = withHeap.heapMiB, withHeap.inFlightMiB, withHeap.inUseMiB
				for _, m := range []struct {
					name string
					text float64
					img  float64
				}{
					{"lag-p50-ms", text.lagP50, img.lagP50}, {"lag-p99-ms", text.lagP99, img.lagP99}, {"lag-max-ms", text.lagMax, img.lagMax},
					{"start-lag-p99-ms", text.startLagP99, img.startLagP99}, {"peak-live-heap-MiB", text.heapMiB, img.heapMiB},
					{"sent-req/s", text.sent, img.sent}, {"errors", text.errors, img.errors}, {"µs-CPU/req", text.cpuPerReq, img.cpuPerReq},
				} {
					b.ReportMetric(m.text, "text-"+m.name)
					b.ReportMetric(m.img, "img-"+m.name)
				}
				b.ReportMetric(img.lagP99-text.lagP99, "lag-p99-diff-ms")
				b.ReportMetric(img.imagesPerSec, "img-images/s")
				b.ReportMetric(img.inFlightMiB, "img-image-MiB-in-flight")
				b.ReportMetric(img.inUseMiB, "img-image-MiB-in-use")
			}
		})
	}
}

// stageLags is what visionStage measured of one stage.
type stageLags struct {
	lagP50, lagP99, lagMax, startLagP99 float64
	heapMiB, inFlightMiB, inUseMiB      float64
	sent, imagesPerSec, errors          float64
	cpuPerReq                           float64 // the client's CPU (this process: the mock is a child), µs
}

// visionStage runs text's one stage and measures its lags and its image bytes in flight, and with
// heap its peak live heap.
func visionStage(b *testing.B, text string, span time.Duration, heap bool) stageLags {
	sc, w := buildScenario(b, "vision-lag.yaml", text)
	runtime.GC()
	base, top := liveHeap(), uint64(0)
	stop := func() uint64 { return 0 }
	if heap {
		stop = sampleLiveHeap()
	}
	cpu0 := engine.ProcessCPU()
	res, err := engine.Run(context.Background(), engine.Config{Scenario: sc, Workload: w, Dir: b.TempDir()})
	cpu := engine.ProcessCPU() - cpu0
	top = stop()
	if err != nil {
		b.Fatal(err)
	}
	r := res[0]
	var lag, startLag []float64
	var recs []*plmetrics.Record
	f, err := os.Open(filepath.Join(r.Dir, "profile_export.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	plmetrics.ReadRecords(f, func(rec *plmetrics.Record) error {
		lag = append(lag, plmetrics.Ms(rec.CreditIssuedNs-rec.IntendedStartNs.V))
		startLag = append(startLag, plmetrics.Ms(rec.RequestStartNs-rec.IntendedStartNs.V))
		c := *rec
		recs = append(recs, &c)
		return nil
	})
	f.Close()
	if len(lag) == 0 {
		b.Fatal("no records")
	}
	slices.Sort(lag)
	slices.Sort(startLag)
	images, inFlight, inUse := imagesHeld(recs)
	return stageLags{lagP50: plmetrics.Percentile(lag, 50), lagP99: plmetrics.Percentile(lag, 99), lagMax: lag[len(lag)-1],
		startLagP99: plmetrics.Percentile(startLag, 99), heapMiB: max(0, float64(top)-float64(base)) / (1 << 20),
		inFlightMiB: float64(inFlight) / (1 << 20), inUseMiB: float64(inUse) / (1 << 20), sent: float64(len(lag)) / span.Seconds(), imagesPerSec: float64(images) / span.Seconds(),
		errors: float64(r.Errors + r.Cancelled), cpuPerReq: float64(cpu.Microseconds()) / float64(len(lag))}
}

// imagesHeld is, from a stage's records, its images and the most image bytes held at once: in
// flight (the files, credit to end), and in use — each file from when its turn was drawn (its
// session's previous answer's end, or for a first turn prepareLead, 100 ms, before it was due) to its
// request's end, and its base64 in the request body from when the body was built to that end. This
// is history drop's account (the stages here): with keep a session holds its images through its
// think times, and image_bytes counts the history's resent images again.
func imagesHeld(recs []*plmetrics.Record) (images, inFlight, inUse int) {
	type edge struct{ at, flight, use int64 }
	ends := map[string]map[int]int64{}
	for _, r := range recs {
		if r.RequestEndNs.OK {
			if ends[r.ConversationID] == nil {
				ends[r.ConversationID] = map[int]int64{}
			}
			ends[r.ConversationID][r.TurnIndex] = r.RequestEndNs.V
		}
	}
	var edges []edge
	for _, r := range recs {
		if !r.ImageBytes.OK || !r.RequestEndNs.OK {
			continue
		}
		images += r.ImageCount.V
		n, body := int64(r.ImageBytes.V), int64(base64.StdEncoding.EncodedLen(r.ImageBytes.V))
		// A first turn is prepared whole, its body built, prepareLead before it is due; a later turn
		// is drawn at its session's previous answer's end and its body built at its credit.
		drawn, built := r.IntendedStartNs.V-int64(100*time.Millisecond), r.CreditIssuedNs
		if r.TurnIndex == 0 {
			built = drawn
		} else if prev, ok := ends[r.ConversationID][r.TurnIndex-1]; ok {
			drawn = prev
		}
		edges = append(edges, edge{drawn, 0, n}, edge{built, 0, body}, edge{r.CreditIssuedNs, n, 0}, edge{r.RequestEndNs.V, -n, -n - body})
	}
	// At one instant a release goes before a hold: a later turn is drawn at the very end of the
	// request before it, and holding both at once would count an image that is not there.
	slices.SortFunc(edges, func(a, b edge) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.flight+a.use, b.flight+b.use))
	})
	var flight, use int64
	for _, e := range edges {
		flight, use = flight+e.flight, use+e.use
		inFlight, inUse = max(inFlight, int(flight)), max(inUse, int(use))
	}
	return images, inFlight, inUse
}

// liveHeap is the runtime's live heap (reachable at the last collection).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sampleLiveHeap collects and samples the live heap every 250 ms until stop, which returns the
// highest seen. The runtime measures the live heap only at a collection, and at the engine's GOGC
// 400 a stage may run without one: so each sample is a forced collection's, in both variants.
func sampleLiveHeap() (stop func() uint64) {
	var mu sync.Mutex
	var top uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				runtime.GC()
				v := liveHeap()
				mu.Lock()
				top = max(top, v)
				mu.Unlock()
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return top
	}
}
