// Package search finds the largest load — concurrency (closed loop) or request rate (open loop) —
// whose probe meets an SLO, the way a customer asks it: "this deployment serves N sessions within the
// SLO". It doubles from a start value until a probe does not pass, then bisects between the last pass
// and the first non-pass down to a resolution (docs/measurement.md).
//
// It is noise-aware: a probe passes or fails only when the 95 % interval of every SLO statistic lies
// wholly on one side of its limit (see SLO.Judge). Otherwise the same value runs again, its samples
// pooled with the earlier runs', up to Options.Repeats times; a value still undecided is reported as
// part of a range ("meets SLO up to 48 sessions (49–52 undecided)") instead of a verdict that would
// flip from one run to the next.
//
// The package runs nothing itself: a Prober runs one probe (a stage, in plload) and returns what it
// measured, so the sequence is tested without a server.
package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Verdict is one probe's outcome.
type Verdict string

// Probe verdicts, as search.json writes them.
const (
	Pass      Verdict = "pass"
	Fail      Verdict = "fail"
	Undecided Verdict = "undecided"
	// Invalid: the probe measured the client, not the server (the load generator was strained); the
	// search stops, since every later probe would be heavier.
	Invalid Verdict = "invalid"
	// Interrupted: search.json's verdict of the probe the user's interrupt cut short (never judged).
	Interrupted Verdict = "interrupted"
)

// DefaultMaxProbes bounds a search: doubling from 1 to 4096 and bisecting to 5 % takes 18.
const DefaultMaxProbes = 20

// Measurement is what one probe measured, in the terms its verdict is decided by.
type Measurement struct {
	// Latency holds, per SLO metric (metrics.SLOMetricTTFT, …), the values in ms of the requests that
	// succeeded in the probe's window, one group per request: a single value, or for ITL the
	// request's chunk gaps (resampled together, see metrics.BootstrapPercentile).
	Latency map[string][][]float64
	// Requests are the requests that started in the window (successes, errors, cancelled); Errors
	// those that failed or were cancelled (docs/measurement.md: cancelled count as errors).
	Requests, Errors int
	// Saturated says why the server was clearly past capacity ("" when it was not): the probe fails
	// whatever its intervals say, and is not repeated.
	Saturated string
	// StoppedEarly says why the probe was stopped before its end (EarlyStop): a limit it could no
	// longer meet, StoppedLimit ("ttft p95", "error rate"). It fails, decided by that limit.
	StoppedEarly, StoppedLimit string
	// Invalid says which limit of the client the probe hit ("" when none): the client could not
	// hold the load (its CPU was full), so the probe says nothing of the server; the search stops.
	Invalid string
	// Strained says how the client was strained in a way that makes its timestamps late ("" when
	// it was not): threads waiting for a CPU, scheduling delays, long GC pauses; LateMs is how late
	// a latency may read because of it. Late timestamps only make latencies read longer, so a pass
	// stands, and so does a fail that remains one with every latency LateMs shorter; any other
	// fail is not pooled and the load runs again, and one still strained at the last run makes the
	// probe invalid.
	Strained string
	LateMs   float64
	// Unreachable says why the target was not there by the probe's end ("" when it was): its last
	// requests could not connect. The probe is invalid, as it measured an outage, and the search
	// stops (the README's "an unreachable target", exit 1).
	Unreachable string
}

// merge pools o's samples and counts into m (a repeat of the same value); the flags are o's own.
func (m *Measurement) merge(o Measurement) {
	if m.Latency == nil {
		m.Latency = map[string][][]float64{}
	}
	for k, v := range o.Latency {
		m.Latency[k] = append(m.Latency[k], v...)
	}
	m.Requests += o.Requests
	m.Errors += o.Errors
	m.Saturated, m.Invalid, m.Strained, m.LateMs = o.Saturated, o.Invalid, o.Strained, o.LateMs
	m.StoppedEarly, m.StoppedLimit = o.StoppedEarly, o.StoppedLimit
}

// earlier is m with every latency late ms shorter: what a client late by that much may have seen.
func (m Measurement) earlier(late float64) Measurement {
	out := m
	out.Latency = map[string][][]float64{}
	for k, groups := range m.Latency {
		shifted := make([][]float64, len(groups))
		for i, g := range groups {
			shifted[i] = make([]float64, len(g))
			for j, v := range g {
				shifted[i][j] = v - late
			}
		}
		out.Latency[k] = shifted
	}
	return out
}

// Prober runs one probe at value and returns the number it carries in the results (its stage) and
// what it measured. An error stops the search and is returned as it is.
type Prober func(ctx context.Context, value float64) (stage int, m Measurement, err error)

// Judge decides a value from its pooled measurement; seed makes any resampling reproducible.
type Judge func(m Measurement, seed uint64) Judgement

// Options shape a search.
type Options struct {
	Start, Max float64
	Resolution Resolution
	// Repeats is how many times one value may run before it is called undecided (≥ 1).
	Repeats int
	// MaxProbes bounds the probes of the whole search, repeats included (0: DefaultMaxProbes).
	MaxProbes int
	// Whole: the knob takes whole numbers only (concurrency); the smallest value is then 1.
	Whole bool
	// Min is the smallest value tried when the start itself does not pass (0: 1 for whole numbers,
	// Start ÷ 64 otherwise).
	Min float64
	// OnProbe, when set, sees each probe as soon as it is judged (progress lines).
	OnProbe func(Probe)
}

// Resolution is when bisection stops: the pass and the non-pass around the answer are at most Value
// apart, as a fraction of the pass when Relative ("5%"), else in the knob's own unit.
type Resolution struct {
	Value    float64
	Relative bool
}

// ParseResolution reads "5%" (relative to the value found) or a plain number in the knob's unit.
func ParseResolution(s string) (Resolution, error) {
	t := strings.TrimSpace(s)
	rel := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	switch {
	case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
		return Resolution{}, fmt.Errorf("--resolution %q: accepted: a percentage such as 5%% (of the value found) or a number in the knob's unit, such as 2", s)
	case v <= 0 || rel && v >= 100:
		return Resolution{}, fmt.Errorf("--resolution %q: accepted: more than 0 (and a percentage under 100%%)", s)
	}
	if rel {
		return Resolution{Value: v / 100, Relative: true}, nil
	}
	return Resolution{Value: v}, nil
}

// String writes the resolution as the flag takes it.
func (r Resolution) String() string {
	if r.Relative {
		return strconv.FormatFloat(r.Value*100, 'g', -1, 64) + "%"
	}
	return strconv.FormatFloat(r.Value, 'g', -1, 64)
}

// reached reports whether lo (a pass) and hi (the non-pass above it) are close enough to stop.
func (r Resolution) reached(lo, hi float64, whole bool) bool {
	gap := hi - lo
	if whole && gap <= 1 {
		return true
	}
	if r.Relative {
		return gap <= r.Value*lo
	}
	return gap <= r.Value
}

// Probe is one probe of the search: the value, its verdict (pooled with the value's earlier
// repeats), why, and the stage that holds it.
type Probe struct {
	Value   float64 `json:"value"`
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
	Stage   int     `json:"stage"`
	// Decided says how each limit of the SLO was decided (absent when the probe was not judged on
	// its limits: saturated, invalid, unreachable).
	Decided []Decision `json:"decided,omitempty"`
}

// Result is a finished search.
type Result struct {
	// Best is the largest value that passed below the first value that did not; nil when none passed.
	Best *float64
	// Above is the lowest value over Best that did not pass; nil when none did, so that Best is only
	// a lower bound unless it is --max (the search stopped before a higher load was decided).
	Above *float64
	// Undecided is the lowest and highest value whose repeats could not decide; nil when none.
	Undecided *[2]float64
	Probes    []Probe
	// Stop says why the search ended ("resolution 5% reached between 12 and 13", …).
	Stop string
	// Invalid: a probe measured the client; Stop names the limit it hit.
	Invalid bool
	// LowestFailed: the lowest load probed failed, so the SLO is met at no load probed. Without it a
	// search with no pass has only undecided loads: its answer is a range, never "none".
	LowestFailed bool
	// Stopped: the search ended before its own rules ended it (an invalid probe, the probe budget, a
	// probe's error or an interrupt), so Best is only a lower bound.
	Stopped bool
}

// errStop ends the sequence early with a reason (the probe budget, an invalid probe, --max).
type errStop struct{ why string }

func (e errStop) Error() string { return e.why }

// Run performs the search. It returns the result so far together with any error of probe or ctx.
func Run(ctx context.Context, opt Options, probe Prober, judge Judge) (Result, error) {
	if opt.Repeats < 1 {
		opt.Repeats = 1
	}
	if opt.MaxProbes <= 0 {
		opt.MaxProbes = DefaultMaxProbes
	}
	if opt.Min <= 0 {
		opt.Min = opt.Start / 64
		if opt.Whole {
			opt.Min = 1
		}
	}
	s := &sequence{opt: opt, probe: probe, judge: judge, lo: math.NaN(), hi: math.NaN()}
	stop, err := s.run(ctx)
	res := Result{Probes: s.probes, Stop: stop}
	var es errStop
	if errors.As(err, &es) {
		res.Stop, err, res.Stopped = es.why, nil, true
	}
	res.Stopped = res.Stopped || err != nil
	res.Invalid = len(s.probes) > 0 && s.probes[len(s.probes)-1].Verdict == Invalid
	if !math.IsNaN(s.lo) {
		best := s.lo
		res.Best = &best
		if !math.IsNaN(s.hi) {
			above := s.hi
			res.Above = &above
		}
	}
	if len(s.undecided) > 0 {
		res.Undecided = &[2]float64{slices.Min(s.undecided), slices.Max(s.undecided)}
	}
	res.LowestFailed = lowestFailed(s.probes)
	return res, err
}

// sequence is a search in progress: lo is the highest pass, hi the lowest non-pass above it (NaN:
// none yet).
type sequence struct {
	opt       Options
	probe     Prober
	judge     Judge
	lo, hi    float64
	undecided []float64
	probes    []Probe
}

// run doubles, halves when the start does not pass, then bisects; it returns why it stopped.
func (s *sequence) run(ctx context.Context) (string, error) {
	o := s.opt
	for v := o.Start; ; v = min(2*v, o.Max) {
		verdict, err := s.evaluate(ctx, v)
		if err != nil {
			return "", err
		}
		if verdict == Undecided && math.IsNaN(s.lo) {
			// Nothing has passed yet, and nothing failed: an undecided start is no evidence against
			// the loads above it, so the search goes on upward rather than down to "none".
			if v >= o.Max {
				return fmt.Sprintf("no probe up to --max %s was decided", format(o.Max)), nil
			}
			continue
		}
		if verdict != Pass {
			s.hi = v
			break
		}
		s.lo = v
		if v >= o.Max {
			return fmt.Sprintf("every probe up to --max %s passed", format(o.Max)), nil
		}
	}
	for math.IsNaN(s.lo) {
		v := s.hi / 2
		if o.Whole {
			v = math.Floor(v)
		}
		if v < o.Min {
			return fmt.Sprintf("no probe passed, down to %s", format(s.hi)), nil
		}
		if slices.Contains(s.undecided, v) { // probed on the way up, and its repeats did not decide it
			s.hi = v
			continue
		}
		verdict, err := s.evaluate(ctx, v)
		if err != nil {
			return "", err
		}
		if verdict == Pass {
			s.lo = v
		} else {
			s.hi = v
		}
	}
	for !o.Resolution.reached(s.lo, s.hi, o.Whole) {
		mid, ok := midpoint(s.lo, s.hi, o.Whole)
		if !ok {
			break
		}
		verdict, err := s.evaluate(ctx, mid)
		if err != nil {
			return "", err
		}
		if verdict == Pass {
			s.lo = mid
		} else {
			s.hi = mid
		}
	}
	return fmt.Sprintf("resolution %s reached between %s and %s", o.Resolution, format(s.lo), format(s.hi)), nil
}

// evaluate probes v until its pooled samples decide it, or Repeats runs leave it undecided.
func (s *sequence) evaluate(ctx context.Context, v float64) (Verdict, error) {
	var pooled Measurement
	for attempt := 1; attempt <= s.opt.Repeats; attempt++ {
		if len(s.probes) >= s.opt.MaxProbes {
			return "", errStop{fmt.Sprintf("the probe budget (%d probes) is spent", s.opt.MaxProbes)}
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
		stage, m, err := s.probe(ctx, v)
		if err != nil {
			return "", err
		}
		j := s.judgeRun(&pooled, m, uint64(stage), attempt == s.opt.Repeats)
		verdict := j.Verdict
		s.probes = append(s.probes, Probe{Value: v, Verdict: verdict, Reason: j.Reason, Stage: stage, Decided: j.Decided})
		if s.opt.OnProbe != nil {
			s.opt.OnProbe(s.probes[len(s.probes)-1])
		}
		switch verdict {
		case Invalid:
			return "", errStop{fmt.Sprintf("probe at %s is invalid: %s", format(v), j.Reason)}
		case Pass, Fail:
			return verdict, nil
		}
	}
	s.undecided = append(s.undecided, v)
	return Undecided, nil
}

// judgeRun decides one run of a value, pooling its samples with the value's earlier runs. A run
// whose client was strained (m.Strained) can make a pass no less true, and a fail that survives
// every latency m.LateMs shorter neither; any other fail the client may have caused itself: its
// samples are left out and the value runs again; at the last run it is invalid.
func (s *sequence) judgeRun(pooled *Measurement, m Measurement, seed uint64, last bool) Judgement {
	switch {
	case m.Invalid != "":
		return Judgement{Verdict: Invalid, Reason: m.Invalid}
	case m.Unreachable != "":
		return Judgement{Verdict: Invalid, Reason: m.Unreachable}
	case m.Saturated != "": // the diagnosis, when the records show it, of a probe stopped early too
		return Judgement{Verdict: Fail, Reason: "saturated: " + m.Saturated, Decided: []Decision{{Limit: "saturation", Outcome: "broken", Rule: RuleSaturated}}}
	case m.StoppedEarly != "":
		return Judgement{Verdict: Fail, Reason: "stopped early, the load could no longer pass: " + m.StoppedEarly,
			Decided: []Decision{{Limit: m.StoppedLimit, Outcome: "broken", Rule: RuleEarlyStop}}}
	case m.Strained == "":
		pooled.merge(m)
		return s.judge(*pooled, seed)
	}
	trial := Measurement{}
	trial.merge(*pooled)
	trial.merge(m)
	j := s.judge(trial, seed)
	strained := fmt.Sprintf("the client was strained (%s), which can make latencies read up to %s longer", m.Strained, ms(m.LateMs))
	if j.Verdict != Fail {
		*pooled = trial
		j.Reason += "; " + strained + ", never shorter"
		return j
	}
	if s.judge(trial.earlier(m.LateMs), seed).Verdict == Fail {
		*pooled = trial
		j.Reason += "; " + strained + ", and it fails with every latency that much shorter"
		return j
	}
	if last {
		return Judgement{Verdict: Invalid, Reason: "it failed (" + j.Reason + ") while the client was strained: " + m.Strained}
	}
	return Judgement{Verdict: Undecided, Reason: "it failed (" + j.Reason + "), but " + strained + ": run again"}
}

// lowestFailed reports whether the last verdict of the lowest value probed is a fail.
func lowestFailed(probes []Probe) bool {
	lowest := -1
	for i, p := range probes {
		if lowest < 0 || p.Value < probes[lowest].Value || p.Value == probes[lowest].Value {
			lowest = i
		}
	}
	return lowest >= 0 && probes[lowest].Verdict == Fail
}

// midpoint is the value halfway between lo and hi: a whole number for whole knobs, else rounded to
// the fewest significant digits that keep it strictly inside (so rates read 30, 25, 22.5). ok is
// false when no such value exists.
func midpoint(lo, hi float64, whole bool) (float64, bool) {
	mid := (lo + hi) / 2
	if whole {
		mid = math.Floor(mid)
		return mid, mid > lo && mid < hi
	}
	for digits := 2; digits <= 12; digits++ {
		if r := roundSig(mid, digits); r > lo && r < hi {
			return r, true
		}
	}
	return mid, mid > lo && mid < hi
}

func roundSig(v float64, digits int) float64 {
	if v == 0 {
		return 0
	}
	scale := math.Pow(10, float64(digits)-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*scale) / scale
}

// format writes a knob value the shortest way (12, 22.5).
func format(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
