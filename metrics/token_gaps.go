package metrics

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Pooled ITL is per token, not per chunk (docs/measurement.md): a server that streams several tokens
// in one chunk (llama.cpp sends a 14-token tool call in two) waits once for all of them, and counting
// that wait as one inter-token gap makes ITL many times TPOT for traffic that is in fact fast.
// inter_chunk_latency keeps the gaps between chunks as AIPerf defines them; chunk_tokens says how
// many output tokens each chunk carried, and the pooled ITL weighs a gap g before a chunk of k
// tokens as k gaps of g/k. The first chunk's tokens have no gap before them (their wait is TTFT),
// so they add nothing.

// tagChunkTokens is the output tokens of each token event (Record.ChunkTokens).
const tagChunkTokens = "chunk_tokens"

// TokenWeighted reports whether the record says how many tokens each chunk carried: ChunkTokens
// has one count per token event.
func (r *Record) TokenWeighted() bool {
	return len(r.InterChunkLatency) > 0 && len(r.ChunkTokens) == len(r.InterChunkLatency)+1
}

// TokenGaps is the request's part of the pooled ITL: each chunk gap g before a chunk of k tokens as
// k values g/k. Without chunk_tokens every chunk is one token and the gaps are returned as they are
// (the record's own slice: not to be changed).
func (r *Record) TokenGaps() []float64 {
	if !r.TokenWeighted() {
		return r.InterChunkLatency
	}
	return r.AppendTokenGaps(nil)
}

// AppendTokenGaps appends TokenGaps to dst.
func (r *Record) AppendTokenGaps(dst []float64) []float64 {
	if !r.TokenWeighted() {
		return append(dst, r.InterChunkLatency...)
	}
	for i, g := range r.InterChunkLatency {
		k := max(r.ChunkTokens[i+1], 1)
		for range k {
			dst = append(dst, g/float64(k))
		}
	}
	return dst
}

// checkChunkTokens is the reader's check of chunk_tokens against the record's gaps.
func checkChunkTokens(r *Record) error {
	if len(r.ChunkTokens) == 0 {
		return nil
	}
	if want := len(r.InterChunkLatency) + 1; len(r.ChunkTokens) != want {
		return fmt.Errorf("metrics.%s: %d counts for %d token events (inter_chunk_latency has %d gaps); accepted: one count per token event",
			tagChunkTokens, len(r.ChunkTokens), want, len(r.InterChunkLatency))
	}
	for i, k := range r.ChunkTokens {
		if k < 1 {
			return fmt.Errorf("metrics.%s: item %d is %d; accepted: whole numbers ≥ 1", tagChunkTokens, i, k)
		}
	}
	return nil
}

// chunkTokensFrom converts the list read from a file: whole numbers only.
func chunkTokensFrom(v []float64) ([]int, error) {
	out := make([]int, len(v))
	for i, f := range v {
		if f != math.Trunc(f) || math.Abs(f) > 1<<30 {
			return nil, fmt.Errorf("metrics.%s: item %d is %v; accepted: whole numbers ≥ 1", tagChunkTokens, i, f)
		}
		out[i] = int(f)
	}
	return out, nil
}

// addRecordGaps adds a successful in-window record's token gaps to the pooled ITL, and keeps the
// plain chunk gaps apart from the first record whose chunks carried several tokens: until then the
// two are the same, and most stages never keep a second pool.
func (s *Stage) addRecordGaps(r *Record) {
	if r.TokenWeighted() && s.chunkGaps == nil {
		s.chunkGaps = s.itl.clone()
	}
	if s.chunkGaps != nil {
		s.chunkGaps.add(r.InterChunkLatency)
	}
	if !r.TokenWeighted() {
		s.itl.add(r.InterChunkLatency)
		return
	}
	s.scratch = r.AppendTokenGaps(s.scratch[:0])
	s.itl.add(s.scratch)
}

// interChunk is the summary of the plain chunk gaps when they differ from the pooled ITL.
func (s *Stage) interChunk() *Dist {
	if s.chunkGaps == nil {
		return nil
	}
	d := s.chunkGaps.dist()
	return &d
}

// gapPool pools gaps (ms) exactly up to limit, then in an HDR histogram of 3 significant digits
// (0.1 % resolution), so that a long stage's millions of gaps cost a fixed memory. The stage's
// pooled ITL, its plain chunk gaps and each absorption window's ITL are one each.
type gapPool struct {
	limit int
	gaps  []float64
	hdr   *hdrhistogram.Histogram
}

func (p *gapPool) add(gaps []float64) {
	if p.hdr == nil && len(p.gaps)+len(gaps) <= p.limit {
		p.gaps = append(p.gaps, gaps...)
		return
	}
	if p.hdr == nil {
		p.hdr = hdrhistogram.New(1, int64(time.Hour), 3)
		for _, g := range p.gaps {
			p.hdr.RecordValue(nsOf(g))
		}
		p.gaps = nil
	}
	for _, g := range gaps {
		p.hdr.RecordValue(nsOf(g))
	}
}

// clone is an independent copy of the pool.
func (p *gapPool) clone() *gapPool {
	c := &gapPool{limit: p.limit, gaps: slices.Clone(p.gaps)}
	if p.hdr != nil {
		c.hdr = hdrhistogram.Import(p.hdr.Export())
	}
	return c
}

func (p *gapPool) dist() Dist {
	if p.hdr == nil {
		return summarize(p.gaps)
	}
	return hdrDist(p.hdr)
}

// hdrDist summarizes a histogram of nanoseconds in milliseconds.
func hdrDist(h *hdrhistogram.Histogram) Dist {
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	q := func(p float64) float64 { return ms(h.ValueAtQuantile(p)) }
	return Dist{N: int(h.TotalCount()), Mean: h.Mean() / 1e6, Min: ms(h.Min()), Max: ms(h.Max()), Std: h.StdDev() / 1e6,
		P1: q(1), P5: q(5), P10: q(10), P25: q(25), P50: q(50), P75: q(75), P90: q(90), P95: q(95), P99: q(99)}
}
