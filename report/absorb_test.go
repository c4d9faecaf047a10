package report

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot/plotter"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// absorbOf is an Absorb over windows of 10 s given as letters: m met, v violated, u unjudged.
func absorbOf(states string, first, absorbed float64) *metrics.Absorb {
	a := &metrics.Absorb{WindowS: 10, MinRequests: metrics.AbsorbMinRequests}
	if first >= 0 {
		a.FirstViolationS = metrics.Some(first)
	}
	if absorbed >= 0 {
		a.AbsorbedS = metrics.Some(absorbed)
	}
	for i, c := range states {
		w := metrics.AbsorbWindow{StartS: 10 * float64(i), EndS: 10 * float64(i+1), Requests: 50,
			State: map[rune]string{'m': metrics.WindowMet, 'v': metrics.WindowViolated, 'u': metrics.WindowUnjudged}[c]}
		switch c {
		case 'v':
			w.Over = []string{"ttft_p95_ms"}
			if i%2 == 0 {
				w.Over = append(w.Over, "e2e_p99_ms")
			}
			a.ViolatedWindows++
		case 'u':
			a.UnjudgedWindows++
		}
		a.Windows = append(a.Windows, w)
	}
	return a
}

// TestAbsorbText: the sentence the terminal and report.md show, for a ramp and for a step. Catches
// the wrong moment in the sentence, "absorbed" said of a stage that was not, and a limit named twice.
func TestAbsorbText(t *testing.T) {
	ramp := &resultfiles.StageRate{From: 5, To: 25, Over: "2m"}
	cases := []struct {
		name string
		rate *resultfiles.StageRate
		a    *metrics.Absorb
		want string
	}{
		{"absorbed after a ramp", ramp, absorbOf("mvvmm", 10, 30),
			"absorbed 30 s after the ramp began (first window over a limit at 10 s; 2 of 5 windows of 10 s over: ttft_p95_ms, e2e_p99_ms)"},
		{"absorbed after a step", nil, absorbOf("vmm", 0, 10),
			"absorbed 10 s after the stage began (first window over a limit at 0 s; 1 of 3 windows of 10 s over: ttft_p95_ms, e2e_p99_ms)"},
		{"not absorbed", ramp, absorbOf("mvvvu", 10, -1),
			"not absorbed by the end of the stage (first window over a limit at 10 s after the ramp began, and no window after the last one over met every limit; 3 of 5 windows of 10 s over: ttft_p95_ms, e2e_p99_ms; 1 could not be judged: fewer than 5 requests started in them, a limit's metric had no values (every request failed), or only cancelled requests' lower bounds were within the limits)"},
		{"nothing could be judged", ramp, absorbOf("uu", -1, -1),
			"no window could be judged, so there is no time to absorb (0 of 2 windows of 10 s over; 2 could not be judged: fewer than 5 requests started in them, a limit's metric had no values (every request failed), or only cancelled requests' lower bounds were within the limits)"},
		{"nothing to absorb", ramp, absorbOf("mmm", -1, -1), "no window broke a latency limit, nothing to absorb (0 of 3 windows of 10 s over)"},
		{"no absorb", ramp, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &resultfiles.StageReport{Stage: 2, Rate: c.rate, Summary: &metrics.StageSummary{Absorb: c.a}}
			if diff := cmp.Diff(c.want, resultfiles.AbsorbText(st)); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
			section := absorbSection([]runStage{{"a", st}}, true)
			if (section == "") != (c.want == "") || c.want != "" && !strings.Contains(section, "- a, stage 02: "+c.want+"\n") {
				t.Errorf("section %q", section)
			}
		})
	}
}

// TestAbsorbOnTheTimeSeries: the stage's time-series panels shade each violated window (from its
// start to its end) and mark absorbed_s, with legend entries saying so; a stage that was not absorbed
// says that instead. Catches windows drawn at the wrong place and a chart silent about the absorb.
func TestAbsorbOnTheTimeSeries(t *testing.T) {
	s := metrics.StageSeries{T0Ns: 0, WNs: 0, EEffNs: 50e9, Seconds: make([]float64, 50), TTFTP95Ms: make([]float64, 50)}
	cases := []struct {
		name    string
		a       *metrics.Absorb
		shaded  [][2]float64
		legends []string
	}{
		{"absorbed", absorbOf("mvvmm", 10, 30), [][2]float64{{10, 20}, {20, 30}}, []string{"window of 10 s over a latency limit", "absorbed at 30 s"}},
		{"not absorbed", absorbOf("mmvvv", 20, -1), [][2]float64{{20, 30}, {30, 40}, {40, 50}}, []string{"window of 10 s over a latency limit", "not absorbed by the end of the stage"}},
		{"no absorb", nil, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := seriesPlot("ttft", "ms", s, s.TTFTP95Ms, c.a, false)
			if err != nil {
				t.Fatal(err)
			}
			var shaded [][2]float64
			var absorbedAt []float64
			for _, pl := range p.marks {
				switch x := pl.(type) {
				case *plotter.Polygon:
					if x.Color == violatedPink {
						r := x.XYs[0]
						shaded = append(shaded, [2]float64{r[0].X, r[1].X})
					}
				case *plotter.Line:
					if x.Color == absorbedGreen {
						absorbedAt = append(absorbedAt, x.XYs[0].X)
					}
				}
			}
			if diff := cmp.Diff(c.shaded, shaded); diff != "" {
				t.Errorf("shaded windows (-want +got):\n%s", diff)
			}
			if c.a != nil && c.a.AbsorbedS.OK && !cmp.Equal([]float64{c.a.AbsorbedS.V}, absorbedAt) {
				t.Errorf("absorbed marked at %v, want %v", absorbedAt, c.a.AbsorbedS.V)
			}
			var legends []string
			for _, e := range p.entries {
				if e.name != "warmup" {
					legends = append(legends, e.name)
				}
			}
			if diff := cmp.Diff(c.legends, legends); diff != "" {
				t.Errorf("legend (-want +got):\n%s", diff)
			}
		})
	}
}
