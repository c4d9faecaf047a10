package engine

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/plload/plload/sse"
)

// readPolled reads a streamed answer's events on the poller (poller.go) when body is a chunked body
// of plload's HTTP/1.1 client that has one; ok is false otherwise (nothing read: the caller reads
// body itself). The events go through takeEvent as readEvents takes them, each stamped with the
// time the read that brought it returned. Once the events are over, the rest of the body — the
// chunked terminator, normally in the same read — is waited for up to drainLimit, as drainBody
// does, so the connection goes back to the pool for the session's next turn.
func (s *stageRun) readPolled(reqCtx context.Context, ex *exchange, body io.Reader) (st *streamRead, ok bool) {
	hb, isH1 := body.(*h1Body)
	if !isH1 || !hb.polled || hb.done.Load() {
		return nil, false
	}
	st = streamReads.Get().(*streamRead)
	rd := sse.NewReader(nil, s.maxEventBytes)
	defer rd.Release()
	emit := func(ev sse.Event, err error) bool { return s.takeEvent(st, ex, ev, err) }
	feed := func(payload []byte, at time.Time) bool { return rd.Feed(payload, at, emit) }
	end := func(err error) {
		if errors.Is(err, io.EOF) {
			rd.End(emit)
			return
		}
		emit(sse.Event{}, err)
	}
	c := hb.c
	// The bytes of the body that came with the headers are taken first, stamped with the time the
	// read that brought them returned, rewritten in place in the connection's buffer, then dropped
	// from it.
	n := c.br.Buffered()
	buffered, _ := c.br.Peek(n)
	pb, err := hb.t.poller.watch(c.fd, buffered, c.reads.last, feed, end)
	c.br.Discard(n)
	if err != nil {
		st.readFailed = err
		hb.Close()
		return st, true
	}
	if !s.awaitPolled(reqCtx, pb, 0) {
		hb.Close()
	} else if !s.awaitPolled(reqCtx, pb, drainLimit) {
		hb.Close() // the events are over; the connection goes, not the answer
	} else if _, whole := pb.ended(); whole {
		hb.finish(true)
	} else {
		hb.Close()
	}
	if st.last.IsZero() {
		st.last = time.Now()
	}
	return st, true
}

// errDrainExpired: the events were over, and the rest of the body did not come within drainLimit.
var errDrainExpired = errors.New("the answer's body did not end within the drain limit after its last event")

// awaitPolled waits for pb's next signal: with limit 0, for its events to be over; with a limit, for
// its body to end, at most that long. False when it was abandoned instead — its request's context
// ended (the reader hears why) or the limit passed — and the connection must be closed.
func (s *stageRun) awaitPolled(reqCtx context.Context, pb *polledBody, limit time.Duration) bool {
	if out, _ := pb.ended(); out && limit > 0 {
		return true
	}
	var expired <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-pb.signal:
		return true
	case <-reqCtx.Done():
		if pb.abandon(reqCtx.Err()) {
			return false
		}
	case <-expired:
		if pb.abandon(errDrainExpired) {
			return false
		}
	}
	<-pb.signal // it ended by itself as it was abandoned
	return true
}

// poller is the poller reading the stage's streamed answers; nil when its client has none.
func (s *stageRun) poller() *poller {
	if h1, ok := s.client.Transport.(*h1Transport); ok {
		return h1.poller
	}
	return nil
}
