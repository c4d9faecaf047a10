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
// for both (and the one at peak +30 %), saying why; a bursty log keeps all three.
func TestFlatPeakOneStage(t *testing.T) {
	tests := []struct {
		name       string
		p          params
		n          int
		wantStages []string
		wantNote   bool
	}{
		// Under a minute of requests: the peak minute is the whole log's rate, the mean.
		{"shorter than a minute", params{rate: 5, cv: 0.5, inMedian: 100, inSigma: 0.3, outMedian: 50, outSigma: 0.3}, 250, []string{"average", "peak +30 %"}, true},
		{"bursty", params{rate: 20, cv: 2, inMedian: 100, inSigma: 0.3, outMedian: 50, outSigma: 0.3}, 20000, []string{"average", "peak", "peak +30 %"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := t.TempDir() + "/log.jsonl"
			writeRequestLog(t, path, tt.n, tt.p, 5)
			s := fitFile(t, path, "")
			if s.FlatPeak() != tt.wantNote {
				t.Fatalf("peak/mean %.3f: flat %v, want %v", s.PeakToMean, s.FlatPeak(), tt.wantNote)
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
			const note = "is within 10 % of the mean"
			var out strings.Builder
			s.Print(&out, []string{"log.jsonl"})
			if strings.Contains(yaml, note) != tt.wantNote || strings.Contains(out.String(), "the peak minute is within 10 % of the mean") != tt.wantNote {
				t.Errorf("the reason for one stage: in the scenario %v, in the summary %v, want %v\n%s\n%s",
					strings.Contains(yaml, note), !tt.wantNote, tt.wantNote, yaml, out.String())
			}
		})
	}
}
