package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/mock"
)

// longPromptTrace writes a Mooncake trace shaped like the published conversation trace's busy
// minutes: about 3 requests/s with lognormal prompts (median ~10k tokens, at most 87k), and every
// burstEvery a burst of 16 requests at one millisecond, each up to 87k tokens.
func longPromptTrace(b *testing.B, span, burstEvery time.Duration) string {
	r := rand.New(rand.NewPCG(37, 37))
	var sb strings.Builder
	next := int64(1 << 20)
	line := func(ms int64, tokens int) {
		blocks := (tokens + 511) / 512
		ids := make([]string, blocks)
		for k := range ids {
			ids[k] = fmt.Sprint(next)
			next++
		}
		fmt.Fprintf(&sb, `{"timestamp": %d, "input_length": %d, "output_length": 16, "hash_ids": [%s]}`+"\n", ms, tokens, strings.Join(ids, ","))
	}
	length := func() int { return min(87000, max(600, int(10000*r.ExpFloat64()))) }
	nextBurst := burstEvery / 2
	for t := time.Duration(0); t < span; t += time.Duration(r.ExpFloat64() * float64(time.Second) / 3) {
		if t >= nextBurst {
			for k := range 16 {
				line(nextBurst.Milliseconds(), 87000-k*3000)
			}
			nextBurst += burstEvery
		}
		line(t.Milliseconds(), length())
	}
	path := filepath.Join(b.TempDir(), "long-bursts.jsonl")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkReplayLongPromptBursts: issue 37's trace — bursts of 16 requests of up to 87k tokens in
// one millisecond among ~3 requests/s — replayed at time_scale 1 against the mock in a child process,
// sent as the previous release did (each request built when due) and as now (prepared ahead), side
// by side in one run. lag-p99-ms must stay well inside a valid replay's 10 ms. About a minute:
//
//	PLLOAD_OPENLOOP=1 go test ./bench -run '^$' -bench ReplayLongPromptBursts -benchtime 1x -count 3 -v
func BenchmarkReplayLongPromptBursts(b *testing.B) {
	if os.Getenv("PLLOAD_OPENLOOP") != "1" {
		b.Skip("set PLLOAD_OPENLOOP=1 to run the open-loop benchmarks (about a minute)")
	}
	base := childMock(b)
	const span = 20 * time.Second
	trace := longPromptTrace(b, span, 4*time.Second)
	text := fmt.Sprintf(openLoopScenario, base, "workload:\n  trace: {file: "+trace+", format: mooncake, block_tokens: 512}",
		"  mode: replay\n  max_in_flight: 1000\n  stages:\n    - {duration: 20s}")
	for _, c := range []struct {
		name string
		edit func(*engine.Config)
	}{
		{"built_when_due", func(c *engine.Config) { c.NoPrepareAhead = true }},
		{"prepared_ahead", nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				openLoopStageWith(b, text, span, c.edit)
			}
		})
	}
}

// BenchmarkReplayLongPromptBurstsInProcess replays the same trace, prepared ahead, against the mock
// in plload's own process, as a scenario's base_url: mock runs it: the mock preparing requests on
// every core (as before issue 37's fix), and sharing the process (mock.Config.SharesProcess, what
// the runner sets), side by side in one run. About a minute:
//
//	PLLOAD_OPENLOOP=1 go test ./bench -run '^$' -bench ReplayLongPromptBurstsInProcess -benchtime 1x -count 3 -v
func BenchmarkReplayLongPromptBurstsInProcess(b *testing.B) {
	if os.Getenv("PLLOAD_OPENLOOP") != "1" {
		b.Skip("set PLLOAD_OPENLOOP=1 to run the open-loop benchmarks (about a minute)")
	}
	const span = 20 * time.Second
	trace := longPromptTrace(b, span, 4*time.Second)
	for _, c := range []struct {
		name   string
		shares bool
	}{{"mock_on_every_core", false}, {"mock_shares_process", true}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := mock.DefaultConfig()
			cfg.Model, cfg.TTFT, cfg.TPS, cfg.SharesProcess = "m", 200*time.Millisecond, 200, c.shares
			m, err := mock.Start(cfg, "")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { m.Close(context.Background()) })
			text := fmt.Sprintf(openLoopScenario, m.BaseURL(), "workload:\n  trace: {file: "+trace+", format: mooncake, block_tokens: 512}",
				"  mode: replay\n  max_in_flight: 1000\n  stages:\n    - {duration: 20s}")
			for b.Loop() {
				openLoopStage(b, text, span)
			}
		})
	}
}

// growingBurstsTrace writes a Mooncake trace of bursts that double, 8 to 512 requests at one
// millisecond every 300 ms: each burst needs more connections than the pool kept from the last, as a
// replay's first busy seconds do.
func growingBurstsTrace(b *testing.B) string {
	var sb strings.Builder
	id := 0
	for k, size := 0, 8; size <= 512; k, size = k+1, 2*size {
		for range size {
			fmt.Fprintf(&sb, `{"timestamp": %d, "input_length": 8, "output_length": 2, "hash_ids": [%d]}`+"\n", 100+300*k, id)
			id++
		}
	}
	path := filepath.Join(b.TempDir(), "growing-bursts.jsonl")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkReplayBurstConnections: bursts that each need new connections (8 to 512 requests at one
// instant), prepared ahead, sent with each arrival dialing its connection when due (before) and with
// the pool opening connections for prepared arrivals ahead (now), side by side in one run, against
// the mock in a child process. About 20 s:
//
//	PLLOAD_OPENLOOP=1 go test ./bench -run '^$' -bench ReplayBurstConnections -benchtime 1x -count 3 -v
func BenchmarkReplayBurstConnections(b *testing.B) {
	if os.Getenv("PLLOAD_OPENLOOP") != "1" {
		b.Skip("set PLLOAD_OPENLOOP=1 to run the open-loop benchmarks")
	}
	base := childMock(b)
	trace := growingBurstsTrace(b)
	const span = 2500 * time.Millisecond
	text := fmt.Sprintf(openLoopScenario, base, "workload:\n  trace: {file: "+trace+", format: mooncake, block_tokens: 16}",
		"  mode: replay\n  max_in_flight: 1000\n  stages:\n    - {duration: 2500ms}")
	for _, c := range []struct {
		name string
		edit func(*engine.Config)
	}{
		{"dial_when_due", func(c *engine.Config) { c.NoConnAhead = true }},
		{"connection_opened_ahead", nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				openLoopStageWith(b, text, span, c.edit)
			}
		})
	}
}
