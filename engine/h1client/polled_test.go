package h1client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"
)

// chunk frames s as one HTTP chunk.
func chunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

// writeSplit writes s in pieces of size bytes, with a pause between them so each is its own read.
func writeSplit(c net.Conn, s string, size int, pause time.Duration) {
	for len(s) > 0 {
		n := min(size, len(s))
		c.Write([]byte(s[:n]))
		s = s[n:]
		time.Sleep(pause)
	}
}

// collector is a Sink that keeps what it is fed, with the stamps, and stops at "[DONE]" when
// stopAtDone; onFeed, when set, runs after each Feed.
type collector struct {
	stopAtDone bool
	onFeed     func()

	mu     sync.Mutex
	got    bytes.Buffer
	stamps []time.Time
	ends   []error
}

func (c *collector) Feed(payload []byte, at time.Time) bool {
	c.mu.Lock()
	c.got.Write(payload)
	c.stamps = append(c.stamps, at)
	more := !c.stopAtDone || !bytes.Contains(c.got.Bytes(), []byte("[DONE]"))
	c.mu.Unlock()
	if c.onFeed != nil {
		c.onFeed()
	}
	return more
}

func (c *collector) End(err error) {
	c.mu.Lock()
	c.ends = append(c.ends, err)
	c.mu.Unlock()
}

// polledPost sends a POST through tr and reads its answer with ReadPolled into sink: whether the
// request went out on a pooled connection, and the error ReadPolled returned.
func polledPost(t *testing.T, ctx context.Context, tr *Transport, url string, sink Sink) (bool, error) {
	t.Helper()
	var reused bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !Pollable(resp.Body) {
		t.Fatalf("a chunked answer of a transport with a poller is not pollable (transfer encoding %v)", resp.TransferEncoding)
	}
	err = ReadPolled(ctx, resp.Body, 100*time.Millisecond, sink)
	if Pollable(resp.Body) {
		t.Fatal("a body ReadPolled read is still pollable")
	}
	return reused, err
}

// sseEvents answers with n events and [DONE], each flushed as a chunk of its own, pause apart.
func sseEvents(n int, pause time.Duration) (http.HandlerFunc, string) {
	var want strings.Builder
	for i := range n {
		fmt.Fprintf(&want, "data: %d\n\n", i)
	}
	want.WriteString("data: [DONE]\n\n")
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range n {
			fmt.Fprintf(w, "data: %d\n\n", i)
			http.NewResponseController(w).Flush()
			time.Sleep(pause)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}, want.String()
}

// TestReadPolledFeedsTheBodyAndKeepsTheConnection: the poller feeds the sink the body's payload,
// framing taken off, each read stamped between the request and the end of the read; a sink that
// stops at the last event, and one that takes the body to its end (End hears io.EOF), both leave
// the connection to the pool.
func TestReadPolledFeedsTheBodyAndKeepsTheConnection(t *testing.T) {
	p, err := SharedPoller()
	if err != nil {
		t.Skip(err)
	}
	handler, want := sseEvents(5, 2*time.Millisecond)
	url, conns := countingServer(t, handler)
	tr := New(Config{MaxIdle: 4, Poller: p})
	defer tr.CloseIdleConnections()
	watched := p.Watched()
	for i, stopAtDone := range []bool{true, false, true} {
		sink := &collector{stopAtDone: stopAtDone}
		began := time.Now()
		reused, err := polledPost(t, context.Background(), tr, url, sink)
		ended := time.Now()
		if err != nil || sink.got.String() != want {
			t.Fatalf("request %d: err %v, fed %q; want %q", i, err, sink.got.String(), want)
		}
		if wantEnds := map[bool]int{true: 0, false: 1}[stopAtDone]; len(sink.ends) != wantEnds || wantEnds == 1 && sink.ends[0] != io.EOF {
			t.Fatalf("request %d (stops at [DONE]: %v): End heard %v", i, stopAtDone, sink.ends)
		}
		for j, at := range sink.stamps {
			if at.Before(began) || at.After(ended) || j > 0 && at.Before(sink.stamps[j-1]) {
				t.Fatalf("request %d: stamps %v, not in order within the request's %v–%v", i, sink.stamps, began, ended)
			}
		}
		if reused != (i > 0) || conns.Load() != 1 {
			t.Fatalf("request %d: reused %v, %d connections; want one connection kept for every request", i, reused, conns.Load())
		}
	}
	if n := p.Watched() - watched; n != 3 {
		t.Fatalf("the poller was given %d bodies, want 3", n)
	}
}

// TestReadPolledEndsWithItsRequest: a request whose context ends mid-body has its body abandoned at
// once — the sink hears the context's error — and its connection is not pooled.
func TestReadPolledEndsWithItsRequest(t *testing.T) {
	p, err := SharedPoller()
	if err != nil {
		t.Skip(err)
	}
	release := make(chan struct{})
	defer close(release)
	answer, _ := sseEvents(1, 0)
	url, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/hang" {
			answer(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		case <-time.After(10 * time.Second): // so a client that missed the cancel fails rather than hangs
		}
	})
	tr := New(Config{MaxIdle: 4, Poller: p})
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	sink := &collector{onFeed: cancel}
	began := time.Now()
	if _, err := polledPost(t, ctx, tr, url+"/hang", sink); err != nil || time.Since(began) > 5*time.Second {
		t.Fatalf("ReadPolled returned %v after %v; want no error, soon after the cancel", err, time.Since(began))
	}
	if len(sink.ends) != 1 || !errors.Is(sink.ends[0], context.Canceled) {
		t.Fatalf("End heard %v, want the context's cancellation", sink.ends)
	}
	if reused, err := polledPost(t, context.Background(), tr, url+"/ok", &collector{stopAtDone: true}); err != nil || reused || conns.Load() != 2 {
		t.Fatalf("after a cancelled stream: err %v, reused %v, %d connections; want a new one", err, reused, conns.Load())
	}
}
