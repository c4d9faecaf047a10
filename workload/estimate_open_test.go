package workload

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestEstimateOpenLoop: request_rate's estimates are the rate's arrivals (a ramp's integral, gamma
// headroom cv·3σ), capped by Little's law at max_in_flight; replay's are the sessions and requests of
// each stage's slice of the trace. (The mock answers in 200 ms + 5 tokens at 1000 tok/s = 0.205 s.)
func TestEstimateOpenLoop(t *testing.T) {
	base := "name: e\nseed: 1\ntarget: {base_url: mock, mock: {ttft: 200ms, tps: 1000}}\npersonas: {count: 1, system_prompt_tokens: 5}\n" +
		"session: {turns: 1, user_input_tokens: 5, max_output_tokens: 5, think_time: 0s}\nload:\n  mode: request_rate\n%s  stages:\n%s"
	cases := []struct {
		name, load, stage            string
		requests, sessions, inFlight float64
	}{
		{"constant", "", "    - {rate: 20, warmup: 1s, duration: 9s}\n", 200, 200 + 3*math.Sqrt(200), 20 * 0.205},
		{"ramp", "", "    - {rate: {from: 0, to: 40, over: 10s}, duration: 20s}\n", 600, 600 + 3*math.Sqrt(600), 30 * 0.205},
		{"gamma", "  arrival: gamma\n  cv: 2\n", "    - {rate: 20, duration: 10s}\n", 200, 200 + 6*math.Sqrt(200), 20 * 0.205},
		{"capped", "  max_in_flight: 2\n", "    - {rate: 100, duration: 10s}\n", 2 * 10 / 0.205, 1000 + 3*math.Sqrt(1000), 2},
	}
	for _, c := range cases {
		s, issues := Parse("e.yaml", []byte(fmt.Sprintf(base, c.load, c.stage)), LoadOptions{})
		if issues.Err() != nil {
			t.Fatal(c.name, issues.Err())
		}
		e := s.EstimateStage(s.Load.Stages[0])
		for _, v := range []struct {
			what      string
			got, want float64
		}{{"requests", e.Requests, c.requests}, {"sessions", e.SessionsNeeded, c.sessions}, {"in flight", e.InFlight, c.inFlight}} {
			if math.Abs(v.got-v.want) > 1e-6*max(1, v.want) {
				t.Errorf("%s: %s %g, want %g", c.name, v.what, v.got, v.want)
			}
		}
	}

	dir := t.TempDir()
	trace := ""
	for i, ms := range []int{0, 0, 0, 400, 900, 1000, 1500, 2600, 3900} {
		trace += fmt.Sprintf(`{"timestamp": %d, "input_length": %d, "output_length": 4, "hash_ids": [%d]}`+"\n", ms, 20+i, i)
	}
	os.WriteFile(filepath.Join(dir, "t.jsonl"), []byte(trace), 0o644)
	path := filepath.Join(dir, "s.yaml")
	os.WriteFile(path, []byte("name: r\nseed: 1\ntarget: {base_url: mock}\nworkload:\n  trace: {file: t.jsonl, format: mooncake, block_tokens: 16}\n"+
		"load:\n  mode: replay\n  time_scale: 0.5\n  stages:\n    - {warmup: 200ms, duration: 300ms}\n    - {duration: 1s}\n"), 0o644)
	s, issues := Load(path, LoadOptions{})
	if issues.Err() != nil {
		t.Fatal(issues.Err())
	}
	// × 0.5: 0, 0, 0, 200, 450 | 500, 750, 1300 | 1950 (past both stages).
	for i, want := range []float64{5, 3} {
		if e := s.EstimateStage(s.Load.Stages[i]); e.SessionsNeeded != want || e.Requests != want {
			t.Errorf("replay stage %d: %g sessions, %g requests; its slice of the trace holds %g", i+1, e.SessionsNeeded, e.Requests, want)
		}
	}
}

// TestEstimateArrivalRateInFlight: an arrival_rate session holds a connection only while its turn
// streams, so the connections expected at once are the request rate × one request's time (Little's
// law), far fewer than max_concurrency's sessions when they think between turns. 1,000 sessions open
// (max_concurrency: 20/s would keep 1,816 open for their 90.8 s) of 4 turns of 0.205 s and 30 s think: each asks every
// 0.205 + 30 × 3/4 s, so 1,000 ÷ 22.705 req/s, × 0.205 s ≈ 9.03 in flight.
func TestEstimateArrivalRateInFlight(t *testing.T) {
	text := "name: e\nseed: 1\ntarget: {base_url: mock, mock: {ttft: 200ms, tps: 1000}}\npersonas: {count: 1, system_prompt_tokens: 5}\n" +
		"session: {turns: 4, user_input_tokens: 5, max_output_tokens: 5, think_time: {min: 20s, max: 40s}}\nload:\n  mode: arrival_rate\n" +
		"  stages:\n    - {sessions_per_sec: 20, max_concurrency: 1000, duration: 10m}\n"
	s, issues := Parse("e.yaml", []byte(text), LoadOptions{})
	if issues.Err() != nil {
		t.Fatal(issues.Err())
	}
	e := s.EstimateStage(s.Load.Stages[0])
	if want := 1000 / (0.205 + 30*3.0/4) * 0.205; math.Abs(e.InFlight-want) > 1e-9 {
		t.Errorf("in flight %g, want %g", e.InFlight, want)
	}
}
