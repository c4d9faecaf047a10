package engine

import (
	"errors"
	"io"
	"iter"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// waitFirstReader reads a TCP connection the way a stream of small, spaced events wants. Go's own
// read asks the kernel first and, on EAGAIN, waits for the network poller: a streamed answer arrives
// one small write at a time, so that is two read syscalls per chunk, one of them empty, and on this
// kind of machine a syscall is a large part of a chunk's cost. After a short read (the socket was
// empty when it returned) this reader waits for the poller first and then reads: one syscall.
//
// Two facts of Go's poller shape it:
//   - The poller is edge-triggered and keeps an arrival that comes while no one waits (a "ready"
//     token), so waiting first never sleeps past data — but only within one RawConn.Read call:
//     each call starts by clearing the token (internal/poll's prepareRead), and data that arrived
//     between two calls would wait for the next arrival. So the connection's whole life is one
//     RawConn.Read, run as a coroutine (iter.Pull): Read resumes it, it reads (or waits, then
//     reads), and yields the bytes back. A coroutine switch costs far less than the syscall saved.
//   - An end of stream or a reset that arrives in the same poller event as the last data gives no
//     later event. So every wait-first wait is bounded by finGuard, after which the reader asks the
//     kernel anyway. A chunked answer is complete at its terminator and never waits for the
//     connection's end, so this can only make a cut stream or a close-delimited body be seen as
//     ended up to finGuard late: an error record's end, never a success's timing.
//
// Timestamps are taken by the caller when Read returns, as before; only the empty syscall goes.
type waitFirstReader struct {
	conn *net.TCPConn
	raw  syscall.RawConn
	// poisoned: the request's context ended; the read deadline stays in the past from then on, and
	// the reader must not re-arm it.
	poisoned atomic.Bool

	// mu serializes resuming the coroutine: Read (the session's goroutine) against release (a
	// timer's Close, or the pool), since a coroutine must never be resumed from two at once.
	mu       sync.Mutex
	next     func() (struct{}, bool)
	stop     func()
	finished bool
	end      error // what every Read returns once the coroutine has finished

	// The request to the coroutine and its answer, handed over while mu is held.
	buf   []byte
	peek  bool
	n     int
	alive bool
}

// finGuard bounds a wait-first wait (see waitFirstReader).
const finGuard = 250 * time.Millisecond

func newWaitFirstReader(c *net.TCPConn) (*waitFirstReader, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	r := &waitFirstReader{conn: c, raw: raw}
	r.next, r.stop = iter.Pull(r.loop)
	return r, nil
}

// loop is the coroutine: one RawConn.Read for as long as it can last, another after a finGuard
// wait ran out.
func (r *waitFirstReader) loop(yield func(struct{}) bool) {
	short, guarded, stopped := false, false, false
	var errno error
	for {
		err := r.raw.Read(func(fd uintptr) bool {
			for {
				if r.peek {
					r.alive = peekAlive(fd)
					if !yield(struct{}{}) {
						stopped = true
						return true
					}
					continue
				}
				if short {
					short, guarded = false, true
					r.armGuard(time.Now().Add(finGuard))
					return false // wait for the poller; it calls back when data (or the end) is there
				}
				var n int
				n, errno = readNoEINTR(fd, r.buf)
				switch {
				case errno == syscall.EAGAIN:
					errno = nil
					return false
				case errno != nil || n == 0:
					return true // the end; reported below, once the read lock is let go
				}
				r.n, short = n, n < len(r.buf)
				if !yield(struct{}{}) {
					stopped = true
					return true
				}
			}
		})
		if guarded && errors.Is(err, os.ErrDeadlineExceeded) && !r.poisoned.Load() {
			// The guard ran out (or an old one did): ask the kernel, with no guard, from a new call.
			guarded = false
			r.armGuard(time.Time{})
			continue
		}
		r.finish(err, errno, stopped)
		return
	}
}

// armGuard sets the read deadline the guard uses (zero: none), unless the context has poisoned it.
func (r *waitFirstReader) armGuard(t time.Time) {
	r.conn.SetReadDeadline(t)
	if r.poisoned.Load() { // a poison that raced the line above must win
		r.conn.SetReadDeadline(aLongTimeAgo)
	}
}

// poison ends any read now and for good: the request's context ended.
func (r *waitFirstReader) poison() {
	r.poisoned.Store(true)
	r.conn.SetDeadline(aLongTimeAgo)
}

func (r *waitFirstReader) finish(err, errno error, stopped bool) {
	op := func(e error) error {
		return &net.OpError{Op: "read", Net: "tcp", Source: r.conn.LocalAddr(), Addr: r.conn.RemoteAddr(), Err: e}
	}
	switch {
	case stopped:
		r.end = net.ErrClosed
	case err != nil: // closed, or past a deadline: the net package's own error (a *net.OpError)
		r.end = err
	case errno != nil:
		r.end = op(os.NewSyscallError("read", errno))
	default:
		r.end = io.EOF
	}
}

func readNoEINTR(fd uintptr, p []byte) (int, error) {
	for {
		n, err := syscall.Read(int(fd), p)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// peekAlive: no end of stream and no stray bytes waiting — one non-blocking peek.
func peekAlive(fd uintptr) bool {
	var one [1]byte
	n, _, errno := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n <= 0 && errno == syscall.EAGAIN // 0 with no error: the server's FIN; n > 0: bytes nobody asked for
}

func (r *waitFirstReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return 0, r.end
	}
	r.buf, r.peek = p, false
	_, ok := r.next()
	r.buf = nil
	if !ok {
		r.finished = true
		return 0, r.end
	}
	return r.n, nil
}

// usable says whether a pooled connection can carry another request: its reader still runs and
// the server has neither closed it nor sent anything unasked. A server that closed it while it sat
// idle (llama.cpp closes after every answer) is found here rather than by a failed request.
func (r *waitFirstReader) usable() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished || r.poisoned.Load() {
		return false
	}
	r.peek = true
	_, ok := r.next()
	r.peek = false
	if !ok {
		r.finished = true
		return false
	}
	return r.alive
}

// release ends the coroutine and so lets go of the socket's read lock. A Read in progress must be
// made to return first (h1Conn.close poisons the deadline), or release waits for it.
func (r *waitFirstReader) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stop()
	r.finished = true
}
