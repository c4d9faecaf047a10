package metrics

import (
	"math"
	"time"
)

// Time to absorb a rising load (docs/measurement.md). When a stage's load rises — a ramp, or more than the stage
// before — the SLO's latency limits are judged per window of fixed length from the stage's t0, and
// the summary says when the first window broke a limit and from when every later window met them
// all again.
//
// Which requests fall in a window: a request belongs to the window in which it started
// (request_start_ns), whatever its phase (warmup windows count: a ramp begins at t0) and however
// long it ran; requests that started at or after E_eff (the end of the stage's measurement) belong to
// none. A latency is charged to the moment the load was offered, not to the moment the server got
// round to it, so a queue that builds up shows in the windows that filled it.
//
// What a window is judged on: its successful requests' TTFT, TTFO, TPOT, E2E and pooled token gaps
// (ITL: a chunk of k tokens is k gaps), each limit's statistic computed over the window's values as the stage's is. A request
// cancelled by the drain or an interrupt counts too, as a lower bound: its TTFT and TTFO, when it
// never got them, are at least its cancellation − its start, and so is its E2E. Other failed requests
// (HTTP errors, transport errors) have no latency and are left out: the error-rate limit is the
// stage's, not a window's.
//
// A window's state:
//   - violated: some limit's statistic is over the limit (a lower bound over the limit is a known
//     violation);
//   - met: every limit's statistic is known, exact and within its limit;
//   - unjudged: fewer than AbsorbMinRequests requests (successes and cancelled ones) started in it, or
//     a limit's statistic is unknown (no values), or within the limit only as a lower bound (some of
//     its values are censored). An unjudged window is never guessed either way: it neither starts a
//     violation nor proves absorption, and it does not break an absorption either.
//
// first_violation_s is the start of the first violated window; absorbed_s is the start of the first
// met window after the last violated one (from it on, every window that could be judged met every
// limit); null when no window after the last violation was met: not absorbed by the stage's end.
// With no violated window both are null: there was nothing to absorb.

// AbsorbMinRequests is the fewest requests a window needs to be judged. Below it a p95 is one or two
// requests' value, and one slow request would mark the window violated.
const AbsorbMinRequests = 5

// absorbExactGaps is how many token gaps (ITL) one window keeps exactly before it pools them in an HDR
// histogram (3 significant digits, as the stage's pooled ITL): the windows of a long stage must not
// hold a second copy of every gap.
const absorbExactGaps = 1 << 16

// Window states of Absorb.Windows.
const (
	WindowMet      = "met"
	WindowViolated = "violated"
	WindowUnjudged = "unjudged"
)

// Absorb is stage.json's `absorb`: the stage's latency limits judged per window from t0 (see the
// comment above for which requests fall in a window and how a window is judged). Seconds are from
// the stage's t0.
type Absorb struct {
	WindowS float64 `json:"window_s"`
	// MinRequests is AbsorbMinRequests: a window with fewer requests is unjudged.
	MinRequests int `json:"min_requests"`
	// FirstViolationS is the start of the first violated window (null: none).
	FirstViolationS Opt[float64] `json:"first_violation_s"`
	// AbsorbedS is the start of the first met window after the last violated one (null: not
	// absorbed by the stage's end, or nothing to absorb when FirstViolationS is null too).
	AbsorbedS Opt[float64] `json:"absorbed_s"`
	// ViolatedWindows counts the violated windows, UnjudgedWindows those that could not be judged.
	ViolatedWindows int `json:"violated_windows"`
	UnjudgedWindows int `json:"unjudged_windows"`
	// Windows lists every window in order, for the charts and for a reader who wants the detail.
	Windows []AbsorbWindow `json:"windows"`
}

// AbsorbWindow is one window of Absorb.
type AbsorbWindow struct {
	StartS   float64 `json:"start_s"`
	EndS     float64 `json:"end_s"` // the last window may be shorter: it ends at E_eff
	Requests int     `json:"requests"`
	State    string  `json:"state"`
	// Over names the limits the window broke (SLO check names: ttft_p95_ms, ...).
	Over []string `json:"over,omitempty"`
}

// NotAbsorbed reports whether a limit was broken and the stage ended before every window met them
// again.
func (a *Absorb) NotAbsorbed() bool { return a.FirstViolationS.OK && !a.AbsorbedS.OK }

// absorbWindows accumulates the per-window values of a stage's records.
type absorbWindows struct {
	limits   []LatencyLimit
	t0, eEff int64
	width    int64
	windows  []windowValues
}

// windowValues are one window's values by SLO metric; censored counts the lower bounds among them.
type windowValues struct {
	requests int
	values   map[string][]float64
	censored map[string]int
	itl      gapPool
}

// newAbsorbWindows starts the windows of a stage, or returns nil when there is nothing to judge:
// no window asked for, or no latency limit.
func newAbsorbWindows(limits []LatencyLimit, window time.Duration, t0, eEff int64) *absorbWindows {
	if window <= 0 || len(limits) == 0 || eEff <= t0 {
		return nil
	}
	n := int((eEff - t0 + int64(window) - 1) / int64(window))
	if n > 100_000 { // a 1 ms window over a day: not a question anyone asked
		return nil
	}
	a := &absorbWindows{limits: limits, t0: t0, eEff: eEff, width: int64(window), windows: make([]windowValues, n)}
	for i := range a.windows {
		a.windows[i] = windowValues{values: map[string][]float64{}, censored: map[string]int{}, itl: gapPool{limit: absorbExactGaps}}
	}
	return a
}

// add files one record into the window it started in. Safe on a nil receiver (absorb is off).
func (a *absorbWindows) add(r *Record) {
	if a == nil || r.RequestStartNs < a.t0 || r.RequestStartNs >= a.eEff {
		return
	}
	if !r.OK() && !r.WasCancelled {
		return // an HTTP or transport error: no latency to judge
	}
	w := &a.windows[(r.RequestStartNs-a.t0)/a.width]
	w.requests++
	for _, l := range a.limits {
		if l.Metric == SLOMetricITL {
			continue
		}
		v, censored, ok := absorbValue(l.Metric, r)
		if !ok {
			continue
		}
		if censored {
			w.censored[l.Metric]++
		}
		w.values[l.Metric] = append(w.values[l.Metric], v)
	}
	if r.OK() && a.hasITL() {
		w.itl.add(r.TokenGaps())
	}
}

// absorbValue is a request's value of an SLO metric for its window, and whether it is a lower bound
// (a cancelled request that never got that far).
func absorbValue(metric string, r *Record) (v float64, censored, ok bool) {
	if r.OK() {
		v, ok = RequestValue(metric, r)
		return v, false, ok
	}
	cancelled := Ms(endNs(r) - r.RequestStartNs)
	switch metric {
	case SLOMetricTTFT, SLOMetricTTFO:
		if v, ok := RequestValue(metric, r); ok {
			return v, false, true
		}
		return cancelled, true, true
	case SLOMetricE2E:
		return cancelled, true, true
	}
	return 0, false, false // TPOT and ITL of a request that did not finish: unknown
}

func (a *absorbWindows) hasITL() bool {
	for _, l := range a.limits {
		if l.Metric == SLOMetricITL {
			return true
		}
	}
	return false
}

// judge is one window's state and the limits it broke.
func (a *absorbWindows) judge(w *windowValues) (string, []string) {
	var over []string
	unknown := w.requests < AbsorbMinRequests
	for _, l := range a.limits {
		var d Dist
		if l.Metric == SLOMetricITL {
			d = w.itl.dist()
		} else {
			d = summarize(w.values[l.Metric])
		}
		v, known := d.Stat(l.Stat)
		switch {
		case !known:
			unknown = true
		case v > l.LimitMs:
			over = append(over, l.CheckName())
		case w.censored[l.Metric] > 0:
			unknown = true // within the limit only as a lower bound
		}
	}
	switch {
	case len(over) > 0 && w.requests >= AbsorbMinRequests:
		return WindowViolated, over
	case unknown:
		return WindowUnjudged, nil
	}
	return WindowMet, nil
}

// result judges every window and finds the first violation and the absorption.
func (a *absorbWindows) result() *Absorb {
	if a == nil {
		return nil
	}
	out := &Absorb{WindowS: float64(a.width) / 1e9, MinRequests: AbsorbMinRequests, Windows: make([]AbsorbWindow, len(a.windows))}
	last := -1
	for i := range a.windows {
		state, over := a.judge(&a.windows[i])
		start := a.t0 + int64(i)*a.width
		out.Windows[i] = AbsorbWindow{StartS: secondsFrom(a.t0, start), EndS: secondsFrom(a.t0, min(start+a.width, a.eEff)),
			Requests: a.windows[i].requests, State: state, Over: over}
		switch state {
		case WindowViolated:
			out.ViolatedWindows++
			if !out.FirstViolationS.OK {
				out.FirstViolationS = Some(out.Windows[i].StartS)
			}
			last = i
		case WindowUnjudged:
			out.UnjudgedWindows++
		}
	}
	if last < 0 {
		return out
	}
	for _, w := range out.Windows[last+1:] {
		if w.State == WindowMet {
			out.AbsorbedS = Some(w.StartS)
			break
		}
	}
	return out
}

// secondsFrom is ns − t0 in seconds, rounded to the millisecond so stage.json reads 24, not
// 23.999999999.
func secondsFrom(t0, ns int64) float64 { return math.Round(float64(ns-t0)/1e6) / 1e3 }
