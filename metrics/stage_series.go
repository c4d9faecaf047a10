package metrics

import (
	"math"
	"sort"
)

// StageSeries is a stage's time line in one-second buckets from t0, and its TTFT and ITL samples, for
// the per-stage charts.
type StageSeries struct {
	T0Ns, WNs, EEffNs int64
	Seconds           []float64 // bucket start, seconds after t0
	ReqPerSec         []float64 // successful requests that ended in the bucket
	// ErrorsPerSec is the failed requests (errors, and cancellations but the user's interrupt's)
	// that ended in the bucket: an outage shows as errors, not only as a gap in ReqPerSec.
	ErrorsPerSec []float64
	// SentPerSec is the requests that started in the bucket, whatever their outcome: the load
	// offered, against what was answered.
	SentPerSec     []float64
	OutTokPerSec   []float64
	TTFTP95Ms      []float64 // of successful requests that started in the bucket; NaN when none
	ActiveSessions []float64 // open at the bucket's middle
	TTFT, ITL      []float64 // in-window successes, sorted (ITL thinned to at most maxCDFPoints)
	E2E            []float64 // request latency of in-window successes
	// ITLByRequest holds each in-window success's per-token gaps (a chunk of k tokens is k gaps, as
	// the stage's ITL counts them; not thinned), for statistics that must know which gaps came from
	// the same request.
	ITLByRequest [][]float64
}

const maxCDFPoints = 5000

// Series builds the per-second view of records already summarized (sum gives the window).
func Series(recs []*Record, sum *StageSummary) StageSeries {
	b := NewSeriesBuilder(sum)
	for _, r := range recs {
		b.Add(r)
	}
	return b.Series()
}

// SeriesBuilder builds a StageSeries one record at a time, keeping of each only what the series
// needs (40 bytes of a success, and its token gaps when it is an in-window success): a stage of millions of
// records is charted without holding them (a merged 4 × 1M stage held 7 GiB of records).
type SeriesBuilder struct {
	s        StageSeries
	last     int64
	sessions map[string]*interval
	points   []seriesPoint
	// failEnds and starts are the failed requests' ends and every request's start.
	failEnds, starts []int64
}

// seriesPoint is what the one-second buckets need of a record.
type seriesPoint struct {
	start, end int64
	osl        int
	ttft       float64
	ttftOK     bool
}

// NewSeriesBuilder starts the series of a stage summarized as sum.
func NewSeriesBuilder(sum *StageSummary) *SeriesBuilder {
	s := StageSeries{T0Ns: sum.Window.T0Ns, WNs: sum.Window.WNs, EEffNs: sum.Window.EEffNs}
	return &SeriesBuilder{s: s, last: s.EEffNs, sessions: map[string]*interval{}}
}

// Add takes the next record, in file order.
func (b *SeriesBuilder) Add(r *Record) {
	if r.SummedApart() {
		return
	}
	if r.RequestEndNs.OK {
		b.last = max(b.last, r.RequestEndNs.V)
	}
	widenSession(b.sessions, r)
	b.starts = append(b.starts, r.RequestStartNs)
	if !r.OK() {
		if r.Error == nil || r.Error.Message != CancelledByInterrupt {
			b.failEnds = append(b.failEnds, endNs(r))
		}
		return
	}
	b.points = append(b.points, seriesPoint{start: r.RequestStartNs, end: r.RequestEndNs.V, osl: r.OutputSequenceLength.V,
		ttft: r.TTFT.V, ttftOK: r.TTFT.OK})
	s := &b.s
	if r.RequestStartNs < s.WNs || r.RequestStartNs >= s.EEffNs {
		return
	}
	appendOpt(&s.TTFT, r.TTFT)
	appendOpt(&s.E2E, r.RequestLatency)
	if gaps := r.TokenGaps(); len(gaps) > 0 {
		s.ITL = append(s.ITL, gaps...)
		s.ITLByRequest = append(s.ITLByRequest, gaps)
	}
}

// Series finishes the series; the builder is not used after.
func (b *SeriesBuilder) Series() StageSeries {
	s := b.s
	n := int(math.Ceil(float64(b.last-s.T0Ns)/1e9)) + 1
	if n <= 0 || n > 1_000_000 {
		return StageSeries{T0Ns: s.T0Ns, WNs: s.WNs, EEffNs: s.EEffNs}
	}
	s.Seconds = make([]float64, n)
	s.ReqPerSec, s.OutTokPerSec, s.TTFTP95Ms, s.ActiveSessions = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	s.ErrorsPerSec, s.SentPerSec = make([]float64, n), make([]float64, n)
	ttftBy := s.fill(b.points, n)
	s.count(s.ErrorsPerSec, b.failEnds)
	s.count(s.SentPerSec, b.starts)
	for i := range n {
		s.Seconds[i] = float64(i)
		s.TTFTP95Ms[i] = math.NaN()
		if len(ttftBy[i]) > 0 {
			sort.Float64s(ttftBy[i])
			s.TTFTP95Ms[i] = Percentile(ttftBy[i], 95)
		}
		mid := s.T0Ns + int64(i)*1e9 + 5e8
		for _, iv := range b.sessions {
			if iv.start <= mid && mid < iv.end {
				s.ActiveSessions[i]++
			}
		}
	}
	sort.Float64s(s.TTFT)
	sort.Float64s(s.ITL)
	if len(s.ITL) > maxCDFPoints { // evenly spaced order statistics keep the CDF's shape
		thin := make([]float64, maxCDFPoints)
		for i := range thin {
			thin[i] = s.ITL[i*(len(s.ITL)-1)/(maxCDFPoints-1)]
		}
		s.ITL = thin
	}
	return s
}

// bucket is the one-second bucket of ns among n, or −1 outside them.
func (s *StageSeries) bucket(ns int64, n int) int {
	b := int((ns - s.T0Ns) / 1e9)
	if ns < s.T0Ns || b >= n { // not b < 0: the division truncates [t0 − 1 s, t0) to bucket 0
		return -1
	}
	return b
}

// count adds one to each time's bucket of per.
func (s *StageSeries) count(per []float64, times []int64) {
	for _, ns := range times {
		if b := s.bucket(ns, len(per)); b >= 0 {
			per[b]++
		}
	}
}

// fill counts the successes into the n one-second buckets, and returns the TTFTs of each bucket's
// starts.
func (s *StageSeries) fill(points []seriesPoint, n int) [][]float64 {
	ttftBy := make([][]float64, n)
	bucket := func(ns int64) int { return s.bucket(ns, n) }
	for _, p := range points {
		if b := bucket(p.end); b >= 0 {
			s.ReqPerSec[b]++
			s.OutTokPerSec[b] += float64(p.osl)
		}
		if b := bucket(p.start); b >= 0 && p.ttftOK {
			ttftBy[b] = append(ttftBy[b], p.ttft)
		}
	}
	return ttftBy
}
