package engine

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/plload/plload/engine/h1client"
	"github.com/plload/plload/sse"
)

// readPolled reads a streamed answer's events on the poller (h1client.ReadPolled) when body is a
// chunked body of plload's HTTP/1.1 client that has one; ok is false otherwise (nothing read: the
// caller reads body itself). The events go through takeEvent as readEvents takes them, each stamped
// with the time the read that brought it returned. Once the events are over, the rest of the body —
// the chunked terminator, normally in the same read — is waited for up to drainLimit, as drainBody
// does, so the connection goes back to the pool for the session's next turn.
func (s *stageRun) readPolled(reqCtx context.Context, ex *exchange, body io.Reader) (st *streamRead, ok bool) {
	if !h1client.Pollable(body) {
		return nil, false
	}
	st = streamReads.Get().(*streamRead)
	rd := s.api.NewStreamReader(nil, s.maxEventBytes)
	defer rd.Release()
	events := &polledEvents{rd: rd, emit: func(ev sse.Event, err error) bool { return s.takeEvent(st, ex, ev, err) }}
	if err := h1client.ReadPolled(reqCtx, body, drainLimit, events); err != nil {
		st.readFailed = err
		return st, true
	}
	if st.last.IsZero() {
		st.last = time.Now()
	}
	return st, true
}

// polledEvents is the engine's side of a body the poller reads: an SSE reader fed a read at a
// time, whose messages go to emit (takeEvent).
type polledEvents struct {
	rd   *sse.Reader
	emit func(sse.Event, error) bool
}

var _ h1client.Sink = (*polledEvents)(nil)

// Feed decodes one read's payload.
func (e *polledEvents) Feed(payload []byte, at time.Time) bool { return e.rd.Feed(payload, at, e.emit) }

// End ends the stream: whole (io.EOF), it gives what the end completes; otherwise the error.
func (e *polledEvents) End(err error) {
	if errors.Is(err, io.EOF) {
		e.rd.End(e.emit)
		return
	}
	e.emit(sse.Event{}, err)
}

// poller is the poller reading the stage's streamed answers; nil when its client has none.
func (s *stageRun) poller() *h1client.Poller {
	if h1, ok := s.client.Transport.(*h1client.Transport); ok {
		return h1.Config().Poller
	}
	return nil
}
