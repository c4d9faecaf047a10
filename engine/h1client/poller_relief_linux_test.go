package h1client

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// loopbackPair is a connected loopback TCP pair: the client's descriptor (for a loop to read) and
// the server's side (for the test to write).
func loopbackPair(t *testing.T) (fd int, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	raw, err := client.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	raw.Control(func(s uintptr) { fd = int(s) })
	return fd, server
}

// watchedBody is a body put straight into loop l, its own sink, collecting what it is fed.
type watchedBody struct {
	*polledBody
	got    strings.Builder // written under the body's lock, read after its signal
	endErr error
}

func (w *watchedBody) Feed(p []byte, _ time.Time) bool { w.got.Write(p); return true }

func (w *watchedBody) End(err error) { w.endErr = err }

func watchOn(t *testing.T, l *pollLoop, fd int) *watchedBody {
	t.Helper()
	w := &watchedBody{}
	w.polledBody = &polledBody{loop: l, fd: fd, signal: make(chan struct{}, 2), sink: w}
	w.mu.Lock() // as watch does: the loop may read the body before add returns
	defer w.mu.Unlock()
	if err := l.add(w.polledBody); err != nil {
		t.Fatal(err)
	}
	return w
}

// await waits for w's body to end and checks it ended whole with want.
func (w *watchedBody) await(t *testing.T, name, want string) {
	t.Helper()
	select {
	case <-w.signal:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the body was not read to its end in 10 s", name)
	}
	if out, whole := w.ended(); !out || !whole || w.endErr != io.EOF {
		t.Fatalf("%s: ended %v, whole %v, with %v; want a whole body ended by io.EOF", name, out, whole, w.endErr)
	}
	if got := w.got.String(); got != want {
		t.Fatalf("%s: fed %d bytes %.60q…, want %d bytes %.60q…", name, len(got), got, len(want), want)
	}
}

func newTestLoops(t *testing.T, n int) []*pollLoop {
	t.Helper()
	var sink atomic.Pointer[ReadLag]
	loops := make([]*pollLoop, n)
	for i := range loops {
		l, err := newPollLoop(&sink)
		if err != nil {
			t.Skip(err)
		}
		t.Cleanup(func() { syscall.Close(l.probeFD) }) // the epoll descriptor stays with Go's poller
		loops[i] = l
	}
	return loops
}

// TestStalledLoopIsRelieved: a loop whose goroutine never runs (it stands for one whose thread waits
// for a CPU) has its connection read, whole and in order, by another loop, which relieves it
// between its own batches.
func TestStalledLoopIsRelieved(t *testing.T) {
	loops := newTestLoops(t, 2)
	busy, stalled := loops[0], loops[1]
	busy.start(loops) // stalled is never started
	fdBusy, serverBusy := loopbackPair(t)
	fdStalled, serverStalled := loopbackPair(t)
	onBusy, onStalled := watchOn(t, busy, fdBusy), watchOn(t, stalled, fdStalled)

	var want strings.Builder
	go func() {
		for i := range 50 {
			fmt.Fprintf(serverBusy, "%s", chunk(fmt.Sprint("busy", i, ",")))
			time.Sleep(time.Millisecond)
		}
		io.WriteString(serverBusy, "0\r\n\r\n")
	}()
	for i := range 20 {
		part := fmt.Sprint("stalled", i, ",")
		want.WriteString(part)
		io.WriteString(serverStalled, chunk(part))
		time.Sleep(2 * time.Millisecond)
	}
	io.WriteString(serverStalled, "0\r\n\r\n")
	onStalled.await(t, "the stalled loop's body", want.String())
	var wantBusy strings.Builder
	for i := range 50 {
		wantBusy.WriteString(fmt.Sprint("busy", i, ","))
	}
	onBusy.await(t, "the busy loop's body", wantBusy.String())
	if stalled.relieved.Load() == 0 {
		t.Fatal("the stalled loop was never relieved")
	}
}

// TestLoopsRelievingEachOtherKeepEveryBodyInOrder: loops told to relieve each other at every turn
// read the same connections at once; each body is still fed its bytes whole and in order (run with
// -race).
func TestLoopsRelievingEachOtherKeepEveryBodyInOrder(t *testing.T) {
	loops := newTestLoops(t, 3)
	for _, l := range loops {
		l.relieveAfter = 0
	}
	for _, l := range loops {
		l.start(loops)
	}
	const bodies, parts = 12, 300
	type stream struct {
		body   *watchedBody
		server net.Conn
		want   string
	}
	streams := make([]stream, bodies)
	for i := range streams {
		fd, server := loopbackPair(t)
		var want, wire strings.Builder
		for j := range parts {
			part := fmt.Sprint(i, ":", j, ",")
			want.WriteString(part)
			wire.WriteString(chunk(part))
		}
		wire.WriteString("0\r\n\r\n")
		streams[i] = stream{body: watchOn(t, loops[i%len(loops)], fd), server: server, want: want.String()}
		go writeSplit(server, wire.String(), 5+i, 50*time.Microsecond)
	}
	for i, s := range streams {
		s.body.await(t, fmt.Sprint("body ", i), s.want)
	}
	relieved := int64(0)
	for _, l := range loops {
		relieved += l.relieved.Load()
	}
	if relieved == 0 {
		t.Fatal("no loop relieved another: the test did not test reading one connection from two loops")
	}
	t.Logf("loops relieved each other %d times", relieved)
}

// TestEmptyLoopIsNotRelieved: a loop with no bodies in it is not looked at by the others (no
// epoll_wait spent on it), and one with a body is, once it has gone unserved for relieveAfter; its
// body count goes back to 0 when the body leaves.
func TestEmptyLoopIsNotRelieved(t *testing.T) {
	loops := newTestLoops(t, 2) // neither started: relieve is called by hand
	l, peer := loops[0], loops[1]
	l.peers = loops
	if l.relieve(); peer.servedAt.Load() != 0 {
		t.Fatal("a loop with no bodies was looked at")
	}
	fd, server := loopbackPair(t)
	w := watchOn(t, peer, fd)
	if peer.bodies.Load() != 1 {
		t.Fatalf("bodies %d after add, want 1", peer.bodies.Load())
	}
	io.WriteString(server, chunk("x")+"0\r\n\r\n")
	deadline := time.Now().Add(10 * time.Second)
	for peer.relieved.Load() == 0 && time.Now().Before(deadline) {
		l.relieve()
		time.Sleep(time.Millisecond)
	}
	if peer.servedAt.Load() == 0 || peer.relieved.Load() == 0 {
		t.Fatal("a loop with a body, unserved, was not relieved")
	}
	w.await(t, "the relieved body", "x")
	if peer.bodies.Load() != 0 {
		t.Fatalf("bodies %d after the body left, want 0", peer.bodies.Load())
	}
}
