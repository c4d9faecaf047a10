package prober

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/resultfiles/resultstest"
	"github.com/plload/plload/runner"
	"github.com/plload/plload/search"
	"github.com/plload/plload/workload"
)

// TestFinishSaysWhatTheProbesShow: the search's last lines and exit code say what its probe table
// shows, in its words, for every way a search can end: a capacity bracketed by a failure, a pass
// whose client was strained (it stands), an invalid probe after a pass or first, an interrupt, only
// undecided loads, and a lowest load that failed. "none" is said only where a probe failed at the
// lowest load, and a capacity the search did not bracket is "at least".
func TestFinishSaysWhatTheProbesShow(t *testing.T) {
	_, golden := resultstest.GoldenStages(t)
	eight, twelve, sixteen := 8.0, 12.0, 16.0
	pass := func(v float64, stage int, why string) search.Probe {
		return search.Probe{Value: v, Verdict: search.Pass, Reason: why, Stage: stage}
	}
	probe := func(v float64, verdict search.Verdict, stage int, why string) search.Probe {
		return search.Probe{Value: v, Verdict: verdict, Reason: why, Stage: stage}
	}
	const invalidWhy = "injector CPU busy: 190 % of 200 %"
	for _, tc := range []struct {
		name     string
		res      search.Result
		runErr   error
		headline string      // the first line
		answer   string      // the second line's start
		code     runner.Code // 0: no error
		errText  string
		partial  *float64 // the load of the probe an interrupt cut short
		listed   []string // search.json's verdicts, when checked
	}{
		{name: "a capacity bracketed by a failure",
			res:      search.Result{Best: &eight, Above: &sixteen, Probes: []search.Probe{pass(8, 1, "met"), probe(16, search.Fail, 2, "TTFT p95 broken")}, Stop: "resolution 5% reached between 8 and 16"},
			headline: "capacity at 8 sessions", answer: "meets SLO up to 8 sessions; 2 probes; resolution 5% reached"},
		{name: "a strained client's pass stands",
			res: search.Result{Best: &eight, Above: &sixteen, Probes: []search.Probe{
				pass(8, 1, "TTFT p95 met; the client was strained (injector scheduler latency p99 3 ms), which can make latencies read up to 9 ms longer, never shorter"),
				probe(16, search.Fail, 2, "TTFT p95 broken")}, Stop: "resolution 5% reached between 8 and 16"},
			headline: "capacity at 8 sessions", answer: "meets SLO up to 8 sessions; 2 probes"},
		{name: "an invalid probe after a pass",
			res:      search.Result{Best: &eight, Probes: []search.Probe{pass(8, 1, "met"), probe(16, search.Invalid, 2, invalidWhy)}, Invalid: true, Stopped: true, Stop: "probe at 16 is invalid: " + invalidWhy},
			headline: "capacity at least 8 sessions", answer: "meets SLO at 8 sessions at least: the search stopped before a higher load was decided; 2 probes; probe at 16 is invalid",
			code: runner.Failed, errText: "the search stopped: probe at 16 is invalid: " + invalidWhy},
		{name: "an invalid first probe",
			res:      search.Result{Probes: []search.Probe{probe(8, search.Invalid, 1, invalidWhy)}, Invalid: true, Stopped: true, Stop: "probe at 8 is invalid: " + invalidWhy},
			headline: "capacity at SLO: unknown — the search stopped before any load was decided: probe at 8 is invalid: " + invalidWhy,
			answer:   "no load probed was decided; 1 probe; probe at 8 is invalid", code: runner.Failed, errText: "the search stopped: probe at 8 is invalid"},
		{name: "interrupted, the last probe partial",
			res: search.Result{Best: &eight, Probes: []search.Probe{pass(8, 1, "met")}}, runErr: engine.ErrInterrupted, partial: &sixteen,
			headline: "capacity at least 8 sessions", answer: "meets SLO at 8 sessions at least: the search stopped before a higher load was decided; 2 probes; interrupted before the search ended, during the probe at 16 sessions (partial, not judged)",
			code: runner.Interrupted, errText: "interrupted: the last probe is partial", listed: []string{"pass", "interrupted"}},
		{name: "interrupted while bisecting",
			res: search.Result{Best: &eight, Above: &sixteen, Probes: []search.Probe{pass(8, 1, "met"), probe(16, search.Fail, 2, "TTFT p95 broken")}}, runErr: engine.ErrInterrupted, partial: &twelve,
			headline: "capacity at least 8 sessions", answer: "meets SLO at 8 sessions at least (16 did not): the search stopped before narrowing the range; 3 probes; interrupted before the search ended, during the probe at 12 sessions",
			code: runner.Interrupted, errText: "interrupted: the last probe is partial", listed: []string{"pass", "fail", "interrupted"}},
		{name: "only undecided loads",
			res: search.Result{Undecided: &[2]float64{8, 16}, Probes: []search.Probe{probe(8, search.Undecided, 1, "error rate undecided"), probe(16, search.Undecided, 2, "error rate undecided")},
				Stop: "no probe up to --max 16 was decided"},
			headline: "capacity at SLO: undecided — no load probed was shown to meet the SLO, and none failed it",
			answer:   "undecided at every load probed: none failed, none was shown to meet the SLO (8–16 undecided); 2 probes", code: runner.Undecided,
			errText: "no load probed could be decided against the SLO"},
		{name: "failures above an undecided lowest load",
			res: search.Result{Undecided: &[2]float64{1, 8}, Probes: []search.Probe{probe(8, search.Undecided, 1, "ttft p95 undecided"), probe(16, search.Fail, 2, "TTFT p95 broken"),
				probe(4, search.Fail, 3, "TTFT p95 broken"), probe(2, search.Fail, 4, "TTFT p95 broken"), probe(1, search.Undecided, 5, "ttft p95 undecided")},
				Stop: "no probe passed, down to 1"},
			headline: "capacity at SLO: undecided, below 2 sessions — 2, 4 and 16 sessions failed the SLO and 1–8 sessions undecided; none was shown to meet it",
			answer:   "meets SLO at no load shown: 2, 4 and 16 sessions failed, and the lowest load probed was undecided (1–8 undecided); 5 probes", code: runner.Undecided,
			errText: "no load probed met the SLO, and the lowest could not be decided (2, 4 and 16 sessions failed; 1–8 sessions undecided)"},
		{name: "a capacity with undecided loads above it says so on its first line",
			res: search.Result{Best: &eight, Above: &sixteen, Undecided: &[2]float64{12, 12}, Probes: []search.Probe{pass(8, 1, "met"), probe(16, search.Fail, 2, "TTFT p95 broken"),
				probe(12, search.Undecided, 3, "ttft p95 undecided")}, Stop: "resolution 5% reached between 8 and 12"},
			headline: "capacity at 8 sessions; 12 sessions undecided, so the capacity may be higher", answer: "meets SLO up to 8 sessions (12 undecided); 3 probes"},
		{name: "the lowest load failed",
			res:      search.Result{LowestFailed: true, Probes: []search.Probe{probe(1, search.Fail, 1, "TTFT p95 broken")}, Stop: "no probe passed, down to 1"},
			headline: "capacity at SLO: none — the lowest load probed failed the SLO", answer: "meets SLO at no load probed; 1 probe",
			code: runner.Failed, errText: "no probe met the SLO (TTFT p95 ≤ 30ms): no probe passed, down to 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sixteenMax := 16.0
			p, err := New(scenario(t, workload.ModeConcurrency, "{concurrency: 8, duration: 2s}"), Options{Resolution: "5%", Repeats: 3, Max: &sixteenMax,
				Render: Renderers{Headline: func(chosen *resultfiles.StageReport, sessions float64, atLeast bool) string {
					if atLeast {
						return fmt.Sprintf("capacity at least %g sessions", sessions)
					}
					return fmt.Sprintf("capacity at %g sessions", sessions)
				}}})
			if err != nil {
				t.Fatal(err)
			}
			pr := &prober{plan: p, dir: t.TempDir()}
			for i, pb := range tc.res.Probes {
				st := *golden[i%len(golden)]
				st.Stage = pb.Stage
				pr.stages = append(pr.stages, &st)
				pr.specs = append(pr.specs, p.stageAt(pb.Value))
			}
			if tc.partial != nil {
				k := len(pr.stages) + 1
				st := *golden[0]
				st.Stage = k
				pr.stages, pr.specs = append(pr.stages, &st), append(pr.specs, p.stageAt(*tc.partial))
				pr.partial = &search.Probe{Value: *tc.partial, Verdict: search.Interrupted, Stage: k, Reason: "interrupted"}
			}
			var out bytes.Buffer
			err = p.finish(pr, tc.res, tc.runErr, time.Now(), &out)
			data, rerr := os.ReadFile(filepath.Join(pr.dir, "search.json"))
			var sf resultfiles.Search
			if rerr != nil || json.Unmarshal(data, &sf) != nil {
				t.Fatalf("search.json: %v\n%s", rerr, data)
			}
			if sf.Complete != (tc.runErr == nil && !tc.res.Stopped) || sf.Stop == "" {
				t.Errorf("search.json says complete %v, stop %q", sf.Complete, sf.Stop)
			}
			if tc.listed != nil {
				var got []string
				for _, pb := range sf.Probes {
					got = append(got, pb.Verdict)
				}
				if strings.Join(got, " ") != strings.Join(tc.listed, " ") {
					t.Errorf("search.json lists the verdicts %v, want %v", got, tc.listed)
				}
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) < 2 || lines[0] != tc.headline || !strings.HasPrefix(lines[1], tc.answer) {
				t.Errorf("printed:\n%s\nwant the lines %q and %q…", out.String(), tc.headline, tc.answer)
			}
			var re *runner.Error
			switch {
			case tc.code == 0 && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.code != 0 && (!errors.As(err, &re) || re.Code != tc.code || !strings.Contains(err.Error(), tc.errText)):
				t.Errorf("error %v, want exit %d with %q", err, tc.code, tc.errText)
			}
		})
	}
}
