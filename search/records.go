package search

import (
	"fmt"
	"math"

	"github.com/plload/plload/metrics"
)

// Sampler builds a probe's Measurement from its records, one at a time, in the window its summary
// gives (requests that started in [W, E_eff), docs/measurement.md), and watches it for a queue that grows
// without bound.
type Sampler struct {
	slo      SLO
	limited  []metrics.LatencyLimit // the first limit on each metric: a metric limited twice is sampled once
	sum      *metrics.StageSummary
	openLoop bool
	m        Measurement
	series   map[string][]Point // per SLO metric: each in-window success's value at its start
	sendLag  []Point            // open loop: each in-window request's send − intended send, ms
	silence  silence            // the connect failures after the target's last answer, warmup included
}

// silence watches a probe, warmup included, for a target that stopped answering: the requests that
// could not connect after the last request the target answered at all (records come in no set
// order, so both are kept by end time). A dead or killed server is an outage, not a capacity: its
// probe is invalid and the search stops, instead of halving the load down to 1 against nothing.
type silence struct {
	lastAnswerNs int64
	failures     []connectFailure
}

// connectFailure is one request that could not connect: when it ended, and its kind and message.
type connectFailure struct {
	endNs int64
	what  string
}

// Outage thresholds, as the engine's (an outage lasts a second or holds five requests): one
// refused connection among answers is an error, not a target that is gone.
const (
	silenceMinRequests = 5
	silenceMinSpanNs   = int64(1e9)
)

func (z *silence) add(r *metrics.Record) {
	end := r.RequestStartNs
	if r.RequestEndNs.OK {
		end = r.RequestEndNs.V
	}
	switch {
	case r.WasCancelled:
	case r.Error == nil || r.Error.Code.OK || r.RequestAckNs.OK:
		z.lastAnswerNs = max(z.lastAnswerNs, end)
	case r.Error.Type == metrics.ErrTypeConnect:
		z.failures = append(z.failures, connectFailure{end, metrics.FailureKind(r) + ": " + r.Error.Message})
	}
}

// why is the reason the probe is invalid when the target stopped answering, else "".
func (z *silence) why() string {
	n, from, to, first := 0, int64(math.MaxInt64), int64(0), ""
	for _, f := range z.failures {
		if f.endNs <= z.lastAnswerNs {
			continue
		}
		n++
		if f.endNs < from {
			from, first = f.endNs, f.what
		}
		to = max(to, f.endNs)
	}
	if n < 2 || n < silenceMinRequests && to-from < silenceMinSpanNs {
		return ""
	}
	answered := "after its last answer"
	if z.lastAnswerNs == 0 {
		answered = "and none was answered"
	}
	return fmt.Sprintf("the target stopped answering: the last %d requests could not connect %s (first: %s)", n, answered, first)
}

// NewSampler starts the measurement of a stage summarized as sum; openLoop names the modes whose
// requests have intended send times (arrival_rate, request_rate).
func NewSampler(slo SLO, sum *metrics.StageSummary, openLoop bool) *Sampler {
	s := &Sampler{slo: slo, sum: sum, openLoop: openLoop, m: Measurement{Latency: map[string][][]float64{}}, series: map[string][]Point{}}
	seen := map[string]bool{}
	for _, l := range slo.Latency {
		if !seen[l.Metric] {
			seen[l.Metric] = true
			s.limited = append(s.limited, l)
		}
	}
	return s
}

// Add takes the next record.
func (s *Sampler) Add(r *metrics.Record) {
	s.silence.add(r)
	w := s.sum.Window
	if r.RequestStartNs < w.WNs || r.RequestStartNs >= w.EEffNs {
		return
	}
	if s.openLoop && r.IntendedStartNs.OK && r.CreditIssuedNs > 0 {
		s.sendLag = append(s.sendLag, Point{At: r.IntendedStartNs.V, V: float64(r.CreditIssuedNs-r.IntendedStartNs.V) / 1e6})
	}
	if !r.OK() {
		return
	}
	for _, l := range s.limited {
		group, ok := requestValues(l.Metric, r)
		if !ok {
			continue
		}
		s.m.Latency[l.Metric] = append(s.m.Latency[l.Metric], group)
		s.series[l.Metric] = append(s.series[l.Metric], Point{At: r.RequestStartNs, V: mean(group)})
	}
}

// Measurement is what the records showed, with the summary's counts: a Saturated reason when a
// limited latency or the send lag rose quarter after quarter past its limit, or when arrivals
// were still waiting to start as the stage ended.
func (s *Sampler) Measurement() Measurement {
	m := s.m
	m.Unreachable = s.silence.why()
	req := s.sum.Requests
	m.Requests, m.Errors = req.Succeeded+req.Errors+req.Cancelled, req.Errors+req.Cancelled
	w := s.sum.Window
	floor := math.Inf(1)
	for _, l := range s.limited {
		floor = min(floor, l.LimitMs)
		if q := Quarters(s.series[l.Metric], w.WNs, w.EEffNs); Growing(q, l.LimitMs) {
			m.Saturated = fmt.Sprintf("%s rose %s over the window's quarters, past its limit %s: requests queue longer and longer", l.Metric, GrowthText(q, " ms"), ms(l.LimitMs))
			return m
		}
	}
	if math.IsInf(floor, 1) {
		floor = 100 // no latency limit: a lag of 100 ms is plainly a client that cannot send on time
	}
	if q := Quarters(s.sendLag, w.WNs, w.EEffNs); Growing(q, floor) {
		m.Saturated = fmt.Sprintf("send lag rose %s over the window's quarters: arrivals waited longer and longer for a free slot (load.max_in_flight or max_concurrency)", GrowthText(q, " ms"))
		return m
	}
	if n := s.sum.NeverStarted; n.OK && n.V > max(1, m.Requests/100) {
		m.Saturated = fmt.Sprintf("%d arrivals were due but never started: the backlog of waiting arrivals outgrew the stage", n.V)
	}
	return m
}

// requestValues is one successful request's sample of an SLO metric, in ms: its token gaps for itl
// (the pooled, per-token distribution the limit is judged on), else its one value.
func requestValues(metric string, r *metrics.Record) ([]float64, bool) {
	var v metrics.Opt[float64]
	switch metric {
	case metrics.SLOMetricITL:
		gaps := r.TokenGaps()
		return gaps, len(gaps) > 0
	case metrics.SLOMetricTTFT:
		v = r.TTFT
	case metrics.SLOMetricTTFO:
		v = r.TTFO
	case metrics.SLOMetricE2E:
		v = r.RequestLatency
	case metrics.SLOMetricTPOT:
		v = metrics.RequestTPOT(r) // as the stage summary's TPOT
	}
	return []float64{v.V}, v.OK
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
