package metrics

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// absorbRecords builds a stage from a picture of its one-second windows, one letter each, six
// requests a window started 0.15 s apart (SLO: TTFT p95 ≤ 500 ms):
//
//	M  TTFT 100 ms: met            V  TTFT 900 ms: violated
//	U  two requests of 900 ms: too few to judge
//	C  cancelled after 2 s with no first token: a lower bound over the limit, violated
//	c  cancelled after 0.1 s: a lower bound within the limit, unjudged
//	E  HTTP 500s: no latency, no requests counted, unjudged
//	-  nothing started
func absorbRecords(picture string) []*Record {
	var recs []*Record
	for i, c := range picture {
		n := 6
		if c == 'U' {
			n = 2
		}
		for j := range n {
			start := float64(i) + 0.15*float64(j)
			switch c {
			case 'M':
				recs = append(recs, ok(start, 100, []float64{20, 20}, 3))
			case 'V', 'U':
				recs = append(recs, ok(start, 900, []float64{20, 20}, 3))
			case 'C', 'c':
				after := map[rune]float64{'C': 2, 'c': 0.1}[c]
				r := failed(start, CodeCancelled, ErrTypeCancelled)
				r.CancellationTimeNs, r.RequestEndNs = Some(sec(start+after)), Some(sec(start+after))
				recs = append(recs, r)
			case 'E':
				recs = append(recs, failed(start, 500, "Internal Server Error"))
			}
		}
	}
	return recs
}

// absorbInput is a 10 s stage (1 s warmup, 9 s measured) judged in 1 s windows.
func absorbInput() StageInput {
	in := input()
	in.Warmup, in.Duration, in.AbsorbWindow = time.Second, 9*time.Second, time.Second
	in.SLO = SLOLimits{TTFTP95Ms: 500, ErrorRateUnset: true}
	return in
}

// absorbView is what a case checks: the two moments (−1 for null), the counts and each window's
// state as one letter (m, v, u).
type absorbView struct {
	First, Absorbed    float64
	Violated, Unjudged int
	States             string
}

func viewOf(a *Absorb) absorbView {
	v := absorbView{First: -1, Absorbed: -1, Violated: a.ViolatedWindows, Unjudged: a.UnjudgedWindows}
	if a.FirstViolationS.OK {
		v.First = a.FirstViolationS.V
	}
	if a.AbsorbedS.OK {
		v.Absorbed = a.AbsorbedS.V
	}
	var b strings.Builder
	for _, w := range a.Windows {
		b.WriteByte(w.State[0])
	}
	v.States = b.String()
	return v
}

// TestAbsorbWindows: the first violated window and the first met one after the last violation, from
// windows of requests by their start. Catches: absorbed_s taken after the first violation rather
// than the last, an unjudged window counted as met (absorbed on no evidence) or as violated,
// cancelled requests left out (a server so slow that nothing finished would look absorbed) or
// counted as exact, HTTP errors counted as requests, and warmup windows skipped (a ramp begins at t0).
func TestAbsorbWindows(t *testing.T) {
	cases := []struct {
		name    string
		picture string
		want    absorbView
	}{
		{"never violated", "MMMMMMMMMM", absorbView{-1, -1, 0, 0, "mmmmmmmmmm"}},
		{"absorbed after three windows", "MMVVVMMMMM", absorbView{2, 5, 3, 0, "mmvvvmmmmm"}},
		{"violated in warmup (window 0)", "VMMMMMMMMM", absorbView{0, 1, 1, 0, "vmmmmmmmmm"}},
		{"relapse: absorbed after the last violation", "MVMMVVMMMM", absorbView{1, 6, 3, 0, "mvmmvvmmmm"}},
		{"violated to the end", "MMVVVVVVVV", absorbView{2, -1, 8, 0, "mmvvvvvvvv"}},
		{"too few after the violation: absorbed at the first met", "MVVUUMMMMM", absorbView{1, 5, 2, 2, "mvvuummmmm"}},
		{"an unjudged window does not break an absorption", "MVVMMUMMMM", absorbView{1, 3, 2, 1, "mvvmmummmm"}},
		{"only unjudged windows after the violation: not absorbed", "MVVVVVVUU-", absorbView{1, -1, 6, 3, "mvvvvvvuuu"}},
		{"too few slow requests: not a violation", "MMUMMMMMMM", absorbView{-1, -1, 0, 1, "mmummmmmmm"}},
		{"cancelled past the limit: violated", "MMVVCCCCCC", absorbView{2, -1, 8, 0, "mmvvvvvvvv"}},
		{"cancelled within the limit: unjudged, not met", "MMVVcccccc", absorbView{2, -1, 2, 6, "mmvvuuuuuu"}},
		{"HTTP errors carry no latency", "MVVEEMMMMM", absorbView{1, 5, 2, 2, "mvvuummmmm"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := summary(absorbInput(), absorbRecords(c.picture)...).Absorb
			if a == nil {
				t.Fatal("no absorb for a stage that asked for it")
			}
			if diff := cmp.Diff(c.want, viewOf(a)); diff != "" {
				t.Errorf("absorb (-want +got):\n%s", diff)
			}
			if a.NotAbsorbed() != (c.want.First >= 0 && c.want.Absorbed < 0) {
				t.Errorf("NotAbsorbed() = %v", a.NotAbsorbed())
			}
		})
	}
}

// TestAbsorbWindowBounds: windows run from t0 to E_eff, the last one cut short at E_eff; a request
// started at or after E_eff belongs to none; a request is charged to the window it started in, not
// the one it ended in; the JSON has the spec's keys and nulls. Catches an off-by-one in the window
// index, a last window that runs past E_eff, and windows by end time.
func TestAbsorbWindowBounds(t *testing.T) {
	in := absorbInput()
	in.Duration = 8500 * time.Millisecond // E = 9.5 s
	recs := absorbRecords("MMMMMMMMMV")   // window 9 starts at 9 s: 9.0, 9.15, 9.3, 9.45 are in, 9.6, 9.75 late
	slow := ok(0.999, 5000, nil, 1)       // started in window 0, ended in window 5: window 0 has 7 requests
	a := summary(in, append(recs, slow)...).Absorb
	if got, want := len(a.Windows), 10; got != want {
		t.Fatalf("%d windows, want %d", got, want)
	}
	last := a.Windows[9]
	if diff := cmp.Diff(AbsorbWindow{StartS: 9, EndS: 9.5, Requests: 4, State: WindowUnjudged}, last); diff != "" {
		t.Errorf("last window (-want +got):\n%s", diff)
	}
	first := a.Windows[0]
	if diff := cmp.Diff(AbsorbWindow{StartS: 0, EndS: 1, Requests: 7, State: WindowViolated, Over: []string{"ttft_p95_ms"}}, first); diff != "" {
		t.Errorf("first window (-want +got):\n%s", diff)
	}
	if a.Windows[5].Requests != 6 {
		t.Errorf("window 5 has %d requests, want 6: the slow request belongs to the window it started in", a.Windows[5].Requests)
	}
	data, err := json.Marshal(summary(absorbInput(), absorbRecords("MMVVVVVVVV")...).Absorb)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(data, &keys); err != nil {
		t.Fatal(err)
	}
	if keys["absorbed_s"] != nil || keys["first_violation_s"] != 2.0 || keys["window_s"] != 1.0 || keys["violated_windows"] != 8.0 {
		t.Errorf("absorb JSON: %s", data)
	}
}

// TestAbsorbLimits: every latency limit is judged per window, each on its own metric (ITL on the
// window's pooled gaps, E2E on the request latency), and a window names the limits it broke; with
// no latency limit, or no window asked for, there is no absorb at all. Catches limits read from the
// wrong metric and an absorb made up for a stage that did not ask.
func TestAbsorbLimits(t *testing.T) {
	mk := func(gap float64) []*Record {
		var recs []*Record
		for i := range 10 {
			for j := range 6 {
				g := 20.0
				if i == 3 {
					g = gap
				}
				recs = append(recs, ok(float64(i)+0.15*float64(j), 100, []float64{g, g, g}, 4))
			}
		}
		return recs
	}
	in := absorbInput()
	in.SLO = SLOLimits{ErrorRateUnset: true, Latency: []LatencyLimit{{SLOMetricITL, SLOStatP95, 50}, {SLOMetricE2E, SLOStatMax, 400}}}
	a := summary(in, mk(90)...).Absorb // window 3: gaps 90 (ITL over), E2E 100 + 270 = 370 (within)
	if diff := cmp.Diff(absorbView{3, 4, 1, 0, "mmmvmmmmmm"}, viewOf(a)); diff != "" {
		t.Errorf("itl (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"itl_p95_ms"}, a.Windows[3].Over); diff != "" {
		t.Errorf("over (-want +got):\n%s", diff)
	}
	a = summary(in, mk(110)...).Absorb // E2E 430: both over
	if diff := cmp.Diff([]string{"itl_p95_ms", "e2e_max_ms"}, a.Windows[3].Over); diff != "" {
		t.Errorf("over (-want +got):\n%s", diff)
	}
	none := absorbInput()
	none.SLO = SLOLimits{ErrorRateMax: 0.01}
	if a := summary(none, mk(90)...).Absorb; a != nil {
		t.Errorf("absorb without a latency limit: %+v", a)
	}
	off := absorbInput()
	off.AbsorbWindow = 0
	if a := summary(off, mk(90)...).Absorb; a != nil {
		t.Errorf("absorb when not asked: %+v", a)
	}
}
