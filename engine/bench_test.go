package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	rtmetrics "runtime/metrics"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plload/plload/live"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/workload"
)

// The engine benchmarks load a mock running in a child process (this test binary re-executed with
// PLLOAD_ENGINE_MOCK_CHILD=1), so this process's CPU time and heap are the client's alone.
func TestMain(m *testing.M) {
	if os.Getenv("PLLOAD_ENGINE_MOCK_CHILD") == "1" {
		cfg := mock.DefaultConfig()
		cfg.TTFT, cfg.TPS = 200*time.Millisecond, 50
		os.Exit(mock.ServeAsChild(cfg))
	}
	os.Exit(m.Run())
}

// childMock starts the mock in a child process and returns its base URL.
func childMock(tb testing.TB) string {
	base, stop, err := mock.StartChild("PLLOAD_ENGINE_MOCK_CHILD=1")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	return base
}

// chatSessions are the long chat sessions of the benchmarks and the soak: 10–20 turns, 1–3 s think.
const chatSessions = `  turns: {min: 10, max: 20}
  user_input_tokens: {min: 20, max: 60}
  max_output_tokens: {min: 50, max: 100}
  think_time: {min: 1s, max: 3s}`

// every calls fn every d on its own goroutine until the returned stop is called (stop waits for it).
func every(d time.Duration, fn func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				fn()
			}
		}
	}()
	return func() { close(quit); <-done }
}

// loadStage runs one concurrency stage of long chat sessions (TTFT 200 ms, 20 ms between chunks,
// 1–3 s think time) and reports client CPU per streamed chunk and heap per open session.
// loadStage runs one stage and returns its result, the client CPU per streamed chunk, and per open
// session the peak heap in use (garbage included: the engine runs at GOGC 400), the peak live heap
// (what the last collection found reachable) and the peak goroutine stack memory.
func loadStage(tb testing.TB, base string, concurrency int, duration time.Duration, watched ...bool) (r StageResult, perChunk time.Duration, heapPerSession, livePerSession, stackPerSession float64) {
	text := scenarioYAML(base, chatSessions, fmt.Sprintf("  mode: concurrency\n  drain_timeout: 10s\n  stages:\n    - {concurrency: %d, duration: %s}", concurrency, workload.Duration(duration)))
	text = strings.Replace(text, "timeout: 10s", "timeout: 30s", 1)
	sc, issues := workload.Parse("bench.yaml", []byte(text), workload.LoadOptions{Getenv: testEnv})
	if err := issues.Err(); err != nil {
		tb.Fatal(err)
	}
	w, err := sc.Build()
	if err != nil {
		tb.Fatal(err)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	heap := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	rtmetrics.Read(heap)
	liveBefore, stacksBefore, peakLive, peakStacks := heap[0].Value.Uint64(), heap[1].Value.Uint64(), uint64(0), uint64(0)
	var peak uint64
	stopSampling := every(500*time.Millisecond, func() { // the heap while the sessions are open
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapInuse)
		rtmetrics.Read(heap)
		peakLive, peakStacks = max(peakLive, heap[0].Value.Uint64()), max(peakStacks, heap[1].Value.Uint64())
	})
	cpu0 := ProcessCPU()
	dir := tb.TempDir()
	cfg := Config{Scenario: sc, Workload: w, Dir: dir, Getenv: testEnv}
	if len(watched) > 0 && watched[0] { // everything on: live progress state and server scraping
		cfg.Live = live.NewProgress(1)
		cfg.ServerMetricsURL = strings.TrimSuffix(base, "/v1") + "/metrics"
		// What the progress display and a Prometheus scrape do, 4 times a second.
		defer every(250*time.Millisecond, func() { cfg.Live.Snapshot(); cfg.Live.Snapshots() })()
	}
	res, err := Run(context.Background(), cfg)
	cpu := ProcessCPU() - cpu0
	stopSampling()
	if err != nil {
		tb.Fatal(err)
	}
	r = res[0]
	var ttft, gaps []float64
	if f, err := os.Open(filepath.Join(r.Dir, "profile_export.jsonl")); err == nil {
		metrics.ReadRecords(f, func(rec *metrics.Record) error {
			if rec.OK() {
				ttft = append(ttft, rec.TTFT.V)
				gaps = append(gaps, rec.InterChunkLatency...)
			}
			return nil
		})
		f.Close()
	}
	sort.Float64s(ttft)
	sort.Float64s(gaps)
	tb.Logf("TTFT p50/p99 %.3f/%.3f ms, chunk gap p50/p99 %.3f/%.3f ms", metrics.Percentile(ttft, 50), metrics.Percentile(ttft, 99),
		metrics.Percentile(gaps, 50), metrics.Percentile(gaps, 99))
	if r.Errors+r.Cancelled > 0 { // say what went wrong
		kinds := map[string]int{}
		f, _ := os.Open(filepath.Join(r.Dir, "profile_export.jsonl"))
		metrics.ReadRecords(f, func(rec *metrics.Record) error {
			if rec.Error != nil {
				kinds[rec.Error.Type+": "+rec.Error.Message]++
			}
			return nil
		})
		f.Close()
		tb.Logf("errors by kind: %v", kinds)
	}
	if chunks := r.OutTokens; chunks > 0 {
		perChunk = cpu / time.Duration(chunks)
	}
	per := func(peak, before uint64) float64 { return float64(peak-min(peak, before)) / float64(concurrency) }
	return r, perChunk, per(peak, before.HeapInuse), per(peakLive, liveBefore), per(peakStacks, stacksBefore)
}

// BenchmarkEngine1000Sessions: 1,000 concurrent sessions for 20 s against a mock in another process,
// plain and with everything watching the run (live state read 4×/s, server metrics scraped each
// second). Compare the two: watching must not slow the request path.
//
//	go test ./engine -run '^$' -bench Engine1000 -benchtime 1x
func BenchmarkEngine1000Sessions(b *testing.B) {
	base := childMock(b)
	b.Run("plain", func(b *testing.B) { engineBench(b, base, false) })
	b.Run("watched", func(b *testing.B) { engineBench(b, base, true) })
}

func engineBench(b *testing.B, base string, watched bool) {
	for b.Loop() {
		r, perChunk, heapPerSession, livePerSession, stackPerSession := loadStage(b, base, 1000, 20*time.Second, watched)
		b.ReportMetric(float64(perChunk.Nanoseconds())/1000, "µs-CPU/chunk")
		b.ReportMetric(heapPerSession/1024, "KiB-heap/session")
		b.ReportMetric(livePerSession/1024, "KiB-live/session")
		b.ReportMetric(stackPerSession/1024, "KiB-stacks/session")
		b.ReportMetric(float64(r.OutTokens), "chunks")
		b.ReportMetric(float64(r.Errors+r.Cancelled), "errors")
	}
}

// BenchmarkSessionsPerShard: how much CPU one shard (one plload process) spends on N chat sessions
// (10–20 turns, 1–3 s think, 50–100 tokens at 20 ms gaps) over 20 s: the cores it keeps busy and the
// millicores per session, which size a shard's CPU request (plload k8s) and say how many sessions a
// box carries before it becomes the bottleneck.
//
//	go test ./engine -run '^$' -bench SessionsPerShard -benchtime 1x -count 3
func BenchmarkSessionsPerShard(b *testing.B) {
	base := childMock(b)
	const span = 20 * time.Second
	for _, n := range []int{250, 1000, 4000} {
		b.Run(fmt.Sprintf("sessions_%d", n), func(b *testing.B) {
			for b.Loop() {
				r, perChunk, _, live, stacks := loadStage(b, base, n, span)
				cores := float64(perChunk*time.Duration(r.OutTokens)) / float64(span)
				b.ReportMetric(cores, "client-cores")
				b.ReportMetric(1000*cores/float64(n), "mcores/session")
				b.ReportMetric((live+stacks)/1024, "KiB/session")
				b.ReportMetric(float64(r.Errors+r.Cancelled), "errors")
			}
		})
	}
}

// TestLargestCleanConcurrency runs 60 s stages at rising concurrency, up to the first with client
// errors, and fails when the largest clean one is below cleanConcurrencyFloor (PLLOAD_CLEAN_FLOOR
// overrides it) or no level was clean. It takes minutes; run it on purpose:
//
//	PLLOAD_LONG=1 go test ./engine -run LargestClean -v -timeout 30m
func TestLargestCleanConcurrency(t *testing.T) {
	if os.Getenv("PLLOAD_LONG") != "1" {
		t.Skip("set PLLOAD_LONG=1 to run the 60-second ladder")
	}
	steps, floor, err := cleanLadderConfig(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	base := childMock(t)
	best := 0
	for _, n := range steps {
		r, perChunk, heap, live, stacks := loadStage(t, base, n, 60*time.Second)
		t.Logf("%5d sessions for 60 s: %d requests, %d errors, %d cancelled, %d chunks, %.1f µs CPU/chunk, %.1f KiB heap/session (%.1f KiB live, %.1f KiB stacks)",
			n, r.Records, r.Errors, r.Cancelled, r.OutTokens, float64(perChunk.Nanoseconds())/1000, heap/1024, live/1024, stacks/1024)
		if r.Errors+r.Cancelled > 0 {
			break
		}
		best = n
	}
	t.Logf("largest concurrency with zero client errors over 60 s: %d (floor %d)", best, floor)
	if err := checkLargestClean(best, floor); err != nil {
		t.Error(err)
	}
}

// cleanConcurrencyFloor is the least concurrency that must run 60 s without client errors on the
// development machine (2 shared cores, mock beside the client): it ran 4,000 clean; 1,000 leaves room
// for a noisy neighbour, and falling under it means the engine lost a factor of four.
const cleanConcurrencyFloor = 1000

// cleanLadderConfig reads the ladder (PLLOAD_LADDER, rising positive numbers) and the floor
// (PLLOAD_CLEAN_FLOOR). A ladder whose top is under the floor could never pass, so it is an error.
func cleanLadderConfig(getenv func(string) string) (steps []int, floor int, err error) {
	steps, floor = []int{500, 1000, 2000, 4000, 8000}, cleanConcurrencyFloor
	if s := getenv("PLLOAD_LADDER"); s != "" {
		steps = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || (len(steps) > 0 && n <= steps[len(steps)-1]) {
				return nil, 0, fmt.Errorf("PLLOAD_LADDER=%q: %q: accepted: rising positive whole numbers separated by commas, such as 1000,2000,4000", s, f)
			}
			steps = append(steps, n)
		}
	}
	if s := getenv("PLLOAD_CLEAN_FLOOR"); s != "" {
		if floor, err = strconv.Atoi(s); err != nil || floor < 1 {
			return nil, 0, fmt.Errorf("PLLOAD_CLEAN_FLOOR=%q: accepted: a positive whole number of sessions", s)
		}
	}
	if top := steps[len(steps)-1]; top < floor {
		return nil, 0, fmt.Errorf("the ladder tops at %d sessions, under the floor of %d: it could never pass (set PLLOAD_CLEAN_FLOOR or a higher PLLOAD_LADDER)", top, floor)
	}
	return steps, floor, nil
}

// checkLargestClean is the ladder's verdict: some level clean, and the largest at or over the floor.
func checkLargestClean(best, floor int) error {
	switch {
	case best == 0:
		return fmt.Errorf("no concurrency ran 60 s without client errors (floor %d): see the errors by kind above", floor)
	case best < floor:
		return fmt.Errorf("the largest clean concurrency is %d, under the floor of %d", best, floor)
	}
	return nil
}

// TestLargestCleanVerdict holds the long test's verdict and configuration to what they must refuse;
// it runs always.
func TestLargestCleanVerdict(t *testing.T) {
	verdicts := []struct {
		best, floor int
		ok          bool
	}{{4000, 1000, true}, {1000, 1000, true}, {500, 1000, false}, {0, 1000, false}, {0, 1, false}}
	for _, c := range verdicts {
		if err := checkLargestClean(c.best, c.floor); (err == nil) != c.ok {
			t.Errorf("best %d, floor %d: %v, want ok %v", c.best, c.floor, err, c.ok)
		}
	}
	configs := []struct {
		ladder, floor string
		steps         []int
		wantFloor     int
		err           string
	}{
		{"", "", []int{500, 1000, 2000, 4000, 8000}, cleanConcurrencyFloor, ""},
		{"1000, 2000,4000", "", []int{1000, 2000, 4000}, cleanConcurrencyFloor, ""},
		{"50,100", "100", []int{50, 100}, 100, ""},
		{"50,100", "", nil, 0, "tops at 100 sessions, under the floor of 1000"},
		{"1000,x", "", nil, 0, `"x": accepted: rising positive`},
		{"2000,1000", "", nil, 0, `"1000": accepted: rising positive`},
		{"", "lots", nil, 0, `PLLOAD_CLEAN_FLOOR="lots"`},
	}
	for _, c := range configs {
		env := map[string]string{"PLLOAD_LADDER": c.ladder, "PLLOAD_CLEAN_FLOOR": c.floor}
		steps, floor, err := cleanLadderConfig(func(k string) string { return env[k] })
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ladder %q floor %q: error %v, want one containing %q", c.ladder, c.floor, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(steps, c.steps) || floor != c.wantFloor {
			t.Errorf("ladder %q floor %q: %v %d %v, want %v %d", c.ladder, c.floor, steps, floor, err, c.steps, c.wantFloor)
		}
	}
}
