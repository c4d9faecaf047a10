package prober

import (
	"errors"
	"strings"
	"testing"

	"github.com/plload/plload/runner"
	"github.com/plload/plload/search"
	"github.com/plload/plload/workload"
)

// scenario parses a small scenario on the mock whose first stage is stage, under mode.
func scenario(t *testing.T, mode, stage string) *workload.Scenario {
	t.Helper()
	text := `name: plan
target: {base_url: mock}
personas: {count: 2, system_prompt_tokens: {min: 20, max: 40}}
session: {turns: 1, user_input_tokens: {min: 10, max: 20}, max_output_tokens: {min: 16, max: 24}, think_time: 0s}
load:
  mode: ` + mode + `
  stages:
    - ` + stage + `
slo: {ttft: {p95: 30ms}}
`
	sc, issues := workload.Parse("plan.yaml", []byte(text), workload.LoadOptions{})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestNewReadsTheScenarioLoad: the knob is the scenario's load, --start defaults to the first
// stage's value and --max to a fixed ceiling (sessions) or a multiple of the start (a rate); the
// Reproduce line's options name every choice.
func TestNewReadsTheScenarioLoad(t *testing.T) {
	for _, tc := range []struct {
		name, mode, stage string
		knob              string
		start, max        float64
		args              string
	}{
		{"sessions", workload.ModeConcurrency, "{concurrency: 4, duration: 2s}", KnobConcurrency, 4, DefaultMaxConcurrency, " --knob concurrency --start 4 --max 4096 --resolution 5% --repeats 3"},
		{"requests per second", workload.ModeRequestRate, "{rate: 20, duration: 2s}", KnobRate, 20, 20 * DefaultMaxRateFactor, " --knob rate --start 20 --max 20480 --resolution 5% --repeats 3"},
		{"sessions per second", workload.ModeArrivalRate, "{sessions_per_sec: 2, max_concurrency: 8, duration: 2s}", KnobRate, 2, 2 * DefaultMaxRateFactor, " --knob rate --start 2 --max 2048 --resolution 5% --repeats 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(scenario(t, tc.mode, tc.stage), Options{Resolution: "5%", Repeats: 3})
			if err != nil {
				t.Fatal(err)
			}
			if p.knob != tc.knob || p.opt.Start != tc.start || p.opt.Max != tc.max || p.args != tc.args {
				t.Errorf("knob %s start %g max %g args %q, want %s %g %g %q", p.knob, p.opt.Start, p.opt.Max, p.args, tc.knob, tc.start, tc.max, tc.args)
			}
			if got := p.stageAt(7); p.startOf() != tc.start || (&Plan{sc: p.sc, knob: p.knob, first: got}).startOf() != 7 {
				t.Errorf("the probe's stage at 7 does not carry 7: %+v", got)
			}
		})
	}
}

// TestNewRefuses: every refusal is bad input naming the flag, before anything is sent.
func TestNewRefuses(t *testing.T) {
	zero, half, low := 0.0, 2.5, 2.0
	sc := scenario(t, workload.ModeConcurrency, "{concurrency: 4, duration: 2s}")
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"another knob", Options{Knob: KnobRate, Resolution: "5%", Repeats: 3}, "--knob rate: "},
		{"an unknown knob", Options{Knob: "users", Resolution: "5%", Repeats: 3}, `--knob "users": `},
		{"a zero start", Options{Start: &zero, Resolution: "5%", Repeats: 3}, "--start 0: "},
		{"half a session", Options{Start: &half, Resolution: "5%", Repeats: 3}, "--start 2.5: "},
		{"a max under the start", Options{Max: &low, Resolution: "5%", Repeats: 3}, "--max 2: "},
		{"too many repeats", Options{Resolution: "5%", Repeats: MaxRepeats + 1}, "--repeats 11: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(sc, tc.o)
			var re *runner.Error
			if !errors.As(err, &re) || re.Code != runner.BadInput || !strings.HasPrefix(err.Error(), tc.want) || !strings.HasSuffix(err.Error(), "nothing was sent") {
				t.Errorf("%v, want bad input starting %q", err, tc.want)
			}
		})
	}
}

// TestAnswerText: the answer line gives the load with its unit, the undecided range and why the
// search stopped.
func TestAnswerText(t *testing.T) {
	best, above := 12.0, 13.0
	p, err := New(scenario(t, workload.ModeConcurrency, "{concurrency: 4, duration: 2s}"), Options{Resolution: "5%", Repeats: 3})
	if err != nil {
		t.Fatal(err)
	}
	probes := func(n int) []search.Probe { return make([]search.Probe, n) }
	for _, tc := range []struct {
		res  search.Result
		want string
	}{
		{search.Result{Best: &best, Above: &above, Undecided: &[2]float64{13, 14}, Probes: probes(6), Stop: "resolved"}, "meets SLO up to 12 sessions (13–14 undecided); 6 probes; resolved"},
		{search.Result{Best: &best, Above: &above, Undecided: &[2]float64{13, 13}, Probes: probes(1), Stop: "resolved"}, "meets SLO up to 12 sessions (13 undecided); 1 probe; resolved"},
		{search.Result{LowestFailed: true, Probes: probes(3), Stop: "1 session failed"}, "meets SLO at no load probed; 3 probes; 1 session failed"},
		{search.Result{Undecided: &[2]float64{1, 4}, Probes: probes(3), Stop: "undecided"}, "undecided at every load probed: none failed, none was shown to meet the SLO (1–4 undecided); 3 probes; undecided"},
	} {
		if got := p.answerText(tc.res); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}
