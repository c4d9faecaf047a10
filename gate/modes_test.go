package gate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/resultfiles/resultstest"
)

// Rules on the metrics of the open-loop modes (issue 16), and on the headline of a run without an SLO.

// TestGateNewMetrics: a rule may name the new metrics, each read from its own field, with its own
// unit (latencies as durations, shares as percents).
func TestGateNewMetrics(t *testing.T) {
	st := resultstest.OpenLoopStage(t, "slo: {ttft: {p95: 500ms}}\n")
	s := st.Summary
	s.TPOT.P99, s.E2E.P90, s.SendLag.Max = 41, 900, 7
	s.Goodput.Share = metrics.Some(0.93)
	s.InFlight = metrics.InFlight{Mean: 3.5, Max: 6}
	s.Throughput.InTokPerSec, s.Throughput.TotalTokPerSec = 80, 84
	for _, tc := range []struct {
		rule string
		want float64
	}{
		{"tpot_p99 < 50ms", 41}, {"e2e_p90 < 1s", 900}, {"send_lag_max <= 10ms", 7}, {"goodput_share > 90%", 0.93},
		{"in_flight_mean < 4", 3.5}, {"in_flight_max <= 6", 6}, {"input_tok_s >= 80", 80}, {"total_tok_s > 83/s", 84},
		{"ttft_from_intended_p50 < 200ms", 155}, {"ttft_first_turn_mean < 200ms", 115}, {"out_chars_s == 16", 16},
	} {
		r, err := ParseRule("all: " + tc.rule)
		if err != nil {
			t.Errorf("%s: %v", tc.rule, err)
			continue
		}
		checks := Evaluate([]Rule{r}, []*resultfiles.StageReport{st})
		if len(checks) != 1 || checks[0].Candidate == nil || *checks[0].Candidate != tc.want || checks[0].Status != StatusPass {
			t.Errorf("%s: %+v, want %g passing", tc.rule, checks, tc.want)
		}
	}
	if _, err := ParseRule("tpot_p99 < 50"); err == nil || !strings.Contains(err.Error(), "a duration") {
		t.Errorf("tpot_p99 takes a duration: %v", err)
	}
	if _, err := ParseRule("in_flight_max < 4ms"); err == nil {
		t.Error("in_flight_max took a duration")
	}
}

// TestGateHeadlineWithoutSLO: a rule without a scope is judged on the headline stage; where there is
// none — no SLO set, or none passed it — on every stage, each check saying why and giving the rule's
// own metric against its own limit, never failing for a limit the rule does not name.
func TestGateHeadlineWithoutSLO(t *testing.T) {
	sc := resultstest.ModeScenario(t, "  mode: concurrency\n  stages: [{concurrency: 2, warmup: 1s, duration: 10s}]\n", "")
	st := resultstest.ModeStage(t, sc, 0)
	r, _ := ParseRule("ttft_p95 < 1s")
	checks := Evaluate([]Rule{r}, []*resultfiles.StageReport{st})
	if len(checks) != 1 || checks[0].Status != StatusPass ||
		checks[0].Message != "no SLO was set (the headline stage is the one that passes it): with no headline stage, the rule is judged on every stage; stage 01: ttft_p95 = 100 ms (limit < 1000 ms)" {
		t.Errorf("no SLO: %+v", checks)
	}
	// Cut short as well: the stage decides nothing.
	st.Summary.Partial = true
	if checks := Evaluate([]Rule{r}, []*resultfiles.StageReport{st}); len(checks) != 1 || checks[0].Status != StatusInconclusive || checks[0].Cause != CauseNotMeasured ||
		!strings.Contains(checks[0].Message, "no SLO was set") {
		t.Errorf("no SLO, a partial stage: %+v", checks)
	}
	_, golden := resultstest.GoldenStages(t)
	golden[0].Summary.SLO.Verdict = metrics.SLOFail
	checks = Evaluate([]Rule{r}, golden)
	if len(checks) != 2 || checks[1].Status != StatusPass ||
		checks[1].Message != "no stage passed the SLO (stage 01 failed it; stage 02 broke TTFT p95 485 ms > 250 ms, error rate 33.3 % > 20 %): with no headline stage, the rule is judged on every stage; stage 02: ttft_p95 = 485 ms (limit < 1000 ms)" {
		t.Errorf("SLO failed: %+v", checks)
	}
	// A replay that met the SLO but fell behind its trace: its table says PASS, so the gate does not
	// say none passed; it says none is valid.
	for _, st := range golden {
		st.Summary.SLO.Verdict = metrics.SLOPass
		st.Summary.ReplayValid = metrics.Some(false)
	}
	// Every stage fell behind: none measured anything, so the rule is not decided (not a failure of
	// the server); beside a stage that measured a FAIL, it is "no valid stage passed".
	checks = Evaluate([]Rule{r}, golden)
	if len(checks) != 1 || checks[0].Status != StatusInconclusive || checks[0].Cause != CauseNotMeasured ||
		!strings.HasPrefix(checks[0].Message, "stage 01 is not a valid replay: client could not keep the trace's pace") ||
		!strings.HasSuffix(checks[0].Message, ", so there is no headline stage and the rule is not decided") {
		t.Errorf("every stage a replay that fell behind: %+v", checks)
	}
	golden[1].Summary.SLO.Verdict = metrics.SLOFail
	golden[1].Summary.ReplayValid = metrics.Some(true)
	if checks := Evaluate([]Rule{r}, golden); len(checks) != 2 || !strings.HasPrefix(checks[1].Message, "no valid stage passed the SLO (stage 02 broke TTFT p95 485 ms") ||
		checks[0].Cause != CauseNotMeasured || checks[1].Status != StatusPass {
		t.Errorf("a replay that fell behind beside one that failed: %+v", checks)
	}
}

// TestThresholdFinalLines: a threshold's check and the gate's last line say what the stage tables
// show, for a stage that broke one limit of the SLO the rule does not name, one whose client was
// strained (a failure the strain could have caused is undecided, exit 3, naming the largest cause;
// one it could not have caused stands), a partial stage, and a run without an SLO.
func TestThresholdFinalLines(t *testing.T) {
	onlyITL := func(s []*resultfiles.StageReport) {
		s[1].Summary.SLO = metrics.SLOResult{Verdict: metrics.SLOFail, Checks: []metrics.SLOCheck{
			{Name: "ttft_p95_ms", Limit: 500, Value: ptr(485), Pass: boolPtr(true)},
			{Name: "itl_p95_ms", Limit: 50, Value: ptr(122), Pass: boolPtr(false)}}}
		s[0].Summary.SLO = s[1].Summary.SLO
	}
	strained := func(s []*resultfiles.StageReport) {
		for _, st := range s {
			st.Injector = metrics.InjectorHealth{Cores: 2, CPUPercent: 60, ReadLagP99Ms: metrics.Some(4.48), RunQueueWaitPercent: metrics.Some(62.0)}
		}
	}
	for _, tc := range []struct {
		name, rule string
		edit       func([]*resultfiles.StageReport)
		verdict    string
		last       string // the gate's last line starts so
		check      string // the last check's message holds it
	}{
		{name: "one limit the rule does not name failed", rule: "ttft_p95 < 500ms", edit: onlyITL, verdict: VerdictPass,
			last:  "gate PASSED (2 checks)",
			check: "no stage passed the SLO (stage 01 broke ITL p95 122 ms > 50 ms; stage 02 broke ITL p95 122 ms > 50 ms): with no headline stage, the rule is judged on every stage; stage 02: ttft_p95 = 485 ms (limit < 500 ms)"},
		{name: "the rule's own limit failed", rule: "stage 2: ttft_p95 < 300ms", edit: func([]*resultfiles.StageReport) {}, verdict: VerdictFail,
			last: "gate FAILED (1 check): stage 2: ttft_p95 < 300ms — stage 02: ttft_p95 = 485 ms (limit < 300 ms)"},
		{name: "slo == PASS on a strained stage: undecided, naming the CPU wait", rule: "stage 2: slo == PASS", edit: func(s []*resultfiles.StageReport) {
			strained(s)
			s[1].Summary.SLO = metrics.SLOResult{Verdict: metrics.SLOFail, Checks: []metrics.SLOCheck{{Name: "ttft_p95_ms", Limit: 250, Value: ptr(485), Pass: boolPtr(false)}}}
		}, verdict: VerdictUndecided,
			last:  "gate UNDECIDED (1 check, none decided): not decided because of a strained client",
			check: "stage 02 SLO is FAIL (TTFT p95 485 ms > 250 ms); not decided: the client was strained (injector threads waited for a CPU: 0.62 threads at a time"},
		{name: "a strained stage whose error rate broke the SLO: the failure stands", rule: "stage 2: slo == PASS", edit: strained, verdict: VerdictFail,
			last: "gate FAILED (1 check): stage 2: slo == PASS — stage 02 SLO is FAIL (TTFT p95 485 ms > 250 ms, error rate 33.3 % > 20 %); the client was strained"},
		{name: "a strained stage: a latency failure is undecided", rule: "stage 2: ttft_p95 < 300ms", edit: strained, verdict: VerdictUndecided,
			last: "gate UNDECIDED (1 check, none decided): not decided because of a strained client"},
		{name: "a strained stage: a latency bound the strain cannot push stands", rule: "stage 2: ttft_p95 > 600ms", edit: strained, verdict: VerdictFail,
			last: "gate FAILED (1 check): stage 2: ttft_p95 > 600ms — stage 02: ttft_p95 = 485 ms (limit > 600 ms); the client was strained"},
		{name: "a measured lag too small to sway it: the failure stands", rule: "stage 2: ttft_p95 < 300ms", edit: func(s []*resultfiles.StageReport) {
			s[1].Injector = metrics.InjectorHealth{Cores: 2, CPUPercent: 60, ReadLagP99Ms: metrics.Some(4.48)}
		}, verdict: VerdictFail, last: "gate FAILED (1 check): stage 2: ttft_p95 < 300ms — stage 02: ttft_p95 = 485 ms (limit < 300 ms); the client was strained (injector read lag p99 4.48 ms"},
		{name: "a partial stage", rule: "stage 2: ttft_p95 < 300ms", edit: func(s []*resultfiles.StageReport) { s[1].Summary.Partial = true }, verdict: VerdictUndecided,
			last: "gate UNDECIDED (1 check, none decided): not decided because of a stage cut short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stages := resultstest.GoldenStages(t)
			tc.edit(stages)
			r, err := ParseRule(tc.rule)
			if err != nil {
				t.Fatal(err)
			}
			checks := Evaluate([]Rule{r}, stages)
			g := NewGateResult("/c", "", checks, false)
			var b strings.Builder
			PrintGate(&b, g)
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			if g.Verdict != tc.verdict || !strings.HasPrefix(lines[len(lines)-1], tc.last) {
				t.Errorf("verdict %s, want %s; printed:\n%s\nwant the last line to start %q", g.Verdict, tc.verdict, b.String(), tc.last)
			}
			if tc.check != "" && !strings.Contains(checks[len(checks)-1].Message, tc.check) {
				t.Errorf("the check says %q, want %q", checks[len(checks)-1].Message, tc.check)
			}
		})
	}
}

func boolPtr(b bool) *bool { return &b }

// TestGateSaysWhatTheTablesShow: a rule or a regression on a stage that did not measure what it set
// out to — cut short (partial), or a replay that fell behind its trace — is not decided by its
// numbers, whatever they are: the check says why in the stage tables' words, and the gate is
// undecided rather than green on them. A sound stage beside it is still decided.
func TestGateSaysWhatTheTablesShow(t *testing.T) {
	rule := func(text string) Rule {
		r, err := ParseRule(text)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		name  string
		edit  func(stages []*resultfiles.StageReport)
		rules []Rule
		want  []string // each check's status and message, in order
	}{
		{"sound stages are decided", func([]*resultfiles.StageReport) {}, []Rule{rule("all: error_rate < 100%")},
			[]string{"pass stage 01: error_rate = 0 (limit < 1)", "pass stage 02: error_rate = 0.333333 (limit < 1)"}},
		{"a partial stage decides nothing", func(s []*resultfiles.StageReport) { s[1].Summary.Partial = true }, []Rule{rule("all: error_rate < 100%")},
			[]string{"pass stage 01: error_rate = 0 (limit < 1)",
				"inconclusive stage 02 is partial (cut short): its numbers are not the whole stage's, so the rule is not decided"}},
		{"a replay that fell behind decides nothing, its SLO PASS included", func(s []*resultfiles.StageReport) {
			s[0].Summary.SLO.Verdict = metrics.SLOPass
			s[0].Summary.ReplayValid, s[0].Summary.ReplayInvalidReason = metrics.Some(false), "send lag p99 37.6 ms"
		}, []Rule{rule("stage 1: slo == PASS")},
			[]string{"inconclusive stage 01 is not a valid replay: client could not keep the trace's pace: send lag p99 37.6 ms, so the rule is not decided"}},
		{"an interrupted run has no headline stage, and that is no failure", func(s []*resultfiles.StageReport) {
			s[0].Summary.Partial, s[1].Summary.Partial = true, true
		}, []Rule{rule("slo == PASS")},
			[]string{"inconclusive stage 01 is partial (cut short): its numbers are not the whole stage's; stage 02 is partial (cut short): its numbers are not the whole stage's, so there is no headline stage and the rule is not decided"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stages := resultstest.GoldenStages(t)
			tc.edit(stages)
			checks := Evaluate(tc.rules, stages)
			var got []string
			for _, c := range checks {
				got = append(got, c.Status+" "+c.Message)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("checks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			want := VerdictPass
			for _, c := range checks {
				if c.Status == StatusInconclusive {
					want = VerdictUndecided
					if c.Cause != CauseNotMeasured || !BlocksVerdict(c) {
						t.Errorf("%+v: want the cause %s, blocking a pass", c, CauseNotMeasured)
					}
				}
			}
			if v := GateVerdict(checks); v != want {
				t.Errorf("verdict %s, want %s", v, want)
			}
			if want == VerdictUndecided {
				var b strings.Builder
				PrintGate(&b, NewGateResult("/c", "", checks, false))
				if !strings.Contains(b.String(), "not decided because of a stage cut short or a replay that fell behind its trace, whose numbers decide nothing (rerun it whole)") {
					t.Errorf("the last line does not say why:\n%s", b.String())
				}
			}
		})
	}
	// A regression against a partial baseline stage is not decided either, and says which run.
	_, base := resultstest.GoldenStages(t)
	_, cand := resultstest.GoldenStages(t)
	base[0].Summary.Partial = true
	checks := Regressions(base[:1], cand[:1], Tolerances{"ttft_p95": 0.10}, func(string, *resultfiles.StageReport) (*metrics.StageSeries, error) {
		t.Error("records were read for a stage that cannot decide")
		return nil, nil
	})
	if len(checks) != 1 || checks[0].Status != StatusInconclusive || checks[0].Cause != CauseNotMeasured ||
		checks[0].Message != "stage 01 is partial (cut short): its numbers are not the whole stage's in the baseline run" {
		t.Errorf("a regression against a partial baseline: %+v", checks)
	}
}

// TestHeadlineScope: a rule written `headline:` is judged on the headline stage only, as written: a
// run without one (no SLO set, or no stage passed it) fails it, saying there is no headline stage and
// why, never judging it on every stage as a rule without a scope is; an interrupted run, whose
// stages could not have been the headline, leaves it undecided.
func TestHeadlineScope(t *testing.T) {
	noSLO := func(t *testing.T) []*resultfiles.StageReport {
		sc := resultstest.ModeScenario(t, "  mode: concurrency\n  stages: [{concurrency: 2, warmup: 1s, duration: 10s}]\n", "")
		return []*resultfiles.StageReport{resultstest.ModeStage(t, sc, 0)}
	}
	golden := func(edit func([]*resultfiles.StageReport)) func(*testing.T) []*resultfiles.StageReport {
		return func(t *testing.T) []*resultfiles.StageReport {
			_, s := resultstest.GoldenStages(t)
			edit(s)
			return s
		}
	}
	noneMet := golden(func(s []*resultfiles.StageReport) {
		for _, st := range s {
			st.Summary.SLO = metrics.SLOResult{Verdict: metrics.SLOFail, Checks: []metrics.SLOCheck{{Name: "itl_p95_ms", Limit: 50, Value: ptr(122), Pass: boolPtr(false)}}}
		}
	})
	for _, tc := range []struct {
		name, rule string
		stages     func(*testing.T) []*resultfiles.StageReport
		want       []string // each check's status, stage and message
	}{
		{"headline:, no SLO: fails, saying why there is no headline stage", "headline: ttft_p95 < 1s", noSLO,
			[]string{"fail 0 there is no headline stage for a headline: rule: no SLO was set (the headline stage is the one that passes it); drop headline: to judge every stage, or write all: or stage N:"}},
		{"no scope, no SLO: every stage", "ttft_p95 < 1s", noSLO,
			[]string{"pass 1 no SLO was set (the headline stage is the one that passes it): with no headline stage, the rule is judged on every stage; stage 01: ttft_p95 = 100 ms (limit < 1000 ms)"}},
		{"headline:, no stage met the SLO: fails, naming what each broke", "headline: ttft_p95 < 1s", noneMet,
			[]string{"fail 0 there is no headline stage for a headline: rule: no stage passed the SLO (stage 01 broke ITL p95 122 ms > 50 ms; stage 02 broke ITL p95 122 ms > 50 ms); drop headline: to judge every stage, or write all: or stage N:"}},
		{"no scope, no stage met the SLO: every stage", "ttft_p95 < 1s", noneMet, []string{
			"pass 1 no stage passed the SLO (stage 01 broke ITL p95 122 ms > 50 ms; stage 02 broke ITL p95 122 ms > 50 ms): with no headline stage, the rule is judged on every stage; stage 01: ttft_p95 = 157 ms (limit < 1000 ms)",
			"pass 2 no stage passed the SLO (stage 01 broke ITL p95 122 ms > 50 ms; stage 02 broke ITL p95 122 ms > 50 ms): with no headline stage, the rule is judged on every stage; stage 02: ttft_p95 = 485 ms (limit < 1000 ms)"}},
		{"headline:, a headline stage: that stage only", "headline: ttft_p95 < 1s", golden(func([]*resultfiles.StageReport) {}),
			[]string{"pass 1 stage 01: ttft_p95 = 157 ms (limit < 1000 ms)"}},
		{"headline:, every stage cut short: undecided", "headline: ttft_p95 < 1s", golden(func(s []*resultfiles.StageReport) {
			s[0].Summary.Partial, s[1].Summary.Partial = true, true
		}), []string{"inconclusive 0 stage 01 is partial (cut short): its numbers are not the whole stage's; stage 02 is partial (cut short): its numbers are not the whole stage's, so there is no headline stage and the rule is not decided"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRule(tc.rule)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range Evaluate([]Rule{r}, tc.stages(t)) {
				got = append(got, fmt.Sprintf("%s %d %s", c.Status, c.Stage, c.Message))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("checks (-want +got):\n%s", diff)
			}
		})
	}
}
