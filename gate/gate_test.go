package gate

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/resultfiles/resultstest"
)

func TestParseRule(t *testing.T) {
	good := map[string]Rule{
		"ttft_p95 < 500ms":         {Scope: ScopeDefault, Metric: "ttft_p95", Op: "<", Value: 500},
		"stage 2: error_rate < 1%": {Scope: "stage", Stage: 2, Metric: "error_rate", Op: "<", Value: 0.01},
		"all: itl_p95 <= 50ms":     {Scope: "all", Metric: "itl_p95", Op: "<=", Value: 50},
		"slo == PASS":              {Scope: ScopeDefault, Metric: "slo", Op: "==", Word: "PASS"},
		"usd_per_1m_out < 0.40":    {Scope: ScopeDefault, Metric: "usd_per_1m_out", Op: "<", Value: 0.4},
		"goodput > 10/s":           {Scope: ScopeDefault, Metric: "goodput", Op: ">", Value: 10},
		"headline: ttft_p95 < 1s":  {Scope: ScopeHeadline, Metric: "ttft_p95", Op: "<", Value: 1000},
	}
	for text, want := range good {
		got, err := ParseRule(text)
		want.Text = text
		if err != nil || got != want {
			t.Errorf("%q: %+v %v, want %+v", text, got, err, want)
		}
	}
	bad := map[string]string{
		"ttft_p96 < 500ms":     `unknown metric "ttft_p96"`,
		"ttft_p95 500ms":       "accepted: [stage N:|headline:|all:] METRIC OP VALUE",
		"ttft_p95 < fast":      "accepted: a duration such as 500ms",
		"slo < PASS":           "slo takes == or != and PASS, FAIL or N/A",
		"goodput > lots":       "accepted: a number",
		"stage x: slo == PASS": "accepted: [stage N:|headline:|all:]",
	}
	for text, want := range bad {
		if _, err := ParseRule(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

func TestEvaluateThresholds(t *testing.T) {
	_, stages := resultstest.GoldenStages(t)
	rules := func(texts ...string) []Rule {
		var out []Rule
		for _, s := range texts {
			r, err := ParseRule(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	// The headline is stage 1: TTFT p95 157 ms, SLO PASS, $138.9 per 1M out.
	checks := Evaluate(rules("ttft_p95 < 200ms", "slo == PASS", "stage 2: error_rate < 1%", "all: itl_p95 < 50ms", "usd_per_1m_out < 100", "stage 9: slo == PASS"), stages)
	want := []string{"pass", "pass", "fail", "pass", "pass", "fail", "fail"}
	if len(checks) != len(want) {
		t.Fatalf("%d checks: %+v", len(checks), checks)
	}
	for i, c := range checks {
		if c.Status != want[i] {
			t.Errorf("check %d %s: %s (%s), want %s", i, c.Name, c.Status, c.Message, want[i])
		}
	}
	if GatePassed(checks) {
		t.Fatal("a failing check must fail the gate")
	}
}

func samplesOf(n int, scale float64, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, n)
	for i := range out {
		out[i] = scale * (50 + 10*r.NormFloat64())
	}
	return out
}

// ttftSeries serves fixed TTFT samples for each run.
func ttftSeries(base, cand []float64) Samples {
	return func(run string, _ *resultfiles.StageReport) (*metrics.StageSeries, error) {
		if run == "baseline" {
			return &metrics.StageSeries{TTFT: base}, nil
		}
		return &metrics.StageSeries{TTFT: cand}, nil
	}
}

func TestRegressionsAreNoiseAware(t *testing.T) {
	_, base := resultstest.GoldenStages(t)
	_, cand := resultstest.GoldenStages(t)
	tol := Tolerances{"ttft_p95": 0.10}
	run := func(b, c []float64) Check {
		checks := Regressions(base[:1], cand[:1], tol, ttftSeries(b, c))
		if len(checks) != 1 {
			t.Fatalf("%+v", checks)
		}
		return checks[0]
	}
	if c := run(samplesOf(500, 1, 1), samplesOf(500, 1, 2)); c.Status != "pass" || c.Interval == nil {
		t.Fatalf("same distribution: %+v", c)
	}
	if c := run(samplesOf(500, 1, 1), samplesOf(500, 1.3, 2)); c.Status != "fail" || c.Interval[0] <= 0.10 {
		t.Fatalf("30%% slower: %+v", c)
	}
	if c := run(samplesOf(500, 1, 1), samplesOf(500, 1.1, 2)); c.Status != "inconclusive" || !strings.Contains(c.Message, "too thin") {
		t.Fatalf("right at the tolerance: %+v", c)
	}
	if c := run(samplesOf(10, 1, 1), samplesOf(10, 2, 2)); c.Status != "inconclusive" {
		t.Fatalf("10 samples: %+v", c)
	}
	// A client short of CPU in either run decides nothing, either way.
	cand[0].Injector.RunQueueWaitPercent = metrics.Some(30.0)
	if c := run(samplesOf(500, 1, 1), samplesOf(500, 1.3, 2)); c.Status != "inconclusive" || !strings.Contains(c.Message, "client was strained in the candidate run (injector threads waited for a CPU: 0.30 threads at a time") {
		t.Fatalf("strained candidate: %+v", c)
	}
	cand[0].Injector.RunQueueWaitPercent = metrics.Opt[float64]{}
	base[0].Injector.CPUPercent, base[0].Injector.Cores = 190, 2
	if c := run(samplesOf(500, 1, 1), samplesOf(500, 1, 2)); c.Status != "inconclusive" || !strings.Contains(c.Message, "strained in the baseline run") {
		t.Fatalf("strained baseline: %+v", c)
	}
}

// TestRegressionFalseAlarmRate: over 30 seeded pairs of right-skewed latency samples (lognormal,
// 500 requests a side), the same distribution never fails the gate and one 30 % slower nearly always
// does. Seeded, so it cannot flake; the real-run version is TestGateHasNoFalseAlarms (PLLOAD_LONG).
func TestRegressionFalseAlarmRate(t *testing.T) {
	_, base := resultstest.GoldenStages(t)
	_, cand := resultstest.GoldenStages(t)
	lognormal := func(n int, scale float64, seed uint64) []float64 {
		r := rand.New(rand.NewPCG(seed, 7))
		out := make([]float64, n)
		for i := range out {
			out[i] = scale * 50 * math.Exp(0.4*r.NormFloat64())
		}
		return out
	}
	falseAlarms, caught := 0, 0
	for i := range uint64(30) {
		for _, scale := range []float64{1, 1.3} {
			bs, cs := lognormal(500, 1, 2*i), lognormal(500, scale, 2*i+1)
			checks := Regressions(base[:1], cand[:1], Tolerances{"ttft_p95": 0.10}, ttftSeries(bs, cs))
			failed := checks[0].Status == "fail"
			if scale == 1 && failed {
				falseAlarms++
			}
			if scale > 1 && failed {
				caught++
			}
		}
	}
	t.Logf("same distribution: %d/30 false alarms; 30%% slower: %d/30 caught", falseAlarms, caught)
	if falseAlarms != 0 || caught < 25 {
		t.Fatalf("false alarms %d/30 (want 0), 30%% slower caught %d/30 (want ≥ 25)", falseAlarms, caught)
	}
}

func TestJUnitAndGitHubOutputs(t *testing.T) {
	g := GateResult{Candidate: "/r/c", Checks: []Check{
		{Name: "ttft_p95 < 200ms", Kind: "threshold", Status: "pass", Message: "ok"},
		{Name: "stage 01 ttft_p95 regression", Kind: "regression", Status: "fail", Message: "120 → 150 ms (+25%)"},
		{Name: "stage 01 itl_p95 regression", Kind: "regression", Status: "inconclusive", Message: "too thin to decide"},
	}}
	dir := t.TempDir()
	path := filepath.Join(dir, "junit.xml")
	if err := WriteJUnit(path, g); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	var doc struct {
		XMLName xml.Name `xml:"testsuites"`
		Suites  []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Skipped  int `xml:"skipped,attr"`
			Cases    []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, data)
	}
	if p := junitProblems(data); len(p) > 0 {
		t.Fatalf("not the JUnit schema:\n%s\n%s", strings.Join(p, "\n"), data)
	}
	bad := `<testsuites><testsuite name="x"><testcase><failure/></testcase><case name="y"/></testsuite></testsuites>`
	if p := junitProblems([]byte(bad)); len(p) != 4 {
		t.Fatalf("the schema check missed problems in %s: %q", bad, p)
	}
	s := doc.Suites[0]
	if s.Tests != 3 || s.Failures != 1 || s.Skipped != 1 || s.Cases[1].Failure == nil || s.Cases[2].Skipped == nil || s.Cases[0].Failure != nil {
		t.Fatalf("%+v", doc)
	}
	var ann strings.Builder
	summary := filepath.Join(dir, "summary.md")
	if err := GitHub(&ann, summary, g); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ann.String(), "::error title=plload gate: stage 01 ttft_p95 regression::120 → 150 ms (+25%25)") ||
		!strings.Contains(ann.String(), "::warning title=") {
		t.Fatalf("annotations:\n%s", ann.String())
	}
	md, _ := os.ReadFile(summary)
	if !strings.Contains(string(md), "| fail | stage 01 ttft_p95 regression |") {
		t.Fatalf("summary:\n%s", md)
	}
}

// junitShape is the common JUnit schema (the one Jenkins' xUnit plugin and GitLab read): where each
// element may appear, the attributes it may carry and those it must.
var junitShape = map[string]struct{ parents, attrs, required []string }{
	"testsuites": {[]string{""}, []string{"name", "time", "tests", "failures", "disabled", "errors"}, nil},
	"testsuite": {[]string{"testsuites", "testsuite", ""}, []string{"name", "tests", "failures", "errors", "time", "disabled",
		"skipped", "skips", "timestamp", "hostname", "id", "package", "assertions", "file", "skip", "log", "url"}, []string{"tests"}},
	"properties": {[]string{"testsuite"}, nil, nil},
	"property":   {[]string{"properties"}, []string{"name", "value"}, []string{"name", "value"}},
	"testcase": {[]string{"testsuite"}, []string{"name", "assertions", "time", "timestamp", "classname", "status", "class",
		"file", "line", "log", "group", "url"}, []string{"name"}},
	"failure":    {[]string{"testcase"}, []string{"type", "message"}, nil},
	"error":      {[]string{"testcase"}, []string{"type", "message"}, nil},
	"skipped":    {[]string{"testcase"}, []string{"type", "message"}, nil},
	"system-out": {[]string{"testcase", "testsuite"}, nil, nil},
	"system-err": {[]string{"testcase", "testsuite"}, nil, nil},
}

// junitProblems walks the document and returns every element, attribute or count that the schema
// does not allow.
func junitProblems(data []byte) []string {
	var out []string
	dec := xml.NewDecoder(bytes.NewReader(data))
	stack := []string{""}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return append(out, fmt.Sprintf("not well-formed XML: %v", err))
		}
		switch el := tok.(type) {
		case xml.StartElement:
			name, parent := el.Name.Local, stack[len(stack)-1]
			shape, known := junitShape[name]
			if !known || !slices.Contains(shape.parents, parent) {
				out = append(out, fmt.Sprintf("<%s> inside <%s> is not in the JUnit schema", name, parent))
			}
			have := map[string]bool{}
			for _, a := range el.Attr {
				have[a.Name.Local] = true
				if !slices.Contains(shape.attrs, a.Name.Local) {
					out = append(out, fmt.Sprintf("<%s %s=…> is not in the JUnit schema", name, a.Name.Local))
				}
				if slices.Contains([]string{"tests", "failures", "errors", "skipped", "disabled"}, a.Name.Local) {
					if _, err := strconv.Atoi(a.Value); err != nil {
						out = append(out, fmt.Sprintf("<%s %s=%q>: a count must be a whole number", name, a.Name.Local, a.Value))
					}
				}
			}
			for _, r := range shape.required {
				if !have[r] {
					out = append(out, fmt.Sprintf("<%s> lacks its required %s attribute", name, r))
				}
			}
			stack = append(stack, name)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if p := stack[len(stack)-1]; len(bytes.TrimSpace(el)) > 0 && !slices.Contains([]string{"failure", "error", "skipped", "system-out", "system-err"}, p) {
				out = append(out, fmt.Sprintf("text inside <%s>, which holds none in the JUnit schema", p))
			}
		}
	}
	return out
}

// TestPrintGateSaysWhatWasNotDecided: the last line counts the inconclusive checks, pass or fail.
func TestPrintGateSaysWhatWasNotDecided(t *testing.T) {
	var b strings.Builder
	PrintGate(&b, GateResult{Passed: true, Checks: []Check{{Name: "a", Status: "pass"}, {Name: "b", Status: "inconclusive"}}})
	if !strings.HasSuffix(b.String(), "gate PASSED (2 checks, 1 not decided)\n") {
		t.Fatalf("%q", b.String())
	}
	b.Reset()
	PrintGate(&b, GateResult{Checks: []Check{{Name: "a", Status: "fail", Message: "stage 01: ttft_p95 = 612 ms (limit < 500 ms)"}}})
	if !strings.HasSuffix(b.String(), "gate FAILED (1 check): a — stage 01: ttft_p95 = 612 ms (limit < 500 ms)\n") {
		t.Fatalf("%q", b.String())
	}
}

// stagePair returns a copy of the golden stage 1 as baseline and candidate, each with its own
// summary, so a test can set their numbers apart.
func stagePair(t *testing.T) (base, cand *resultfiles.StageReport) {
	t.Helper()
	_, stages := resultstest.GoldenStages(t)
	_, again := resultstest.GoldenStages(t)
	return stages[0], again[0]
}

// TestThroughputRegressionDirection: for a throughput, lower is worse. A drop past the tolerance fails,
// a gain of the same size passes, and the interval is the change's own (negative for a drop). A gate
// that read a drop as a gain would pass a server that got 30 % slower.
func TestThroughputRegressionDirection(t *testing.T) {
	const n = 5000 // requests per run: the counting noise is ±1.96·√(2/5000) = ±3.9 %
	for _, tc := range []struct {
		name   string
		ratio  float64 // candidate ÷ baseline
		want   string
		intLow float64 // the interval's low end, ±0.001
	}{
		{"30% drop", 0.7, StatusFail, -0.339},
		{"30% gain", 1.3, StatusPass, 0.261},
		{"unchanged", 1, StatusPass, -0.039},
		{"3% drop, within the noise of a 5% tolerance", 0.97, StatusInconclusive, -0.069},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, cand := stagePair(t)
			for _, s := range []struct {
				st    *resultfiles.StageReport
				scale float64
			}{{base, 1}, {cand, tc.ratio}} {
				s.st.Summary.Throughput = metrics.Throughput{Requests: n, GoodRequests: metrics.Some(n),
					OutTokPerSec: 1000 * s.scale, ReqPerSec: 10 * s.scale, GoodputPerSec: metrics.Some(10 * s.scale)}
			}
			checks := Regressions([]*resultfiles.StageReport{base}, []*resultfiles.StageReport{cand},
				Tolerances{"out_tok_s": 0.05, "req_s": 0.05, "goodput": 0.05}, ttftSeries(nil, nil))
			if len(checks) != 3 {
				t.Fatalf("%d checks: %+v", len(checks), checks)
			}
			for _, c := range checks {
				if c.Status != tc.want {
					t.Errorf("%s: %s (%s), want %s", c.Name, c.Status, c.Message, tc.want)
				}
				if c.Interval == nil || math.Abs(c.Interval[0]-tc.intLow) > 0.001 {
					t.Errorf("%s: interval %v, want it to start at %.3f", c.Name, c.Interval, tc.intLow)
				}
			}
		})
	}
}

// TestStrainedClientOnlyBlocksWhatItCouldSway: a strained client makes its own run look worse, never
// better. So a strained candidate leaves a pass standing and a fail undecided; a strained baseline
// leaves a fail standing and a pass undecided; each undecided check names the run and why.
func TestStrainedClientOnlyBlocksWhatItCouldSway(t *testing.T) {
	same, slow := samplesOf(500, 1, 2), samplesOf(500, 1.3, 2)
	for _, tc := range []struct {
		strained string // baseline, candidate, both or ""
		cand     []float64
		want     string
		run      string // the run an undecided check blames
	}{
		{"", same, StatusPass, ""},
		{"", slow, StatusFail, ""},
		{"candidate", same, StatusPass, ""},
		{"candidate", slow, StatusInconclusive, "candidate"},
		{"baseline", same, StatusInconclusive, "baseline"},
		{"baseline", slow, StatusFail, ""},
		{"both", same, StatusInconclusive, "baseline"},
		{"both", slow, StatusInconclusive, "candidate"},
	} {
		name := fmt.Sprintf("strained %q, candidate %s", tc.strained, map[bool]string{true: "the same", false: "30% slower"}[&tc.cand[0] == &same[0]])
		t.Run(name, func(t *testing.T) {
			base, cand := stagePair(t)
			if tc.strained == "baseline" || tc.strained == "both" {
				base.Injector.CPUPercent, base.Injector.Cores = 190, 2
			}
			if tc.strained == "candidate" || tc.strained == "both" {
				cand.Injector.RunQueueWaitPercent = metrics.Some(30.0)
			}
			checks := Regressions([]*resultfiles.StageReport{base}, []*resultfiles.StageReport{cand}, Tolerances{"ttft_p95": 0.10}, ttftSeries(samplesOf(500, 1, 1), tc.cand))
			c := checks[0]
			if c.Status != tc.want || c.Run != tc.run {
				t.Fatalf("%s, blaming %q (%s); want %s, blaming %q", c.Status, c.Run, c.Message, tc.want, tc.run)
			}
			if tc.run != "" && (c.Cause != CauseStrained || !strings.Contains(c.Message, "client was strained in the "+tc.run+" run")) {
				t.Fatalf("cause %q, message %q", c.Cause, c.Message)
			}
		})
	}
}

// TestMissingRecordsAreLoud: when a run's records cannot be read, its latency comparisons are not
// decided, a warning line names the stage, the run's directory and the reason, and the gate is
// undecided; the throughput comparison, which needs no records, is still decided.
func TestMissingRecordsAreLoud(t *testing.T) {
	base, cand := stagePair(t)
	base.Summary.Throughput.Requests, cand.Summary.Throughput.Requests = 5000, 5000 // enough to decide
	gone := errors.New("open /runs/b/stage_01/profile_export.jsonl: no such file or directory")
	samples := func(run string, _ *resultfiles.StageReport) (*metrics.StageSeries, error) {
		if run == "baseline" {
			return nil, gone
		}
		return &metrics.StageSeries{TTFT: samplesOf(500, 1, 2)}, nil
	}
	checks := Regressions([]*resultfiles.StageReport{base}, []*resultfiles.StageReport{cand}, Tolerances{"ttft_p95": 0.1, "e2e_p95": 0.1, "out_tok_s": 0.5}, samples)
	got := map[string]string{}
	for _, c := range checks {
		got[c.Name] = c.Status + " " + c.Cause + " " + c.Run
	}
	want := map[string]string{
		"stage 01 ttft_p95 regression":  "inconclusive no_records baseline",
		"stage 01 e2e_p95 regression":   "inconclusive no_records baseline",
		"stage 01 out_tok_s regression": "pass  ",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("checks (-want +got):\n%s", diff)
	}
	g := NewGateResult("/runs/c", "/runs/b", checks, false)
	var b strings.Builder
	PrintGate(&b, g)
	line := "warning: stage 01: 2 checks not decided because of the baseline run /runs/b: the baseline run's records cannot be read (" + gone.Error() + ")"
	if !strings.Contains(b.String(), line) {
		t.Fatalf("no line %q in:\n%s", line, b.String())
	}
	if g.Verdict != VerdictUndecided || !strings.HasSuffix(b.String(), "gate UNDECIDED (3 checks, 2 not decided): not decided because of records that are gone (keep profile_export.jsonl); see the INCONCLUSIVE and warning lines (exit 3; --allow-undecided lets it through)\n") {
		t.Fatalf("verdict %s:\n%s", g.Verdict, b.String())
	}
}

// TestCandidateStageWithoutBaselineIsSaid: a candidate stage the baseline lacks is an undecided check,
// not a silent omission.
func TestCandidateStageWithoutBaselineIsSaid(t *testing.T) {
	_, base := resultstest.GoldenStages(t)
	_, cand := resultstest.GoldenStages(t)
	checks := Regressions(base[:1], cand, Tolerances{"out_tok_s": 0.05}, ttftSeries(nil, nil))
	last := checks[len(checks)-1]
	if last.Stage != 2 || last.Status != StatusInconclusive || last.Cause != CauseNoBaselineStage || !strings.Contains(last.Message, "no stage 02") {
		t.Fatalf("%+v", checks)
	}
}

// TestGateVerdict: any failure fails; no decided check, or a check a run kept from being decided, is
// undecided (exit 3 unless allowed); passes beside thin checks pass, and the last line says how many
// were not decided.
func TestGateVerdict(t *testing.T) {
	pass, fail, und := Check{Name: "p", Status: StatusPass}, Check{Name: "f", Status: StatusFail, Message: "stage 01: error_rate = 0.2 (limit < 0.01)"}, Check{Name: "u", Status: StatusInconclusive, Message: "too thin", Cause: CauseThin}
	strainedFail := Check{Name: "s", Status: StatusInconclusive, Cause: CauseStrained, Run: "candidate", Reason: "the client was strained in the candidate run"}
	strainedPass := Check{Name: "s", Status: StatusInconclusive, Cause: CauseStrained, Run: "baseline", Reason: "the client was strained in the baseline run"}
	for _, tc := range []struct {
		name   string
		checks []Check
		allow  bool
		want   string
		passed bool
		last   string
	}{
		{"all pass", []Check{pass, pass}, false, VerdictPass, true, "gate PASSED (2 checks)"},
		{"pass and undecided", []Check{pass, und}, false, VerdictPass, true, "gate PASSED (2 checks, 1 not decided)"},
		{"a failure among undecided", []Check{und, fail}, false, VerdictFail, false, "gate FAILED (2 checks, 1 not decided): f — stage 01: error_rate = 0.2 (limit < 0.01)"},
		{"a failure", []Check{fail}, false, VerdictFail, false, "gate FAILED (1 check): f — stage 01: error_rate = 0.2 (limit < 0.01)"},
		{"two failures", []Check{fail, fail}, false, VerdictFail, false, "gate FAILED (2 checks): f — stage 01: error_rate = 0.2 (limit < 0.01); and 1 more failed"},
		{"nothing decided", []Check{und, und}, false, VerdictUndecided, false, "gate UNDECIDED (2 checks, none decided): not decided because of thin evidence (more requests per stage would decide them); see the INCONCLUSIVE and warning lines (exit 3; --allow-undecided lets it through)"},
		{"a pass beside a check a strained client kept from failing", []Check{pass, strainedFail}, false, VerdictUndecided, false,
			"gate UNDECIDED (2 checks, 1 not decided): not decided because of a strained client, which could have swayed them (a quieter machine would decide them); see the INCONCLUSIVE and warning lines (exit 3; --allow-undecided lets it through)"},
		{"a pass beside a pass a strained baseline kept from counting", []Check{pass, strainedPass}, false, VerdictPass, true, "gate PASSED (2 checks, 1 not decided)"},
		{"the same, allowed", []Check{pass, strainedFail}, true, VerdictUndecided, true,
			"gate UNDECIDED (2 checks, 1 not decided): not decided because of a strained client, which could have swayed them (a quieter machine would decide them); see the INCONCLUSIVE and warning lines; let through by --allow-undecided"},
		{"no check at all", nil, false, VerdictUndecided, false, "gate UNDECIDED (0 checks, none decided): nothing was checked (exit 3; --allow-undecided lets it through)"},
		{"nothing decided, allowed", []Check{und}, true, VerdictUndecided, true, "gate UNDECIDED (1 check, none decided): not decided because of thin evidence (more requests per stage would decide them); see the INCONCLUSIVE and warning lines; let through by --allow-undecided"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGateResult("/c", "", tc.checks, tc.allow)
			if g.Verdict != tc.want || g.Passed != tc.passed {
				t.Errorf("verdict %s passed %v, want %s %v", g.Verdict, g.Passed, tc.want, tc.passed)
			}
			var b strings.Builder
			PrintGate(&b, g)
			if !strings.HasSuffix(b.String(), tc.last+"\n") {
				t.Errorf("output:\n%s\nwant it to end with %q", b.String(), tc.last)
			}
			var ann strings.Builder
			if err := GitHub(&ann, "", g); err != nil {
				t.Fatal(err)
			}
			level := map[bool]string{true: "::warning", false: "::error"}[tc.allow]
			if undecided := strings.Contains(ann.String(), "title=plload gate undecided::"); undecided != (tc.want == VerdictUndecided) ||
				(undecided && !strings.Contains(ann.String(), level+" title=plload gate undecided")) {
				t.Errorf("annotations:\n%s", ann.String())
			}
		})
	}
}

// TestStrainWithABoundedDelay: when the only strain is the Go scheduler's latency — a measured delay —
// a decision stands if 3 × that delay cannot move the interval across the tolerance, and is not
// decided if it can. Other strains (CPU, threads waiting for a CPU) carry no bound and always count.
func TestStrainWithABoundedDelay(t *testing.T) {
	// TTFTs around 500 ms (p95 ≈ 660 ms): 1.05 ms of scheduling delay is nothing; 60 ms is not.
	same, slow := samplesOf(500, 10, 2), samplesOf(500, 13, 2)
	for _, tc := range []struct {
		name     string
		strained string // the run whose injector warns
		health   metrics.InjectorHealth
		cand     []float64
		want     string
		note     string // in the message when the strain could not sway the decision
	}{
		{"baseline, 1 ms late, a pass", "baseline", metrics.InjectorHealth{SchedLatencyP99Ms: 1.05}, same, StatusPass, "too little to sway this"},
		{"baseline, 60 ms late, a pass", "baseline", metrics.InjectorHealth{SchedLatencyP99Ms: 60}, same, StatusInconclusive, ""},
		{"candidate, 1 ms late, a fail", "candidate", metrics.InjectorHealth{SchedLatencyP99Ms: 1.05}, slow, StatusFail, "too little to sway this"},
		{"candidate, 60 ms late, a fail", "candidate", metrics.InjectorHealth{SchedLatencyP99Ms: 60}, slow, StatusInconclusive, ""},
		{"candidate, 1 ms late and waiting for a CPU", "candidate", metrics.InjectorHealth{SchedLatencyP99Ms: 1.05, RunQueueWaitPercent: metrics.Some(30.0)}, slow, StatusInconclusive, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, cand := stagePair(t)
			map[string]*resultfiles.StageReport{"baseline": base, "candidate": cand}[tc.strained].Injector = tc.health
			checks := Regressions([]*resultfiles.StageReport{base}, []*resultfiles.StageReport{cand}, Tolerances{"ttft_p95": 0.10}, ttftSeries(samplesOf(500, 10, 1), tc.cand))
			c := checks[0]
			if c.Status != tc.want || !strings.Contains(c.Message, tc.note) {
				t.Fatalf("%s (%s), want %s with %q", c.Status, c.Message, tc.want, tc.note)
			}
		})
	}
}
