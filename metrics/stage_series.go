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
	OutTokPerSec      []float64
	TTFTP95Ms         []float64 // of successful requests that started in the bucket; NaN when none
	ActiveSessions    []float64 // open at the bucket's middle
	TTFT, ITL         []float64 // in-window successes, sorted (ITL thinned to at most maxCDFPoints)
	E2E               []float64 // request latency of in-window successes
	// ITLByRequest holds each in-window success's chunk gaps (not thinned; it shares the records'
	// memory), for statistics that must know which gaps came from the same request.
	ITLByRequest [][]float64
}

const maxCDFPoints = 5000

// Series builds the per-second view of records already summarized (sum gives the window).
func Series(recs []*Record, sum *StageSummary) StageSeries {
	s := StageSeries{T0Ns: sum.Window.T0Ns, WNs: sum.Window.WNs, EEffNs: sum.Window.EEffNs}
	last := s.EEffNs
	sessions := map[string]*interval{}
	for _, r := range recs {
		if r.RequestEndNs.OK {
			last = max(last, r.RequestEndNs.V)
		}
		widenSession(sessions, r)
	}
	n := int(math.Ceil(float64(last-s.T0Ns)/1e9)) + 1
	if n <= 0 || n > 1_000_000 {
		return s
	}
	s.Seconds = make([]float64, n)
	s.ReqPerSec, s.OutTokPerSec, s.TTFTP95Ms, s.ActiveSessions = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	ttftBy := s.fill(recs, n)
	for b := range n {
		s.Seconds[b] = float64(b)
		s.TTFTP95Ms[b] = math.NaN()
		if len(ttftBy[b]) > 0 {
			sort.Float64s(ttftBy[b])
			s.TTFTP95Ms[b] = Percentile(ttftBy[b], 95)
		}
		mid := s.T0Ns + int64(b)*1e9 + 5e8
		for _, iv := range sessions {
			if iv.start <= mid && mid < iv.end {
				s.ActiveSessions[b]++
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

// fill counts the successes into the n one-second buckets and the window's samples, and returns
// the TTFTs of each bucket's starts.
func (s *StageSeries) fill(recs []*Record, n int) [][]float64 {
	ttftBy := make([][]float64, n)
	bucket := func(ns int64) int {
		b := int((ns - s.T0Ns) / 1e9)
		if ns < s.T0Ns || b >= n { // not b < 0: the division truncates [t0 − 1 s, t0) to bucket 0
			return -1
		}
		return b
	}
	for _, r := range recs {
		if !r.OK() {
			continue
		}
		if b := bucket(r.RequestEndNs.V); b >= 0 {
			s.ReqPerSec[b]++
			s.OutTokPerSec[b] += float64(r.OutputSequenceLength.V)
		}
		if b := bucket(r.RequestStartNs); b >= 0 && r.TTFT.OK {
			ttftBy[b] = append(ttftBy[b], r.TTFT.V)
		}
		if r.RequestStartNs < s.WNs || r.RequestStartNs >= s.EEffNs {
			continue
		}
		appendOpt(&s.TTFT, r.TTFT)
		appendOpt(&s.E2E, r.RequestLatency)
		s.ITL = append(s.ITL, r.InterChunkLatency...)
		if len(r.InterChunkLatency) > 0 {
			s.ITLByRequest = append(s.ITLByRequest, r.InterChunkLatency)
		}
	}
	return ttftBy
}
