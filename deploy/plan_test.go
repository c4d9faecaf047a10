package deploy

import (
	"strings"
	"testing"

	"github.com/plload/plload/workload"
)

const scenarioHead = `name: t
target: {base_url: mock, mock: {ttft: 100ms, tps: 100}}
personas: {count: 2, system_prompt_tokens: {min: 20, max: 40}}
`

// TestPeakStreams: the streams a run has streaming at once size a shard's CPU and its busy memory;
// the sessions it holds open, thinking ones included, the rest of its memory.
func TestPeakStreams(t *testing.T) {
	cases := []struct {
		name, body        string
		streams, sessions int
	}{
		{"concurrency: the largest stage", `session: {user_input_tokens: {min: 5, max: 10}, turns: {min: 1, max: 1}, think_time: {min: 1s, max: 1s}, max_output_tokens: {min: 40, max: 40}}
load: {mode: concurrency, stages: [{concurrency: 30, duration: 5s}, {concurrency: 70, duration: 5s}, {concurrency: 10, duration: 5s}]}
`, 70, 70},
		// One request takes 0.1 s + 40 tokens ÷ 100 tok/s = 0.5 s: 100 req/s hold 50 in flight.
		{"request_rate: Little's law", `session: {user_input_tokens: {min: 5, max: 10}, max_output_tokens: {min: 40, max: 40}}
load: {mode: request_rate, stages: [{rate: 100, duration: 5s}]}
`, 50, 50},
		{"request_rate: capped by max_in_flight", `session: {user_input_tokens: {min: 5, max: 10}, max_output_tokens: {min: 40, max: 40}}
load: {mode: request_rate, max_in_flight: 20, stages: [{rate: 100, duration: 5s}]}
`, 20, 20},
		{"request_rate: a low rate is not sized as the default cap", `session: {user_input_tokens: {min: 5, max: 10}, max_output_tokens: {min: 40, max: 40}}
load: {mode: request_rate, stages: [{rate: 1, duration: 5s}]}
`, 1, 1},
		// 2 sessions/s of 3 turns (0.5 s each) and 2 think times of 1 s: 6 req/s hold 3 in flight,
		// and each session's 3.5 s hold 7 open.
		{"request_rate: multi-turn sessions", `session: {user_input_tokens: {min: 5, max: 10}, turns: {min: 3, max: 3}, max_output_tokens: {min: 40, max: 40}, think_time: {min: 1s, max: 1s}}
load: {mode: request_rate, stages: [{rate: 2, duration: 5s}]}
`, 3, 7},
		// 5 open (the cap), each asking every 0.5 + 1 × 2/3 s: 4.29 req/s, 2.14 in flight.
		{"arrival_rate: capped by max_concurrency", `session: {user_input_tokens: {min: 5, max: 10}, turns: {min: 3, max: 3}, max_output_tokens: {min: 40, max: 40}, think_time: {min: 1s, max: 1s}}
load: {mode: arrival_rate, stages: [{sessions_per_sec: 10, max_concurrency: 5, duration: 5s}]}
`, 3, 5},
		// A session lasts 3 × 0.5 s + 2 × 1 s = 3.5 s: 2 per second hold 7 open, 6 req/s, 3 in flight.
		{"arrival_rate: Little's law under the cap", `session: {user_input_tokens: {min: 5, max: 10}, turns: {min: 3, max: 3}, max_output_tokens: {min: 40, max: 40}, think_time: {min: 1s, max: 1s}}
load: {mode: arrival_rate, stages: [{sessions_per_sec: 2, max_concurrency: 100, duration: 5s}]}
`, 3, 7},
		// 100,000 sessions thinking 60–120 s between 0.5 s turns, each asking every 0.5 + 90 × 29/30 s:
		// 1,143 req/s, 572 streaming at once.
		{"arrival_rate: thinking sessions", `session: {user_input_tokens: {min: 5, max: 10}, turns: 30, max_output_tokens: {min: 40, max: 40}, think_time: {min: 60s, max: 120s}}
load: {mode: arrival_rate, stages: [{sessions_per_sec: 1000, max_concurrency: 100000, duration: 10m}]}
`, 572, 100000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc, issues := workload.Parse("t.yaml", []byte(scenarioHead+c.body), workload.LoadOptions{})
			if err := issues.Err(); err != nil {
				t.Fatal(err)
			}
			if got := PeakStreams(sc); got != c.streams {
				t.Errorf("PeakStreams = %d, want %d", got, c.streams)
			}
			if got := PeakSessions(sc); got != c.sessions {
				t.Errorf("PeakSessions = %d, want %d", got, c.sessions)
			}
		})
	}
}

// TestSizeShardCountsThinkingSessions: thinking sessions add memory at 48 KiB each and no CPU.
func TestSizeShardCountsThinkingSessions(t *testing.T) {
	busy := SizeShard(100, 100, 50)
	idle := SizeShard(100, 10100, 50)
	if idle.CPUMillicores != busy.CPUMillicores {
		t.Errorf("CPU %dm with 10,000 thinking sessions more, %dm without", idle.CPUMillicores, busy.CPUMillicores)
	}
	if got, want := idle.MemoryMiB-busy.MemoryMiB, int64(10000*48/1024); got < want || got > want+1 {
		t.Errorf("10,000 thinking sessions add %d Mi, want %d", got, want)
	}
}

func TestDNSName(t *testing.T) {
	cases := map[string]string{
		"smoke":                   "plload-smoke",
		"Chat_Peak.v2":            "plload-chat-peak-v2",
		"--x--":                   "plload-x",
		strings.Repeat("a", 80):   "plload-" + strings.Repeat("a", maxNameLen-len("plload-")),
		strings.Repeat("ab-", 20): strings.TrimRight(("plload-" + strings.Repeat("ab-", 20))[:maxNameLen], "-"),
	}
	for in, want := range cases {
		got := DNSName(in)
		if got != want || !nameRE.MatchString(got) || len(got) > maxNameLen {
			t.Errorf("DNSName(%q) = %q, want %q (a label of at most %d)", in, got, want, maxNameLen)
		}
	}
}

// TestNewPlanRefusesOneShard: one shard is no sharded run (plload merge refuses it), so both
// targets refuse it at generation, saying what to run instead; two is the least.
func TestNewPlanRefusesOneShard(t *testing.T) {
	sc, issues := workload.Parse("t.yaml", []byte(scenarioHead+`session: {user_input_tokens: {min: 5, max: 10}, turns: 1, think_time: {min: 1s, max: 1s}, max_output_tokens: {min: 40, max: 40}}
load: {mode: concurrency, stages: [{concurrency: 4, duration: 5s}]}
`), workload.LoadOptions{})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{-1, 0, 1, MaxShards + 1} {
		_, err := NewPlan(sc, Options{Shards: n})
		if err == nil || !strings.Contains(err.Error(), "--shards") {
			t.Errorf("--shards %d: %v, want an error naming --shards", n, err)
		}
		if n == 1 && (err == nil || !strings.Contains(err.Error(), "plload run")) {
			t.Errorf("--shards 1: %v, want it to say to use plload run", err)
		}
	}
	for _, n := range []int{2, MaxShards} {
		if _, err := NewPlan(sc, Options{Shards: n}); err != nil {
			t.Errorf("--shards %d: %v", n, err)
		}
	}
}
