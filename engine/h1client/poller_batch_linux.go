package h1client

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// readBatch reads the connections of events, each into its own part of the loop's buffer and
// stamped as its read returns, until the events or the buffer run out; it returns the index (from
// is the first event's) of the first event left unread. Reading the whole batch before decoding any
// of it keeps a connection's timestamp from waiting for the decoding of those read before it, and
// from a stall of the loop's thread in the middle of that work: at 500 streams in the self-test, a
// connection waited 200–280 µs (p99) and up to 6–9 ms for the others of its batch to be decoded
// before its read (bench/README.md, "Fifth pass").
func (l *pollLoop) readBatch(events []syscall.EpollEvent, from int) int {
	l.batch = l.batch[:0]
	off := 0
	for i := range events {
		if len(l.buf)-off < minBatchRead {
			return from + i
		}
		b := l.body(&events[i], l)
		if b == nil {
			continue
		}
		buf := l.buf[off:min(off+maxBatchRead, len(l.buf))]
		r := pendingRead{b: b}
		if r.n, r.errno, r.at, r.ok = b.read(buf); r.ok {
			r.p = buf[:max(r.n, 0)]
			off += len(r.p)
			l.batch = append(l.batch, r)
		}
	}
	return from + len(events)
}

// takeBatch hands each read of the batch to its body.
func (l *pollLoop) takeBatch() {
	for i := range l.batch {
		r := &l.batch[i]
		if r.b.took(r.p, r.n, r.errno, r.at) {
			l.woke = true
		}
		*r = pendingRead{} // the loop keeps no body past its batch
	}
}

// body is the body an event of src's instance is about, if it is still there; the probe's event
// (id 0) is read here when l is src, and left to src's loop otherwise.
func (l *pollLoop) body(ev *syscall.EpollEvent, src *pollLoop) *polledBody {
	id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
	if id == 0 {
		if src == l {
			l.probed()
		}
		return nil
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	return src.streams[id]
}

// pendingRead is one connection's read in a batch, waiting to be decoded.
type pendingRead struct {
	b     *polledBody
	p     []byte // the bytes read, in the loop's buffer
	n     int
	errno syscall.Errno
	at    time.Time
	ok    bool
}

// A batch's reads share the loop's buffer: each may fill up to maxBatchRead of it, and a batch
// stops reading (decodes, then reads on) when less than minBatchRead is left. What a read leaves in
// the socket, epoll reports again.
const (
	batchBuffer  = 256 << 10
	maxBatchRead = 64 << 10
	minBatchRead = 4 << 10
)

// relieve serves the instance of another loop, the next in turn, when nobody has served it for
// l.relieveAfter; true when it read something there. A loop's connections are its own: while its
// goroutine waits for a thread, or its thread for a CPU, or it is stalled in the middle of a batch,
// they would wait for it, however idle the other loops. With a goroutine per stream, the runtime
// moved the waiting readers to another P; this does the same for a loop's connections. Each read
// here is taken before the next (no two-phase batch), under the body's lock, so a connection read
// by two loops at once is read and decoded in one order; one its own loop has read and not yet
// taken is skipped.
func (l *pollLoop) relieve() bool {
	if len(l.peers) < 2 {
		return false
	}
	l.nextPeer = (l.nextPeer + 1) % len(l.peers)
	if l.peers[l.nextPeer] == l {
		l.nextPeer = (l.nextPeer + 1) % len(l.peers)
	}
	peer := l.peers[l.nextPeer]
	if peer.bodies.Load() == 0 {
		return false
	}
	last, now := peer.servedAt.Load(), pollClock()
	if now-last < int64(l.relieveAfter) || !peer.servedAt.CompareAndSwap(last, now) {
		return false
	}
	n, errno := epollWaitNow(peer.epfd, l.events)
	if errno != 0 || n <= 0 {
		return false
	}
	read := false
	for i := range n {
		if b := l.body(&l.events[i], peer); b != nil {
			woke, ok := b.readTake(l.buf)
			read = read || ok
			l.woke = l.woke || woke
		}
	}
	if read {
		peer.relieved.Add(1)
	}
	return read
}

// stallAfter is how long a loop's instance may go unserved before another loop serves it
// (pollLoop.relieveAfter; a test sets 0 to have the loops relieve each other at every turn). A busy
// loop serves its instance every few tens of µs (the self-test at 500 streams: p50 batch 1 body);
// an idle one with bodies in it is looked at by the others at most this often, an epoll_wait each
// time (one with none, not at all).
const stallAfter = 200 * time.Microsecond

// read reads what b's connection has into buf (the loop's goroutine), and when the read returned;
// ok is false when b had already ended (its request abandoned it: its connection may be closed).
// From the read until took, b is its loop's: another loop relieving it skips it.
func (b *polledBody) read(buf []byte) (n int, errno syscall.Errno, at time.Time, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.out {
		return 0, 0, time.Time{}, false
	}
	n, errno = readNow(b.fd, buf)
	b.reading = true
	return n, errno, time.Now(), true
}

// took takes the outcome of a read of b's connection: p, the bytes read, stamped at; or its end.
// woke says its request was signalled.
func (b *polledBody) took(p []byte, n int, errno syscall.Errno, at time.Time) (woke bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reading = false
	return b.settle(p, n, errno, at)
}

// readTake reads what b's connection has into buf and takes it at once (relieve); ok is false when
// nothing was read: b had ended, or its loop was between a read and its take.
func (b *polledBody) readTake(buf []byte) (woke, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.out || b.reading {
		return false, false
	}
	n, errno := readNow(b.fd, buf)
	at := time.Now()
	return b.settle(buf[:max(n, 0)], n, errno, at), n > 0
}

// settle gives b a read's outcome: p, the bytes read, stamped at; or its end. woke says its
// request was signalled. Called with b.mu held.
func (b *polledBody) settle(p []byte, n int, errno syscall.Errno, at time.Time) (woke bool) {
	if b.out {
		return false // ended by its request between the read and now
	}
	b.woke = false
	switch {
	case errno == syscall.EAGAIN || errno == syscall.EINTR:
	case errno != 0:
		b.leave(os.NewSyscallError("read", errno))
	case n == 0:
		if b.dc.state == chunkTrailer {
			b.leave(errors.New("http: unexpected EOF reading trailer"))
		} else {
			b.leave(io.ErrUnexpectedEOF)
		}
	default:
		b.take(p, at)
	}
	return b.woke
}
