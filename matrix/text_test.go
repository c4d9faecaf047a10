package matrix

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// stage is a stage report with the numbers the matrix report reads.
func stage(n int, verdict string, reqPerSec, ttftP95 float64) *resultfiles.StageReport {
	s := &metrics.StageSummary{}
	s.SLO.Verdict = verdict
	s.Throughput.ReqPerSec, s.Throughput.OutTokPerSec, s.Throughput.Requests = reqPerSec, 20*reqPerSec, 100
	s.Goodput.ReqPerSec = metrics.Some(reqPerSec)
	s.TTFT = metrics.Dist{N: 100, P50: ttftP95 / 2, P95: ttftP95, P99: ttftP95 * 1.2}
	s.TPOT = metrics.Dist{N: 100, P50: 5, P95: 6, P99: 7}
	s.ErrorRate = metrics.Some(0.0)
	usd := 2.5 / (20 * reqPerSec * 3600) * 1e6
	s.Cost.USDPer1MOut = &usd
	return &resultfiles.StageReport{Stage: n, Summary: s, Mode: "request_rate", Rate: &resultfiles.StageRate{From: reqPerSec, To: reqPerSec}}
}

// matrixInput is a finished matrix of scenarios/matrix.yaml with two repeats: B meets the SLO at
// mean in both repeats and at peak in one, C is skipped, D absorbed its ramp.
func matrixInput(t *testing.T) Input {
	sc, data := load(t, "../scenarios/matrix.yaml")
	rates, _ := RatesOf(sc, data)
	p := NewPlan(sc, rates, 2)
	a := Outcome{Part: p.Parts[0], Runs: []Run{{Dir: "/r/A/x"}}}
	for i := range p.Parts[0].Stages {
		st := stage(i+1, metrics.SLOPass, float64(1+i%4), 50)
		st.Mode, st.Concurrency, st.Rate = "concurrency", p.Parts[0].Stages[i].Concurrency, nil
		a.Runs[0].Stages = append(a.Runs[0].Stages, st)
	}
	b := Outcome{Part: p.Parts[1], Runs: []Run{{Dir: "/r/B/x", Stages: []*resultfiles.StageReport{
		stage(1, metrics.SLOPass, 8, 60), stage(2, metrics.SLOPass, 16, 120), stage(3, metrics.SLOFail, 19, 300),
		stage(4, metrics.SLOPass, 8.2, 64), stage(5, metrics.SLOFail, 15.5, 170), stage(6, metrics.SLOFail, 18, 350),
	}}}}
	d := stage(1, metrics.SLOFail, 14, 400)
	d.Rate = &resultfiles.StageRate{From: 8, To: 20.8, Over: "10s"}
	d.Summary.Absorb = &metrics.Absorb{WindowS: 2, MinRequests: 5, FirstViolationS: metrics.Some(10.0), AbsorbedS: metrics.Some(16.0), ViolatedWindows: 3,
		Windows: []metrics.AbsorbWindow{{StartS: 10, EndS: 12, Over: []string{"ttft_p95_ms"}}}}
	return Input{Scenario: sc, Plan: p, Dir: "/r", Command: "plload matrix x.yaml", Tool: "plload test",
		Started: time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC), Finished: time.Date(2026, 12, 2, 14, 1, 0, 0, time.UTC),
		Outcomes: []Outcome{a, b, {Part: p.Parts[2]}, {Part: p.Parts[3], Runs: []Run{{Dir: "/r/D/x", Stages: []*resultfiles.StageReport{d}}}}}}
}

// TestTemplateOrder: report.md has the seed's sections in its order, each once, the verdict first.
func TestTemplateOrder(t *testing.T) {
	md := Markdown(matrixInput(t))
	var got []string
	for _, m := range regexp.MustCompile(`(?m)^## (.*)$`).FindAllStringSubmatch(md, -1) {
		got = append(got, strings.TrimSuffix(m[1], " (read this first)"))
	}
	want := []string{"Verdict", "Question", "Workload", "Configuration", "Method", "Results", "Cost", "Limitations", "Reproduce"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sections (-want +got):\n%s\n%s", diff, md)
	}
}

// TestReportText: the operating point is the highest B level met in every repeat (mean, not peak,
// which met it once), numbers are min–max over the repeats, C's skip is a limitation, D's time to
// absorb is stated, and the "never promise" items are in Limitations.
func TestReportText(t *testing.T) {
	in := matrixInput(t)
	md := Markdown(in)
	section := func(name string) string {
		_, rest, _ := strings.Cut(md, "## "+name)
		body, _, _ := strings.Cut(rest, "\n## ")
		return body
	}
	for _, c := range []struct{ section, want string }{
		{"Verdict", "up to mean: 8 req/s, in 2 of 2 repeats: goodput 8.00–8.20 req/s"},
		{"Verdict", "TTFT p95 60–64 ms"},
		{"Verdict", "absorbed 16 s after the ramp began"},
		{"Verdict", "C, replay of the trace: skipped: the scenario names no workload.trace"},
		{"Results", "| peak: 16 req/s | 2 | 1 of 2 | 15.50–16.00 |"},
		{"Results", "| concurrency 8 | 2 | 2 of 2 |"},
		{"Cost", "(160–164 out tok/s × 3600) × 10⁶ = $4.234–4.340"},
		{"Limitations", "Part C (replay of the trace) did not run: the scenario names no workload.trace"},
		{"Limitations", "Throughput at saturation (part A) is not capacity"},
		{"Limitations", "not from a roofline bound"},
		{"Limitations", "No p99 promise beyond what was measured"},
		{"Limitations", "plload's bundled mock"},
		{"Reproduce", "plload run /r/B/x/scenario.resolved.yaml"},
	} {
		if !strings.Contains(section(c.section), c.want) {
			t.Errorf("%s lacks %q:\n%s", c.section, c.want, section(c.section))
		}
	}
	in.Outcomes[1].Failures = []string{"stage 03 failed: no request in its window succeeded"}
	if md := Markdown(in); !strings.Contains(md, "**Part B failed**: stage 03 failed") {
		t.Errorf("a failure of part B is not in the verdict:\n%s", md)
	}
}

// TestScaleEventWithoutASuccess: a part D of which no request succeeded (a server answering 500 to
// everything) has no time to absorb — every window unjudged — and the verdict says so, rather than
// "no window broke a latency limit, nothing to absorb", which reads as a ramp the server met.
func TestScaleEventWithoutASuccess(t *testing.T) {
	in := matrixInput(t)
	d := in.Outcomes[3].Runs[0].Stages[0]
	d.Summary.Requests.InWindow, d.Summary.Requests.Errors = 71, 71
	d.Summary.Absorb = &metrics.Absorb{WindowS: 2, MinRequests: 5, UnjudgedWindows: 2,
		Windows: []metrics.AbsorbWindow{{StartS: 0, EndS: 2, Requests: 35, State: "unjudged"}, {StartS: 2, EndS: 4, Requests: 36, State: "unjudged"}}}
	_, verdict, _ := strings.Cut(Markdown(in), "## Verdict")
	verdict, _, _ = strings.Cut(verdict, "\n## ")
	want := "- D, scale event: a ramp from mean to peak +30 %: no request succeeded, so there is no time to absorb\n"
	if !strings.Contains(verdict, want) || strings.Contains(verdict, "nothing to absorb") {
		t.Errorf("verdict lacks %q:\n%s", want, verdict)
	}
}

// TestLevelsOfReplays: part C runs once per repeat, so each run's stage is one repeat of its level.
func TestLevelsOfReplays(t *testing.T) {
	part := Part{ID: PartC, Points: []Point{{Level: "C replay", Repeat: 1}}, Runs: 2}
	o := Outcome{Part: part, Runs: []Run{{Stages: []*resultfiles.StageReport{stage(1, metrics.SLOPass, 3, 10)}}, {Stages: []*resultfiles.StageReport{stage(1, metrics.SLOFail, 4, 10)}}}}
	levels := o.Levels()
	if len(levels) != 1 || len(levels[0].Stages) != 2 {
		t.Fatalf("levels %+v: want one level of two repeats", levels)
	}
	if met, all := levels[0].Met(); met != 1 || all {
		t.Errorf("met %d (all %v), want 1 of 2", met, all)
	}
}

func TestSpread(t *testing.T) {
	for _, c := range []struct {
		v      []float64
		digits int
		want   string
	}{{nil, 0, "N/A"}, {[]float64{3}, 1, "3.0"}, {[]float64{350, 310, 330}, 0, "310–350"}, {[]float64{1.001, 1.004}, 2, "1.00"}, {[]float64{nan(), 2}, 0, "2"}} {
		if got := Spread(c.v, c.digits); got != c.want {
			t.Errorf("Spread(%v, %d) = %q, want %q", c.v, c.digits, got, c.want)
		}
	}
}

func nan() float64 { return math.NaN() }
