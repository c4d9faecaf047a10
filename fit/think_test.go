package fit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestChooseThink: the think time written has the gaps' mean whatever their shape, and the shape
// nearest theirs: exponential pauses are not written as a uniform up to their p99 (twice the mean),
// nor lognormal ones as exponential.
func TestChooseThink(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	draw := func(n int, f func() float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = f()
		}
		slices.Sort(v)
		return v
	}
	tests := []struct {
		name     string
		gaps     []float64
		wantKind string
	}{
		{"exponential", draw(3000, func() float64 { return 0.5 * r.ExpFloat64() }), "exponential"},
		{"uniform", draw(3000, func() float64 { return 0.4 + 0.2*r.Float64() }), "uniform"},
		{"lognormal", draw(3000, func() float64 { return 2 * math.Exp(1.2*r.NormFloat64()) }), "lognormal"},
		{"no pause", draw(50, func() float64 { return 1e-4 * r.Float64() }), "constant"},
		{"one gap", []float64{0.8}, "constant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := chooseThink(tt.gaps)
			if c.Kind != tt.wantKind {
				t.Errorf("kind %s (error %.3f), want %s", c.Kind, c.Err, tt.wantKind)
			}
			yaml := fmt.Sprintf("name: t\nseed: 1\ntarget: {base_url: mock}\npersonas: {count: 1, system_prompt_tokens: 10}\n"+
				"session: {turns: 2, user_input_tokens: 10, max_output_tokens: 10, think_time: %s}\n"+
				"load: {mode: concurrency, stages: [{concurrency: 1, duration: 1s}]}\n", c.yaml())
			sc := loadScenario(t, yaml)
			want := mean(tt.gaps)
			if c.Kind == "constant" && want < noThink {
				want = 0
			}
			if got := sc.Session.ThinkTime.MeanSeconds(); math.Abs(got-want) > 0.005*want {
				t.Errorf("think_time %s: mean %.5g s, want the gaps' %.5g s", strings.TrimSpace(c.yaml()), got, want)
			}
		})
	}
}

// TestFlatPeakOneStage: when the peak minute is within 10 % of the mean, the scenario writes one stage
// for both (and the one at peak +30 %), saying why in the scenario and the summary; a bursty log keeps
// all three.
func TestFlatPeakOneStage(t *testing.T) {
	lengths := params{inMedian: 100, inSigma: 0.3, outMedian: 50, outSigma: 0.3}
	with := func(rate, cv float64) params { p := lengths; p.rate, p.cv = rate, cv; return p }
	tests := []struct {
		name       string
		p          params
		n          int
		wantStages []string
		wantYAML   string // "" where all three stages are written
		wantPrint  string
	}{
		{"shorter than a minute", with(5, 0.5), 250, []string{"average", "peak +30 %"},
			"# the log is shorter than a minute, so its peak minute is its mean",
			"the log is shorter than a minute, so its peak minute is its mean: the scenario has one stage for both"},
		{"regular arrivals", with(5, 0.1), 3000, []string{"average", "peak +30 %"},
			"is within 10 % of the mean (4.994 req/s), so a peak stage would",
			"the peak minute is within 10 % of the mean: the scenario has one stage for both"},
		{"bursty", with(20, 2), 20000, []string{"average", "peak", "peak +30 %"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := t.TempDir() + "/log.jsonl"
			writeRequestLog(t, path, tt.n, tt.p, 5)
			s := fitFile(t, path, "")
			if s.FlatPeak() != (tt.wantYAML != "") {
				t.Fatalf("peak/mean %.3f: flat %v, want %v", s.PeakToMean, s.FlatPeak(), tt.wantYAML != "")
			}
			yaml := Scenario(s, ScenarioOptions{Sources: []string{"log.jsonl"}})
			sc := loadScenario(t, yaml)
			var names []string
			for _, st := range sc.Load.Stages {
				names = append(names, st.Name)
			}
			if !slices.Equal(names, tt.wantStages) {
				t.Errorf("stages %q, want %q\n%s", names, tt.wantStages, yaml)
			}
			var out strings.Builder
			s.Print(&out, []string{"log.jsonl"})
			switch {
			case tt.wantYAML == "" && (strings.Contains(yaml, "no peak stage") || strings.Contains(out.String(), "one stage for both")):
				t.Errorf("a bursty log said to have no peak:\n%s\n%s", yaml, out.String())
			case !strings.Contains(yaml, tt.wantYAML):
				t.Errorf("the scenario lacks %q:\n%s", tt.wantYAML, yaml)
			case !strings.Contains(out.String(), tt.wantPrint):
				t.Errorf("the summary lacks %q:\n%s", tt.wantPrint, out.String())
			}
		})
	}
}
