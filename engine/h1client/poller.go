package h1client

import (
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Poller reads the bodies of streamed answers for every connection of a Transport on a few
// goroutines, one per P, each waiting on an epoll instance of its own (bench/README.md, "Fourth pass"). With a goroutine
// blocked per stream, every chunk cost two read syscalls — the one that returns it and an empty one
// before the goroutine parks — and a wake-up of that goroutine through Go's poller. A loop here
// wakes once per batch of ready connections and reads each once: epoll says it has bytes. Each
// epoll instance is itself watched by Go's poller, so an idle loop is a parked goroutine, not a
// blocked thread. Side by side at 512 streams, the bare loop of bench/chunkcost_test.go costs
// 12.4 µs per chunk read this way and 21.2 µs through net/http (bench/README.md).
//
// A connection stays in Go's poller too (its requests are written, and its headers read, there); it
// is in a loop's epoll only while a body is read, and the loop reads it with plain read(2).
//
// A loop reads a whole batch before it decodes any of it (each read stamped as it returns), and
// serves another loop's instance when that one has gone unserved for stallAfter (relieve): a stalled
// loop no longer holds up its connections' timestamps while the others are free (bench/README.md,
// "Fifth pass").
type Poller struct {
	loops []*pollLoop
	// watched counts the bodies given to the poller (Watched).
	watched atomic.Int64
	// lagSink is the stage whose read lag the loops probe (ReadLag); nil: none.
	lagSink atomic.Pointer[ReadLag]
}

var (
	sharedPoller     *Poller
	sharedPollerErr  error
	sharedPollerOnce sync.Once
)

// SharedPoller is the process's poller, started on first use with a loop per P; its loops live as
// long as the process. An error means the platform would not give one (not Linux): the client then
// reads each body on its request's goroutine.
func SharedPoller() (*Poller, error) {
	sharedPollerOnce.Do(func() { sharedPoller, sharedPollerErr = startPoller(runtime.GOMAXPROCS(0)) })
	return sharedPoller, sharedPollerErr
}

func startPoller(n int) (*Poller, error) {
	p := &Poller{}
	for range max(n, 1) {
		l, err := newPollLoop(&p.lagSink)
		if err != nil {
			return nil, err
		}
		p.loops = append(p.loops, l)
	}
	for _, l := range p.loops {
		l.start(p.loops)
	}
	return p, nil
}

// polledBody is one answer's body while a loop reads it.
type polledBody struct {
	loop *pollLoop
	id   uint64
	fd   int
	// sink takes the body's bytes, a read at a time (Sink.Feed), and hears of its end before it said
	// it needed no more (Sink.End).
	sink Sink

	mu      sync.Mutex // held by the loop while it reads; by whoever ends the body early
	dc      dechunker
	reading bool // a loop read it and has not yet taken what it read: no other loop may read it now
	woke    bool // its request was signalled since the loop that reads it last looked (took)
	fed     bool // the sink said it needed no more, or heard of the end
	out     bool // left the loop: the outcome below is final
	whole   bool // the body was read to its end with nothing after it: the connection can be kept
	signal  chan struct{}
}

// watch starts reading fd's body on a loop, first taking buffered: the bytes of it already read with
// the headers (rewritten in place). It returns the body, whose signal is sent when the sink needs
// no more and again when the body leaves the loop (once if both happen together).
func (p *Poller) watch(fd int, buffered []byte, at time.Time, sink Sink) (*polledBody, error) {
	p.watched.Add(1)
	// A loop drawn at random, not in turn: requests that come in a fixed order (plload ab's two
	// targets, in step) would otherwise each keep to one loop, and whatever sets one loop apart
	// from another would read as a difference between them.
	l := p.loops[rand.IntN(len(p.loops))]
	b := &polledBody{loop: l, fd: fd, sink: sink, signal: make(chan struct{}, 2)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(buffered) > 0 && b.take(buffered, at) {
		return b, nil
	}
	if err := l.add(b); err != nil {
		return nil, err
	}
	return b, nil
}

// take dechunks and feeds one read's bytes; true when the body left the loop's care (ended, whole
// or not). Called with b.mu held.
func (b *polledBody) take(p []byte, at time.Time) bool {
	payload, rest, done, err := b.dc.take(p)
	if len(payload) > 0 && !b.fed && !b.sink.Feed(payload, at) {
		b.fed = true
		b.signalRequest()
	}
	switch {
	case err != nil:
		b.leave(err)
	case done:
		b.whole = len(rest) == 0
		b.leave(io.EOF)
	default:
		return false
	}
	return true
}

// finish ends the body: the reader hears of the end when it was still reading, and the request
// is signalled. Called with b.mu held.
func (b *polledBody) finish(err error) {
	if !b.fed {
		b.fed = true
		b.sink.End(err)
	}
	b.out = true
	b.signalRequest()
}

// signalRequest wakes the request's goroutine, and notes it for the loop reading the body (which
// then yields soon, see pollLoop.yield).
func (b *polledBody) signalRequest() {
	b.signal <- struct{}{}
	b.woke = true
}

// leave ends the body with err, out of its loop first: once signalled, its request may put the
// connection back in the pool, and another body may put it in a loop. Called with b.mu held.
func (b *polledBody) leave(err error) {
	b.unwatch()
	b.finish(err)
}

// unwatch takes the connection out of its loop.
func (b *polledBody) unwatch() {
	if b.id == 0 {
		return
	}
	b.loop.remove(b)
	b.id = 0
}

// abandon ends the body from its request's side (its context ended, or the drain after [DONE] ran
// out); a reader still reading hears cause. It returns once the loop will not touch the body or its
// connection again, so the caller may close the connection; false when the body had already ended
// by itself.
func (b *polledBody) abandon(cause error) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.out {
		return false
	}
	b.unwatch()
	b.out = true
	if !b.fed {
		b.fed = true
		b.sink.End(cause)
	}
	return true
}

// ended says whether the body has left the loop, and whether it was read whole (the connection
// can carry another request).
func (b *polledBody) ended() (out, whole bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out, b.whole
}

// ReadLag is how long after bytes arrived the poller read them, over one stage: about every
// readLagEvery while it is busy, each loop makes a probe descriptor of its own readable, noting the
// time, and records the wait when it reads it among the connections. It is the lateness a chunk's
// timestamp gets from the client, which Go's scheduler latency only stood in for when a goroutine
// per stream read it (that figure now counts only per-request wake-ups, and reads high: 25–40 ms at
// 500 streams on 2 cores while chunk timestamps stayed within a millisecond of the mock's send
// times).
type ReadLag struct {
	p  *Poller
	mu sync.Mutex
	h  *hdrhistogram.Histogram // µs
}

// readLagEvery is how often a busy loop is probed.
const readLagEvery = 10 * time.Millisecond

func (r *ReadLag) record(d time.Duration) {
	r.mu.Lock()
	r.h.RecordValue(max(d.Microseconds(), 1))
	r.mu.Unlock()
}

// P99Ms is the lag's 99th percentile in ms; false before any probe was read.
func (r *ReadLag) P99Ms() (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h.TotalCount() == 0 {
		return 0, false
	}
	return float64(r.h.ValueAtQuantile(99)) / 1000, true
}

// MeasureReadLag has the loops probe their read lag into a new ReadLag until its Stop; one stage is
// measured at a time (a later call takes the loops over).
func (p *Poller) MeasureReadLag() *ReadLag {
	r := &ReadLag{p: p, h: hdrhistogram.New(1, 60_000_000, 2)}
	p.lagSink.Store(r)
	return r
}

// Stop ends the probes into r; what it measured stays readable.
func (r *ReadLag) Stop() { r.p.lagSink.CompareAndSwap(r, nil) }

// Watched is how many bodies were given to the poller so far (tests check that a path went
// through it).
func (p *Poller) Watched() int64 { return p.watched.Load() }
