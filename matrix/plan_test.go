package matrix

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/fit"
	"github.com/plload/plload/workload"
)

func load(t *testing.T, path string) (*workload.Scenario, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc, issues := workload.Parse(path, data, workload.LoadOptions{})
	if err := issues.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return sc, data
}

// fitted writes the scenario plload fit makes of a log into dir and returns its path.
func fitted(t *testing.T, dir, log string) string {
	t.Helper()
	l := fit.NewLog()
	if err := l.ReadFile(log, ""); err != nil {
		t.Fatal(err)
	}
	sum, err := fit.Summarize(l)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.Base(log)+".yaml")
	if err := os.WriteFile(path, []byte(fit.Scenario(sum, fit.ScenarioOptions{Name: "fitted", Sources: []string{log}})), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLadder(t *testing.T) {
	for _, c := range []struct {
		top  int
		want []int
	}{{1, []int{1}}, {2, []int{1, 2}}, {8, []int{1, 2, 4, 8}}, {12, []int{1, 2, 4, 8, 12}}, {256, []int{1, 2, 4, 8, 16, 32, 64, 128, 256}}} {
		if got := Ladder(c.top); !cmp.Equal(got, c.want) {
			t.Errorf("Ladder(%d) = %v, want %v", c.top, got, c.want)
		}
	}
}

// TestNewPlan: the stages of every part of scenarios/matrix.yaml with two repeats — A's ladder and
// B's rates in rounds, with the first stage's warmup and duration; C skipped with its reason; D one
// ramp from mean to 1.3 × peak over matrix.ramp, then matrix.hold, without warmup.
func TestNewPlan(t *testing.T) {
	sc, data := load(t, "../scenarios/matrix.yaml")
	rates, err := RatesOf(sc, data)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPlan(sc, rates, 2)
	w, d := workload.Duration(time.Second), workload.Duration(4*time.Second)
	type row struct {
		Name        string
		Concurrency int
		Rate        string
		Warmup, Dur workload.Duration
	}
	rows := func(part Part) []row {
		var out []row
		for _, st := range part.Stages {
			r := row{Name: st.Name, Concurrency: st.Concurrency, Warmup: st.Warmup, Dur: st.Duration}
			if st.Rate != nil {
				r.Rate = st.Rate.String()
			}
			out = append(out, r)
		}
		return out
	}
	var wantA, wantB []row
	for _, rep := range []string{"#1", "#2"} {
		for _, c := range []int{1, 2, 4, 8} {
			wantA = append(wantA, row{Name: "A c=" + itoa(c) + " " + rep, Concurrency: c, Warmup: w, Dur: d})
		}
		for _, l := range []struct{ name, rate string }{{"mean", "8 req/s"}, {"peak", "16 req/s"}, {"peak+30%", "20.8 req/s"}} {
			wantB = append(wantB, row{Name: "B " + l.name + " " + rep, Rate: l.rate, Warmup: w, Dur: d})
		}
	}
	wantD := []row{{Name: "D ramp", Rate: "8→20.8 req/s over 10s", Dur: workload.Duration(20 * time.Second)}}
	for _, c := range []struct {
		part Part
		want []row
	}{{p.Parts[0], wantA}, {p.Parts[1], wantB}, {p.Parts[3], wantD}} {
		if diff := cmp.Diff(c.want, rows(c.part)); diff != "" {
			t.Errorf("part %s stages (-want +got):\n%s", c.part.ID, diff)
		}
	}
	if got := []string{p.Parts[0].Mode, p.Parts[1].Mode, p.Parts[3].Mode}; !cmp.Equal(got, []string{"concurrency", "request_rate", "request_rate"}) {
		t.Errorf("modes %v", got)
	}
	if c := p.Parts[2]; c.ID != PartC || !strings.Contains(c.Skip, "no workload.trace") || len(c.Stages) != 0 {
		t.Errorf("part C %+v: want skipped for want of a trace", c)
	}
	if got := p.Parts[1].Levels(); !cmp.Equal(got, []string{"mean", "peak", "peak+30%"}) {
		t.Errorf("B levels %v", got)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestRatesOf: the matrix: keys win; without them the comments of a scenario plload fit wrote give
// the rates (÷ mean turns when the log has sessions, so they are the fitted stages' own rates);
// without either, the error names matrix.mean_rate and plload fit.
func TestRatesOf(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, path     string
		keys           bool // rates from the matrix: keys (else from the fitted scenario's stages)
		wantMean, want float64
		unit           string
	}{
		{name: "matrix keys", path: "../scenarios/matrix.yaml", keys: true, wantMean: 8, want: 16, unit: "req/s"},
		{name: "fit, single-turn", path: fitted(t, dir, "../fit/testdata/azure-2023.csv"), unit: "req/s"},
		{name: "fit, sessions", path: fitted(t, dir, "../fit/testdata/request-log.jsonl"), unit: "sessions/s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, data := load(t, c.path)
			r, err := RatesOf(sc, data)
			if err != nil {
				t.Fatal(err)
			}
			wantMean, wantPeak := c.wantMean, c.want
			tol := 1e-9
			if !c.keys { // fit's own B stages; the comment gives mean turns to 3 significant digits
				// Its stages are average, peak, peak +30 %; or average and peak +30 % alone when the
				// peak is flat (these logs are under a minute), the peak then the mean.
				wantMean, wantPeak, tol = sc.Load.Stages[0].Rate.To, sc.Load.Stages[len(sc.Load.Stages)-1].Rate.To/PeakFactor, 0.005
			}
			if math.Abs(r.Mean-wantMean) > tol*wantMean || math.Abs(r.Peak-wantPeak) > tol*wantPeak {
				t.Errorf("rates %g/%g (%s), want %g/%g", r.Mean, r.Peak, r.From, wantMean, wantPeak)
			}
			if u := NewPlan(sc, r, 1).RateUnit; u != c.unit {
				t.Errorf("rate unit %s, want %s", u, c.unit)
			}
		})
	}
	sc, data := load(t, "../scenarios/smoke.yaml")
	_, err := RatesOf(sc, data)
	if err == nil || !strings.Contains(err.Error(), "matrix.mean_rate") || !strings.Contains(err.Error(), "plload fit") {
		t.Errorf("smoke.yaml has no rates: error %v, want one naming matrix.mean_rate and plload fit", err)
	}
}

// TestPartScenariosParse: every part of the matrix of a closed-loop file, a fitted open-loop file
// and a replay of a trace is a scenario workload accepts and builds: the load keys of the file's own
// mode are gone where the part's mode refuses them, single-turn defaults are written where a
// closed loop needs them, and the replay keeps its time_scale.
func TestPartScenariosParse(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{"../scenarios/matrix.yaml", "../scenarios/request-rate.yaml", fitted(t, dir, "../fit/testdata/request-log.jsonl"), "../scenarios/replay-mooncake.yaml"} {
		sc, data := load(t, path)
		rates := Rates{Mean: 2, Peak: 4}
		p := NewPlan(sc, rates, 2)
		for _, part := range p.Parts {
			if part.Skip != "" {
				if part.ID != PartC || sc.Workload != nil && sc.Workload.Trace != nil {
					t.Errorf("%s: part %s skipped: %s", path, part.ID, part.Skip)
				}
				continue
			}
			text, err := ScenarioYAML(data, part)
			if err != nil {
				t.Fatalf("%s part %s: %v", path, part.ID, err)
			}
			psc, issues := workload.Parse(path, text, workload.LoadOptions{})
			if err := issues.Err(); err != nil {
				t.Fatalf("%s part %s: %v\n%s", path, part.ID, err, text)
			}
			part = SizePools(psc, part)
			if psc.Load.Mode != part.Mode || len(psc.Load.Stages) != len(part.Stages) || psc.Name != sc.Name+"-"+part.ID {
				t.Errorf("%s part %s: mode %s, %d stages, name %s", path, part.ID, psc.Load.Mode, len(psc.Load.Stages), psc.Name)
			}
			if _, err := psc.Build(); err != nil {
				t.Errorf("%s part %s: Build: %v", path, part.ID, err)
			}
			if part.ID == PartC && psc.Load.TimeScale != 0.5 {
				t.Errorf("%s part C: time_scale %g, want the file's 0.5", path, psc.Load.TimeScale)
			}
			if part.ID == PartA && sc.Source() == nil && part.Stages[0].Sessions <= part.Stages[0].Concurrency {
				t.Errorf("%s part A: pool %d for concurrency %d: not sized", path, part.Stages[0].Sessions, part.Stages[0].Concurrency)
			}
		}
	}
}

// TestReplayOfATimedDataset: a replay scenario over a dataset with timestamps (no trace) has part C,
// its own replay stage, and that part builds; the same dataset in a closed loop has nothing to replay.
func TestReplayOfATimedDataset(t *testing.T) {
	dir := t.TempDir()
	timed := `{"session_id": "a", "turns": [{"text": "hello there", "timestamp": 0, "output_length": 3}]}
{"session_id": "b", "turns": [{"text": "second one", "timestamp": 250.5, "output_length": 3}]}
`
	if err := os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(timed), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		load string
		runs bool
	}{
		{"load:\n  mode: replay\n  stages:\n    - {name: hour, duration: 1s}\n", true},
		{"load:\n  mode: concurrency\n  stages:\n    - {concurrency: 1, duration: 1s}\n", false},
	} {
		path := filepath.Join(dir, "s.yaml")
		text := "name: r\ntarget: {base_url: mock}\nworkload:\n  dataset: {file: d.jsonl, format: aiperf}\n" + c.load
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		sc, data := load(t, path)
		part := NewPlan(sc, Rates{Mean: 1, Peak: 2}, 2).Parts[2]
		if got := part.Skip == ""; got != c.runs {
			t.Errorf("%s: part C runs %v (skip %q), want %v", c.load, got, part.Skip, c.runs)
			continue
		}
		if !c.runs {
			continue
		}
		if part.Runs != 2 || len(part.Stages) != 1 || part.Stages[0].Name != "hour" {
			t.Errorf("part C: %d runs of %+v, want 2 runs of the scenario's stage", part.Runs, part.Stages)
		}
		text2, err := ScenarioYAML(data, part)
		if err != nil {
			t.Fatal(err)
		}
		psc, issues := workload.Parse(path, text2, workload.LoadOptions{})
		if err := issues.Err(); err != nil {
			t.Fatalf("part C: %v\n%s", err, text2)
		}
		if _, err := psc.Build(); err != nil {
			t.Errorf("part C: Build: %v", err)
		}
	}
}

// TestFlatPeakRunsNoPeakStage: a peak within 10 % of the mean would load the server as the mean does,
// so part B runs the mean and peak +30 % only, and says why; a real peak keeps its stage.
func TestFlatPeakRunsNoPeakStage(t *testing.T) {
	sc, _ := load(t, "../scenarios/matrix.yaml")
	for _, c := range []struct {
		peak float64
		want []string
	}{{5.4, []string{"mean", "peak+30%"}}, {5, []string{"mean", "peak+30%"}}, {5.6, []string{"mean", "peak", "peak+30%"}}} {
		b := NewPlan(sc, Rates{Mean: 5, Peak: c.peak, From: "test"}, 1).Parts[1]
		if got := b.Levels(); !cmp.Equal(got, c.want) {
			t.Errorf("peak %g on a mean of 5: B levels %v, want %v", c.peak, got, c.want)
		}
		said := strings.Contains(strings.Join(b.Notes, "\n"), "no peak stage")
		if said != (len(c.want) == 2) {
			t.Errorf("peak %g: notes %q", c.peak, b.Notes)
		}
	}
}
