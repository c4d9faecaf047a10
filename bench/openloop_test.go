package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/workload"
)

// The open-loop benchmarks (figures in bench/README.md, "Open loop") send on a precomputed schedule
// to a mock in a child process (this test binary re-executed), so the CPU time measured here
// (getrusage of this process) is the client's alone. They take about a minute; run them on purpose:
//
//	PLLOAD_OPENLOOP=1 go test ./bench -run '^$' -bench OpenLoop -benchtime 1x -count 3 -v
//
// PLLOAD_BENCH_MOCK_CHILD=chunks is the chunk-cost benchmark's mock instead (TTFT 200 ms, a chunk
// every 20 ms), and PLLOAD_BENCH_CLIENT one of its clients (chunkcost_test.go).
func TestMain(m *testing.M) {
	switch os.Getenv("PLLOAD_BENCH_MOCK_CHILD") {
	case "1":
		cfg := mock.DefaultConfig()
		cfg.TTFT, cfg.TPS, cfg.PrefillPerToken = 2*time.Millisecond, 2000, 0
		os.Exit(mock.ServeAsChild(cfg))
	case "chunks":
		cfg := mock.DefaultConfig()
		cfg.TTFT, cfg.TPS, cfg.PrefillPerToken = 200*time.Millisecond, 50, 0
		os.Exit(mock.ServeAsChild(cfg))
	}
	if kind := os.Getenv(chunkCostClientEnv); kind != "" {
		os.Exit(chunkCostChild(kind))
	}
	os.Exit(m.Run())
}

// childMock starts the open-loop benchmarks' mock in a child process and returns its base URL.
func childMock(tb testing.TB) string { return childMockEnv(tb, "PLLOAD_BENCH_MOCK_CHILD=1") }

// childMockEnv starts the mock TestMain picks for env in a child process.
func childMockEnv(tb testing.TB, env string) string {
	base, stop, err := mock.StartChild(env)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	return base
}

const openLoopScenario = `name: openloop
seed: 1
target: {base_url: %s, model: m, timeout: 30s}
session: {user_input_tokens: {min: 5, max: 10}, max_output_tokens: 2}
personas: {count: 1, system_prompt_tokens: 5}
%s
load:
  drain_timeout: 10s
%s
`

// openLoopStage runs one stage of text and reports send lag (credit_issued − intended) p50/p99/max,
// start lag (request_start − intended) p99, client CPU per request, and the rate actually sent.
func openLoopStage(b *testing.B, text string, span time.Duration) {
	openLoopStageWith(b, text, span, nil)
}

// openLoopStageWith is openLoopStage with the engine's Config changed by edit (nil: as it is).
func openLoopStageWith(b *testing.B, text string, span time.Duration, edit func(*engine.Config)) {
	sc, w := buildScenario(b, "openloop.yaml", text)
	runtime.GC()
	dir := b.TempDir()
	cpu0 := engine.ProcessCPU()
	cfg := engine.Config{Scenario: sc, Workload: w, Dir: dir}
	if edit != nil {
		edit(&cfg)
	}
	res, err := engine.Run(context.Background(), cfg)
	cpu := engine.ProcessCPU() - cpu0
	if err != nil {
		b.Fatal(err)
	}
	r := res[0]
	var lag, startLag []float64
	f, err := os.Open(filepath.Join(r.Dir, "profile_export.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	metrics.ReadRecords(f, func(rec *metrics.Record) error {
		lag = append(lag, metrics.Ms(rec.CreditIssuedNs-rec.IntendedStartNs.V))
		startLag = append(startLag, metrics.Ms(rec.RequestStartNs-rec.IntendedStartNs.V))
		return nil
	})
	f.Close()
	if len(lag) == 0 {
		b.Fatal("no records")
	}
	slices.Sort(lag)
	slices.Sort(startLag)
	b.ReportMetric(metrics.Percentile(lag, 50), "lag-p50-ms")
	b.ReportMetric(metrics.Percentile(lag, 99), "lag-p99-ms")
	b.ReportMetric(lag[len(lag)-1], "lag-max-ms")
	b.ReportMetric(metrics.Percentile(startLag, 99), "start-lag-p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(lag)), "µs-CPU/req")
	b.ReportMetric(float64(len(lag))/span.Seconds(), "sent-req/s")
	b.ReportMetric(float64(r.Scheduled), "scheduled")
	b.ReportMetric(float64(r.NotStarted), "never-started")
	b.ReportMetric(float64(r.Errors+r.Cancelled), "errors")
}

// buildScenario parses a benchmark's scenario text for a run and builds its workload.
func buildScenario(b *testing.B, name, text string) (*workload.Scenario, *workload.Workload) {
	b.Helper()
	sc, issues := workload.Parse(name, []byte(text), workload.LoadOptions{ForRun: true})
	if err := issues.Err(); err != nil {
		b.Fatal(err)
	}
	w, err := sc.Build()
	if err != nil {
		b.Fatal(err)
	}
	return sc, w
}

// burstyTrace writes a Mooncake trace of n requests in bursts of size requests at one millisecond,
// a burst every gap.
func burstyTrace(b *testing.B, n, size int, gap time.Duration) string {
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, `{"timestamp": %d, "input_length": 8, "output_length": 2, "hash_ids": [%d]}`+"\n", int64(i/size)*gap.Milliseconds(), i)
	}
	path := filepath.Join(b.TempDir(), "bursty.jsonl")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkOpenLoop: (a) replay of a 20,000-request bursty trace (bursts of 20 requests at one
// millisecond every 10 ms: 2,000 req/s for 10 s) at max_in_flight 500; (b) request_rate (Poisson) at
// 1k, 5k and 20k req/s for 5 s, max_in_flight 500, with 2k and 3k between to show where this box
// stops keeping up.
func BenchmarkOpenLoop(b *testing.B) {
	if os.Getenv("PLLOAD_OPENLOOP") != "1" {
		b.Skip("set PLLOAD_OPENLOOP=1 to run the open-loop benchmarks (about a minute)")
	}
	base := childMock(b)
	b.Run("replay_20k_bursty", func(b *testing.B) {
		trace := burstyTrace(b, 20000, 20, 10*time.Millisecond)
		text := fmt.Sprintf(openLoopScenario, base, "workload:\n  trace: {file: "+trace+", format: mooncake}",
			"  mode: replay\n  max_in_flight: 500\n  stages:\n    - {duration: 10s}")
		for b.Loop() {
			openLoopStage(b, text, 10*time.Second)
		}
	})
	for _, rate := range []int{1000, 2000, 3000, 5000, 20000} {
		b.Run(fmt.Sprintf("request_rate_%02dk", rate/1000), func(b *testing.B) {
			text := fmt.Sprintf(openLoopScenario, base, "", fmt.Sprintf("  mode: request_rate\n  max_in_flight: 500\n  stages:\n    - {rate: %d, duration: 5s}", rate))
			for b.Loop() {
				openLoopStage(b, text, 5*time.Second)
			}
		})
	}
}
