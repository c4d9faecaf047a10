package workload

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestModesAreRegistered: the registry offers every mode the scenario schema accepts, in the order
// messages list them, and each mode fills in what callers ask of it. Catches a mode file left out
// of the build, or one that registers without its checks or estimates.
func TestModesAreRegistered(t *testing.T) {
	want := []string{ModeConcurrency, ModeArrivalRate, ModeRequestRate, ModeReplay, ModeBatch}
	if diff := cmp.Diff(want, Modes()); diff != "" {
		t.Fatalf("Modes() (-want +got):\n%s", diff)
	}
	for _, name := range want {
		m, ok := LookupMode(name)
		if !ok || m.Name != name {
			t.Fatalf("LookupMode(%q) = %v, %v", name, m, ok)
		}
		if len(m.stageKeys) == 0 || m.estimate == nil || m.poolSize == nil || m.describe == nil || m.text == nil ||
			m.atOnce == nil || m.openCap == nil {
			t.Errorf("%s: a hook is missing: %+v", name, m)
		}
		for _, k := range m.loadKeys {
			if m.checkLoad == nil || m.defaults == nil {
				t.Errorf("%s reads load.%s but neither checks nor defaults it", name, k)
			}
		}
		if (LoadPlan{Mode: name}).LoadMode() != m {
			t.Errorf("LoadPlan{Mode: %q}.LoadMode() is not the registered mode", name)
		}
	}
	if diff := cmp.Diff([]string{"arrival", "cv", "max_in_flight", "time_scale"}, ModeLoadKeys()); diff != "" {
		t.Errorf("ModeLoadKeys() (-want +got):\n%s", diff)
	}
	if _, ok := LookupMode("fifo"); ok {
		t.Error("LookupMode(fifo) found a mode")
	}
	if m := (LoadPlan{Mode: "fifo"}).LoadMode(); m.OpenLoop || m.ReadsLoadKey("max_in_flight") || m.Knob != nil {
		t.Errorf("an unknown mode has properties: %+v", m)
	}
}

// TestUnknownModeIsRefused: a mode no file registers is refused with the list of those that are,
// and a near miss is named; a missing mode lists them too.
func TestUnknownModeIsRefused(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"  mode: fifo", `t.yaml:15:9: load.mode: found "fifo"; accepted: concurrency, arrival_rate, request_rate, replay, batch`},
		{"  mode: bach", `t.yaml:15:9: load.mode: found "bach"; accepted: concurrency, arrival_rate, request_rate, replay, batch (did you mean "batch"?)`},
		{"", `t.yaml:14:1: load.mode: required but missing; accepted: concurrency, arrival_rate, request_rate, replay, batch`},
	} {
		_, issues := Parse("t.yaml", []byte(applyEdits(edit{15, c.line})), LoadOptions{Getenv: noEnv})
		errs := issues.Errors()
		if len(errs) != 1 || errs[0].Error() != c.want {
			t.Errorf("mode %q: got %v; want the one error\n%s", c.line, errs, c.want)
		}
	}
}

// TestModeKeysBelongToTheirModes: a load key of other modes names them all, and a stage key of
// other modes names the modes whose stages read it, with the keys this mode accepts.
func TestModeKeysBelongToTheirModes(t *testing.T) {
	_, issues := Parse("t.yaml", []byte(applyEdits(edit{16, "  max_in_flight: 4\n  stages:"}, edit{17, "    - {concurrency: 2, rate: 3, duration: 60s}"})), LoadOptions{Getenv: noEnv})
	got := ""
	for _, is := range issues.Errors() {
		got += is.Message + "\n"
	}
	for _, want := range []string{
		"rate belongs to load.mode request_rate; accepted in a concurrency stage: name, concurrency, duration, warmup, sessions, requests",
		"max_in_flight belongs to load.mode request_rate or replay or batch; load.mode here is concurrency",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
}

// TestLoadRises: the stages asked for their time to absorb. Catches a down-ramp or a lower step
// taken for a rise, a first stage that does not ramp asked for one, and a mode left out.
func TestLoadRises(t *testing.T) {
	rate := func(from, to float64, over time.Duration) *Rate {
		return &Rate{From: from, To: to, Over: Duration(over)}
	}
	cases := []struct {
		name   string
		plan   LoadPlan
		rising []bool
	}{
		{"ramp up, then a constant rate, then more", LoadPlan{Mode: ModeRequestRate, Stages: []Stage{
			{Rate: rate(5, 25, time.Minute)}, {Rate: rate(25, 25, 0)}, {Rate: rate(30, 30, 0)}}}, []bool{true, false, true}},
		{"first constant stage: nothing to rise from", LoadPlan{Mode: ModeRequestRate, Stages: []Stage{
			{Rate: rate(50, 50, 0)}, {Rate: rate(10, 10, 0)}}}, []bool{false, false}},
		{"ramp down that starts above the stage before", LoadPlan{Mode: ModeRequestRate, Stages: []Stage{
			{Rate: rate(10, 10, 0)}, {Rate: rate(40, 20, time.Minute)}, {Rate: rate(20, 5, time.Minute)}}}, []bool{false, true, false}},
		{"concurrency ladder", LoadPlan{Mode: ModeConcurrency, Stages: []Stage{
			{Concurrency: 2}, {Concurrency: 4}, {Concurrency: 4}, {Concurrency: 1}}}, []bool{false, true, false, false}},
		{"arrival rate", LoadPlan{Mode: ModeArrivalRate, Stages: []Stage{
			{SessionsPerSec: 1}, {SessionsPerSec: 2}}}, []bool{false, true}},
		{"replay", LoadPlan{Mode: ModeReplay, Stages: []Stage{{}, {}}}, []bool{false, false}},
		{"batch", LoadPlan{Mode: ModeBatch, Stages: []Stage{{Requests: 1}, {Requests: 9}}}, []bool{false, false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []bool
			for i := range c.plan.Stages {
				got = append(got, c.plan.LoadRises(i))
			}
			if diff := cmp.Diff(c.rising, got); diff != "" {
				t.Errorf("rising (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStageLoadText: the report's load column in each mode's words, and n/a where the stage does
// not say.
func TestStageLoadText(t *testing.T) {
	for _, c := range []struct {
		load StageLoad
		want string
	}{
		{StageLoad{Mode: ModeConcurrency, Concurrency: 16}, "c=16"},
		{StageLoad{}, "n/a"},
		{StageLoad{Concurrency: 4}, "c=4"}, // records read without a scenario
		{StageLoad{Mode: ModeArrivalRate, SessionsPerSec: 2, MaxConcurrency: 32}, "2.0 sess/s ≤ 32"},
		{StageLoad{Mode: ModeArrivalRate}, "n/a"},
		{StageLoad{Mode: ModeRequestRate, Rate: &LoadRate{From: 20, To: 20}, Arrival: ArrivalPoisson, MaxInFlight: 1000}, "20 req/s poisson ≤ 1000"},
		{StageLoad{Mode: ModeRequestRate, Rate: &LoadRate{From: 10, To: 50, Over: "2m"}, Arrival: ArrivalGamma, CV: 2}, "10→50 req/s over 2m gamma cv 2"},
		{StageLoad{Mode: ModeRequestRate}, "n/a"},
		{StageLoad{Mode: ModeReplay, TimeScale: 0.5, MaxInFlight: 1000}, "replay ×0.5 ≤ 1000"},
		{StageLoad{Mode: ModeBatch, MaxInFlight: 64}, "batch ≤ 64"},
	} {
		if got := c.load.String(); got != c.want {
			t.Errorf("%+v: got %q, want %q", c.load, got, c.want)
		}
	}
}
