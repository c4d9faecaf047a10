package h1client

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// pollLoop is one epoll instance and the goroutine that serves it.
type pollLoop struct {
	epfd    int
	rc      syscall.RawConn // Go's poller's hold on epfd
	mu      sync.Mutex
	streams map[uint64]*polledBody // by registration id (the epoll event's data)
	lastID  uint64
	// servedAt is when the instance was last served (pollClock), by its loop or by another that
	// relieved it.
	servedAt atomic.Int64
	relieved atomic.Int64 // how many times another loop read its connections (tests)
	bodies   atomic.Int32 // how many bodies are in its instance: one with none needs no relief
	// used only by the loop's goroutine
	peers        []*pollLoop // the poller's loops, this one among them (relieve)
	nextPeer     int
	relieveAfter time.Duration // stallAfter
	events       []syscall.EpollEvent
	buf          []byte
	batch        []pendingRead // the reads of the batch being served
	woke         bool          // a body signalled its request in this batch
	lastYield    time.Time     // see yield
	// probeFD is an eventfd in the epoll under id 0 that the loop makes readable itself to measure its
	// read lag (ReadLag); probeSink and probeAt are the pending probe's stage and write time, reads
	// counts the bodies read since the last probe.
	probeFD   int
	lagSink   *atomic.Pointer[ReadLag] // the poller's: the stage being measured, if any
	probeSink *ReadLag
	probeAt   time.Time
	reads     int
	// stopped is why the loop's goroutine ended (nil while it serves); add refuses bodies then.
	stopped atomic.Pointer[error]
}

// newPollLoop makes a loop's epoll instance; start starts serving it.
func newPollLoop(lagSink *atomic.Pointer[ReadLag]) (*pollLoop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		syscall.Close(epfd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	// A non-blocking descriptor given to os.NewFile joins Go's poller: the loop's goroutine parks
	// there until the epoll instance has something to report. f stays open: the loop never ends.
	f := os.NewFile(uintptr(epfd), "plload-poller")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	l := &pollLoop{epfd: epfd, rc: rc, streams: map[uint64]*polledBody{}, events: make([]syscall.EpollEvent, 256),
		buf: make([]byte, batchBuffer), batch: make([]pendingRead, 0, 256), lagSink: lagSink, relieveAfter: stallAfter}
	if l.probeFD, err = newProbeFD(epfd); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// start serves the loop's instance on a goroutine of its own; peers are the poller's loops.
func (l *pollLoop) start(peers []*pollLoop) {
	l.peers = peers
	go func() {
		// One RawConn.Read for the loop's whole life: each call would clear the readiness Go's poller
		// keeps, and a wake-up between calls would be lost.
		err := l.rc.Read(func(uintptr) bool { l.serve(); return false })
		err = fmt.Errorf("plload's poller stopped: %v", err) // not while f is open; bodies already in it run to their timeout
		l.stopped.Store(&err)
	}()
}

// pollClock is the loops' clock for servedAt: monotonic nanoseconds since the process started.
func pollClock() int64 { return int64(time.Since(pollEpoch)) }

var pollEpoch = time.Now()

// serve reads every connection epoll reports until epoll reports none, then parks; a connection that
// gets bytes after that makes the epoll instance ready again, which Go's poller reports.
//
// Parking straight after a batch, without the last, empty epoll_wait, saved CPU but lost wake-ups:
// a connection reset while the loop worked stayed ready in the epoll instance, and the loop slept
// until the request's timeout (TestErrorsAndFaultsAreRecorded/reset, 7 of 80 runs; 0 of 80 with the
// last epoll_wait).
func (l *pollLoop) serve() {
	for {
		l.servedAt.Store(pollClock())
		n, errno := epollWaitNow(l.epfd, l.events)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 || n == 0 {
			if l.relieve() {
				continue
			}
			return // park until Go's poller sees the instance ready again
		}
		for from := 0; from < n; {
			from = l.readBatch(l.events[from:n], from)
			l.takeBatch()
		}
		l.reads += n
		l.maybeProbe()
		l.relieve()
		l.yield()
	}
}

// yield lets the loop's P run other goroutines after a batch that woke a request's goroutine, and
// at least every yieldEvery: under load the loop rarely parks (bytes keep arriving while it works,
// so Go's poller finds it ready at once), and what it wakes would wait in its P's queue until the
// runtime preempted it, 10 ms or more (the self-test's scheduler latency p99 was 29–59 ms at 500
// streams before this, 1–15 ms with a goroutine per body).
func (l *pollLoop) yield() {
	now := time.Now()
	if l.woke || now.Sub(l.lastYield) > yieldEvery {
		l.woke, l.lastYield = false, now
		runtime.Gosched()
	}
}

// yieldEvery bounds how long a busy loop keeps its P from other goroutines.
const yieldEvery = 500 * time.Microsecond

// epollWaitNow is epoll_wait without waiting, made without the runtime's system-call bookkeeping:
// it cannot block, so the P need not be handed off (and sysmon need not be woken) for it. The same
// for readNow: the sockets are non-blocking.
func epollWaitNow(epfd int, events []syscall.EpollEvent) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	return int(n), errno
}

func readNow(fd int, buf []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	return int(n), errno
}

// newProbeFD makes the loop's probe descriptor: an eventfd in its epoll under id 0 (bodies' ids
// start at 1).
func newProbeFD(epfd int) (int, error) {
	fd, _, errno := syscall.RawSyscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return -1, os.NewSyscallError("eventfd2", errno)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev); err != nil {
		syscall.Close(int(fd))
		return -1, os.NewSyscallError("epoll_ctl", err)
	}
	return int(fd), nil
}

// maybeProbe makes the probe descriptor readable when a stage is being measured, no probe is
// pending, readLagEvery has passed since the last and the loop has read probeAfterReads bodies
// since: a busy loop is probed about every readLagEvery, an idle one seldom (a probe is a wake-up,
// and on a VM a wake-up from idle costs more CPU than a whole chunk).
func (l *pollLoop) maybeProbe() {
	if l.probeSink != nil || l.reads < probeAfterReads {
		return
	}
	sink := l.lagSink.Load()
	if now := time.Now(); sink != nil && now.Sub(l.probeAt) >= readLagEvery {
		l.probeSink, l.probeAt, l.reads = sink, now, 0
		one := uint64(1)
		syscall.RawSyscall(syscall.SYS_WRITE, uintptr(l.probeFD), uintptr(unsafe.Pointer(&one)), 8)
	}
}

// probeAfterReads is how many bodies a loop reads between probes, at least.
const probeAfterReads = 64

// probed reads the probe descriptor and records how long the probe waited.
func (l *pollLoop) probed() {
	at := time.Now()
	var v [8]byte
	readNow(l.probeFD, v[:])
	if l.probeSink != nil {
		l.probeSink.record(at.Sub(l.probeAt))
		l.probeSink = nil
	}
}

// add puts b's connection in the loop's epoll, under a new id.
func (l *pollLoop) add(b *polledBody) error {
	if err := l.stopped.Load(); err != nil {
		return *err
	}
	l.mu.Lock()
	l.lastID++
	b.id = l.lastID
	l.streams[b.id] = b
	l.mu.Unlock()
	l.bodies.Add(1)
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(uint32(b.id)), Pad: int32(uint32(b.id >> 32))}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, b.fd, &ev); err != nil {
		l.mu.Lock()
		delete(l.streams, b.id)
		l.mu.Unlock()
		l.bodies.Add(-1)
		b.id = 0
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// remove takes b's connection out of the loop's epoll and map.
func (l *pollLoop) remove(b *polledBody) {
	syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, b.fd, nil)
	l.mu.Lock()
	delete(l.streams, b.id)
	l.mu.Unlock()
	l.bodies.Add(-1)
}
