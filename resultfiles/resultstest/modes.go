package resultstest

import (
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// The stages of the open-loop modes: a scenario with the golden one's workload and any load, and its
// stages as plload writes them.

// ModeScenario parses a scenario with the golden one's workload and the given load and slo/cost
// sections.
func ModeScenario(t testing.TB, load, rest string) *workload.Scenario {
	t.Helper()
	text := `name: modes
seed: 3
target: {base_url: "http://127.0.0.1:8000/v1", model: m}
personas: {count: 2, system_prompt_tokens: 20}
session: {turns: 1, user_input_tokens: 10, max_output_tokens: 5, think_time: 0s}
load:
` + load + rest
	sc, issues := workload.Parse("modes.yaml", []byte(text), workload.LoadOptions{Getenv: func(string) string { return "" }})
	if err := issues.Err(); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return sc
}

// ModeStage is stage i of sc as plload writes it, over one record at 1.5 s (TTFT 100 ms).
func ModeStage(t testing.TB, sc *workload.Scenario, i int) *resultfiles.StageReport {
	t.Helper()
	in := resultfiles.StageInput(sc, i)
	in.T0Ns = metrics.Some(T0)
	s := metrics.NewStage(in)
	s.Add(Record(1.5, 100, 10, "a"))
	return resultfiles.NewStageReport("plload test", sc, i, strings.Repeat("a", 64), s.Summary(), resultfiles.EngineCounts{})
}

// OpenLoopStage is a request_rate stage whose requests went out late: intended at 1.5 s + k, sent
// 40 ms later (k = 0…3), so TTFT from intended is TTFT + 40 ms.
func OpenLoopStage(t testing.TB, slo string) *resultfiles.StageReport {
	t.Helper()
	sc := ModeScenario(t, "  mode: request_rate\n  stages: [{rate: 20, warmup: 1s, duration: 10s}]\n", slo)
	in := resultfiles.StageInput(sc, 0)
	in.T0Ns = metrics.Some(T0)
	s := metrics.NewStage(in)
	for k := range 4 {
		r := Record(1.5+float64(k), 100+float64(10*k), 10, string(rune('a'+k)))
		r.IntendedStartNs = metrics.Some(r.RequestStartNs - 40e6)
		s.Add(r)
	}
	return resultfiles.NewStageReport("plload test", sc, 0, strings.Repeat("a", 64), s.Summary(), resultfiles.EngineCounts{})
}
