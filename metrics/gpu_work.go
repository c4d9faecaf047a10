package metrics

import "os"

// WindowWork is the work the server did inside a window, placed where it happened rather than
// counted whole at each request's end: what the window's energy is divided by. Throughput counts a
// request's tokens when it ends, which is right for a rate over a long window but off by up to one
// request per stream at each edge; closed-loop streams that start together end together, and an
// 8 s window of 8 streams counted 3 % more tokens than the server generated in it.
type WindowWork struct {
	// OutputTokens are the output tokens that arrived in the window, each token event at its time
	// (TTFT, then the records' inter_chunk_latency gaps; chunk_tokens weighs an event); a record
	// without its gaps spreads its tokens evenly from its first token (or start) to its end.
	OutputTokens float64
	// InputTokens are the prompts' tokens, each spread over its request's prefill (start to first
	// token, or the whole request without one).
	InputTokens float64
	// Turns are the requests' shares of the window: each the part of its span inside it.
	Turns float64
}

// ReadWindowWork reads a stage's records file for the work done in [wNs, eNs).
func ReadWindowWork(path string, wNs, eNs int64) (WindowWork, error) {
	var w WindowWork
	f, err := os.Open(path)
	if err != nil {
		return w, err
	}
	defer f.Close()
	err = ReadRecords(f, func(r *Record) error { w.add(r, wNs, eNs); return nil })
	return w, err
}

func (w *WindowWork) add(r *Record, wNs, eNs int64) {
	start := r.RequestStartNs
	end := r.RequestEndNs.V
	if !r.RequestEndNs.OK || end <= start {
		return // never answered, or no span to place it in
	}
	w.Turns += spanShare(start, end, wNs, eNs)
	first := end
	if r.TTFT.OK {
		first = start + int64(r.TTFT.V*1e6)
	}
	if r.InputSequenceLength.OK {
		w.InputTokens += float64(r.InputSequenceLength.V) * spanShare(start, max(first, start+1), wNs, eNs)
	}
	out := r.OutputSequenceLength.V
	if !r.OutputSequenceLength.OK || out <= 0 {
		return
	}
	if !r.TTFT.OK || len(r.InterChunkLatency) == 0 {
		from := start
		if r.TTFT.OK {
			from = first
		}
		if from >= end {
			w.OutputTokens += float64(out) * inside(end, wNs, eNs)
			return
		}
		w.OutputTokens += float64(out) * spanShare(from, end, wNs, eNs)
		return
	}
	events := len(r.InterChunkLatency) + 1
	each := float64(out) / float64(events) // without chunk_tokens, the tokens spread over the events
	t := float64(first)
	for i := range events {
		if i > 0 {
			t += r.InterChunkLatency[i-1] * 1e6
		}
		k := each
		if r.TokenWeighted() {
			k = float64(r.ChunkTokens[i])
		}
		w.OutputTokens += k * inside(int64(t), wNs, eNs)
	}
}

// spanShare is the part of [a, b) inside [lo, hi).
func spanShare(a, b, lo, hi int64) float64 {
	if b <= a {
		return 0
	}
	return float64(overlap(a, b, lo, hi)) / float64(b-a)
}

func inside(t, lo, hi int64) float64 {
	if t >= lo && t < hi {
		return 1
	}
	return 0
}
