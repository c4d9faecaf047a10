package h1client

import (
	"context"
	"errors"
	"io"
	"time"
)

// Sink takes a streamed answer's body as the poller reads it: the engine decodes it (SSE). Its
// methods are called one at a time, on a poller loop's goroutine between other streams' reads (or
// on the request's, for the bytes that came with the headers): they must be short.
type Sink interface {
	// Feed takes the payload of one read, its chunked framing taken off, stamped with the time the
	// read returned; false says no more is needed (the answer's last event came). payload is the
	// poller's buffer: it is valid only during the call.
	Feed(payload []byte, at time.Time) bool
	// End is called once, when the body ends before Feed said no more was needed: io.EOF when it
	// ended whole, else what ended it (a cut or reset connection, bad chunked framing, or the
	// request's context's error when ReadPolled's ctx ended first).
	End(err error)
}

// Pollable says whether body is one ReadPolled reads: a chunked answer's body from a Transport
// with a Poller, neither read nor closed yet.
func Pollable(body io.Reader) bool {
	hb, ok := body.(*h1Body)
	return ok && hb.polled && !hb.done.Load()
}

// ReadPolled reads body, which must be Pollable, on its transport's poller, giving sink its payload
// a read at a time, each stamped with the time the read that brought it returned (the bytes that
// came with the headers, with that read's). It returns once sink needs no more or the body ended,
// with body finished: closed, or its connection back in the pool.
//
// Once sink needs no more, the rest of the body — the chunked terminator, normally in the same
// read — is waited for up to drain (which must be positive), so the connection goes back to the
// pool for the session's next turn; a body that has not ended by then costs its connection, not its
// answer. ctx is the request's: when it ends first, the body is abandoned (sink.End hears
// ctx.Err()) and its connection closed. An error says the poller would not take the body (sink may
// have had the bytes that came with the headers); body is then closed.
func ReadPolled(ctx context.Context, body io.Reader, drain time.Duration, sink Sink) error {
	hb, ok := body.(*h1Body)
	if !ok || !hb.polled || hb.done.Load() {
		return errors.New("h1client.ReadPolled: not a body the poller reads (see Pollable)")
	}
	c := hb.c
	// The bytes of the body that came with the headers are taken first, stamped with the time the
	// read that brought them returned, rewritten in place in the connection's buffer, then dropped
	// from it.
	n := c.br.Buffered()
	buffered, _ := c.br.Peek(n)
	pb, err := hb.t.poller.watch(c.fd, buffered, c.reads.last, sink)
	c.br.Discard(n)
	if err != nil {
		hb.Close()
		return err
	}
	if !awaitPolled(ctx, pb, 0) {
		hb.Close()
	} else if !awaitPolled(ctx, pb, drain) {
		hb.Close() // the events are over; the connection goes, not the answer
	} else if _, whole := pb.ended(); whole {
		hb.finish(true)
	} else {
		hb.Close()
	}
	return nil
}

// errDrainExpired: the events were over, and the rest of the body did not come within the drain.
var errDrainExpired = errors.New("the answer's body did not end within the drain limit after its last event")

// awaitPolled waits for pb's next signal: with limit 0, for its sink to need no more; with a limit,
// for its body to end, at most that long. False when it was abandoned instead — its request's
// context ended (the sink hears why) or the limit passed — and the connection must be closed.
func awaitPolled(reqCtx context.Context, pb *polledBody, limit time.Duration) bool {
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
