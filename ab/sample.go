// Package ab compares two targets' stages measured over one window (docs/measurement.md): per metric
// B's value minus A's, a bootstrap interval of that difference, and a verdict of B relative to A
// (Compare, which only reads samples and returns numbers), and ab.md's text. Running both targets in
// step is package ab/lockstep's.
package ab

import (
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// Completion is a successful request that ended in the window: when, and what it streamed back.
type Completion struct {
	AtS    float64 // its end, seconds after W
	Tokens float64 // output_sequence_length
	Chars  float64 // output_char_count
}

// Sample is what the comparison needs of one target's stage, by the window rules of docs/measurement.md:
// latencies of the successful requests that started in [W, E_eff), throughput from the successful
// requests that ended in it.
type Sample struct {
	WindowS float64 // E_eff − W
	// Per in-window success, in ms.
	TTFT, TTFO, E2E, TPOT []float64
	// TPOC is the time per output character after the first token: (E2E − TTFT) ÷ output chars, the
	// TPOT of a comparison that must not depend on either server's tokenizer.
	TPOC []float64
	// ITL holds each in-window success's token gaps (a chunk of k tokens is k gaps): one group per request, for the cluster
	// bootstrap (a request's gaps share its batch and its moment).
	ITL [][]float64
	// Failed is 1 for each in-window request that failed or was cancelled (not by the user's interrupt), 0
	// for a success: the error rate is its mean, and resampling it resamples requests.
	Failed []float64
	// Completed are the successes that ended in the window: the throughputs' numerators.
	Completed []Completion
	// CharsKnown is false when a counted request had no output_char_count (AIPerf's records).
	CharsKnown bool
	Counts     resultfiles.ABCounts
}

// Collector builds a Sample one record at a time, in any order.
type Collector struct {
	w, e int64
	s    Sample
}

// NewCollector starts the sample of a stage whose window is [wNs, eEffNs) (stage.json's window.w_ns
// and window.e_eff_ns).
func NewCollector(wNs, eEffNs int64) *Collector {
	c := &Collector{w: wNs, e: eEffNs}
	c.s.WindowS = max(0, float64(eEffNs-wNs)/1e9)
	c.s.CharsKnown = true
	return c
}

func (c *Collector) inWindow(ns int64) bool { return ns >= c.w && ns < c.e }

// Add takes one record.
func (c *Collector) Add(r *metrics.Record) {
	if r.SummedApart() {
		return // a RAG step: not one of the stage's requests (metrics.Record.SummedApart)
	}
	if r.OK() && r.RequestEndNs.OK && c.inWindow(r.RequestEndNs.V) {
		c.output(r)
	}
	if !c.inWindow(r.RequestStartNs) {
		return
	}
	s := &c.s
	s.Counts.InWindow++
	switch {
	case r.WasCancelled: // checked first: a cancelled request carries an error too (499)
		s.Counts.Cancelled++
		if r.Error == nil || r.Error.Message != metrics.CancelledByInterrupt {
			s.Failed = append(s.Failed, 1)
		} // one the user's interrupt cut off is no failure of the server: left out, as stage.json leaves it
		return
	case r.Error != nil:
		s.Counts.Errors++
		if r.Error.Code.OK && r.Error.Code.V == metrics.StatusTooManyRequests {
			s.Counts.RateLimited++
		}
		s.Failed = append(s.Failed, 1)
		return
	}
	s.Counts.Succeeded++
	s.Failed = append(s.Failed, 0)
	appendOpt(&s.TTFT, r.TTFT)
	appendOpt(&s.TTFO, r.TTFO)
	appendOpt(&s.E2E, r.RequestLatency)
	if gaps := r.TokenGaps(); len(gaps) > 0 { // per token, as stage.json's pooled ITL
		s.ITL = append(s.ITL, gaps)
	}
	if !r.TTFT.OK || !r.RequestLatency.OK {
		return
	}
	decode := r.RequestLatency.V - r.TTFT.V
	appendOpt(&s.TPOT, metrics.RequestTPOT(r)) // stage.json's tpot_ms rule
	if r.OutputChars.OK && r.OutputChars.V > 0 {
		s.TPOC = append(s.TPOC, decode/float64(r.OutputChars.V))
	}
}

// output adds a success that ended in the window.
func (c *Collector) output(r *metrics.Record) {
	done := Completion{AtS: float64(r.RequestEndNs.V-c.w) / 1e9}
	if r.OutputSequenceLength.OK {
		done.Tokens = float64(r.OutputSequenceLength.V)
	}
	if r.OutputChars.OK {
		done.Chars = float64(r.OutputChars.V)
	} else {
		c.s.CharsKnown = false
	}
	c.s.Completed = append(c.s.Completed, done)
}

// Sample returns the sample; the collector is not used after.
func (c *Collector) Sample() Sample { return c.s }

func appendOpt(to *[]float64, v metrics.Opt[float64]) {
	if v.OK {
		*to = append(*to, v.V)
	}
}
