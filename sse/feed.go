package sse

import (
	"bytes"
	"time"
)

// Feed is Next turned around, for a caller that reads the connection itself (the engine's poller,
// which reads many streams on one goroutine): p is what one read returned, at the time it
// returned, and emit gets each message p completes, in order, exactly as Next would have returned
// it — the same lines through the same steps. A line cut by the end of p waits for the next Feed.
// emit returning false stops the feed (the rest of p is dropped) and Feed returns false.
func (r *Reader) Feed(p []byte, at time.Time, emit func(Event, error) bool) bool {
	r.tr.last = at
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if r.skipping {
			if i < 0 {
				return true
			}
			r.skipping, p = false, p[i+1:]
			continue
		}
		if i < 0 {
			if len(r.line)+len(p) > r.maxLine() {
				r.line, r.skipping = r.line[:0], true
				return emit(Event{}, r.tooLarge())
			}
			r.line = append(r.line, p...)
			return true
		}
		raw := p[:i]
		if len(r.line) > 0 {
			r.line = append(r.line, raw...)
			raw = r.line
		}
		p = p[i+1:]
		line, err := r.lineOf(raw)
		r.line = r.line[:0] // line may still be its bytes: nothing appends to r.line before it is used
		if err != nil {
			if !emit(Event{}, err) {
				return false
			}
			continue
		}
		if value, n := r.wholeData(line, p[:min(2, len(p))]); n > 0 {
			p = p[n:]
			ev, err := r.dispatch(value)
			r.reset()
			if !emit(ev, err) {
				return false
			}
			continue
		}
		if ev, ok, err := r.step(line); ok && !emit(ev, err) {
			return false
		}
	}
	return true
}

// End is the stream's end for a Reader fed with Feed: a last line without its terminator is taken,
// then emit gets what Next returns at the end — the message the end cut when it is whole anyway,
// then io.EOF; or io.ErrUnexpectedEOF for a message cut short.
func (r *Reader) End(emit func(Event, error) bool) {
	if len(r.line) > 0 && !r.skipping {
		line, err := r.lineOf(r.line)
		r.line = r.line[:0]
		if err != nil {
			emit(Event{}, err)
			return
		}
		if ev, ok, err := r.step(line); ok && !emit(ev, err) {
			return
		}
	}
	for { // what the end cut, when whole, then io.EOF: as successive calls of Next return them
		ev, err := r.atEnd()
		if !emit(ev, err) || err != nil {
			return
		}
	}
}
