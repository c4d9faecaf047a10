package h1client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"weak"
)

// countingServer is a loopback server that counts the connections it accepted.
func countingServer(t testing.TB, h http.HandlerFunc) (string, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL, &conns
}

// h1Do sends one request through tr and returns the body read to its end and whether the
// connection was a pooled one.
func h1Do(t *testing.T, tr *Transport, method, url, body string) (string, bool, *http.Response) {
	t.Helper()
	var reused bool
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return string(b), reused, resp
}

// TestH1ReadsEveryFramingAndReusesWhatItMay: sized, chunked and close-delimited answers (and a 100
// Continue before one) read whole; a connection is pooled after a sized or chunked answer read to its
// end, never after one that ends with the connection or says Connection: close.
func TestH1ReadsEveryFramingAndReusesWhatItMay(t *testing.T) {
	url, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		got, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/sized":
			w.Header().Set("Content-Length", fmt.Sprint(len(got)+6))
			fmt.Fprintf(w, "sized:%s", got)
		case "/chunked":
			for _, part := range []string{"chun", "ked:", string(got)} {
				w.Write([]byte(part))
				http.NewResponseController(w).Flush()
			}
		case "/continue":
			w.WriteHeader(http.StatusContinue)
			w.Write([]byte("after-100"))
		case "/close-header":
			w.Header().Set("Connection", "close")
			w.Write([]byte("bye"))
		case "/eof": // HTTP/1.0 style: no length, the end of the body is the end of the connection
			conn, brw, _ := http.NewResponseController(w).Hijack()
			brw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil-eof")
			brw.Flush()
			conn.Close()
		}
	})
	tr := New(Config{MaxIdle: 4})
	defer tr.CloseIdleConnections()
	steps := []struct {
		path, body, want string
		wantReused       bool
		wantConns        int64 // connections the server has seen after this step
	}{
		{"/sized", "a", "sized:a", false, 1},
		{"/chunked", "bb", "chunked:bb", true, 1},
		{"/continue", "", "after-100", true, 1},
		{"/close-header", "", "bye", true, 1}, // sent on the pooled one; it is closed after
		{"/sized", "c", "sized:c", false, 2},
		{"/eof", "", "until-eof", true, 2}, // ends with the connection, so the next is new
		{"/chunked", "", "chunked:", false, 3},
	}
	for _, s := range steps {
		got, reused, _ := h1Do(t, tr, http.MethodPost, url+s.path, s.body)
		if got != s.want || reused != s.wantReused || conns.Load() != s.wantConns {
			t.Fatalf("%s: body %q reused %v, %d connections; want %q, %v, %d", s.path, got, reused, conns.Load(), s.want, s.wantReused, s.wantConns)
		}
	}
	if got, _, _ := h1Do(t, tr, http.MethodGet, url+"/sized", ""); got != "sized:" {
		t.Fatalf("GET without a body: %q", got)
	}
}

// TestH1RefusesWhatItCannotSendFaithfully: a header value with a line break (it would smuggle a
// second header or request) is an error before a byte is sent.
func TestH1RefusesWhatItCannotSendFaithfully(t *testing.T) {
	var requests atomic.Int64
	url, _ := countingServer(t, func(http.ResponseWriter, *http.Request) { requests.Add(1) })
	tr := New(Config{MaxIdle: 4})
	defer tr.CloseIdleConnections()
	for name, set := range map[string]func(h http.Header){
		"line break in a value": func(h http.Header) { h["X-Key"] = []string{"a\r\nX-Evil: 1"} },
		"space in a name":       func(h http.Header) { h["X Key"] = []string{"a"} },
	} {
		req, _ := http.NewRequest(http.MethodPost, url+"/x", strings.NewReader("{}"))
		set(req.Header)
		if _, err := (&http.Client{Transport: tr}).Do(req); err == nil || !strings.Contains(err.Error(), "invalid header") {
			t.Errorf("%s: err %v, want an invalid-header error", name, err)
		}
	}
	if requests.Load() != 0 {
		t.Fatalf("the server saw %d requests", requests.Load())
	}
}

// TestH1CancelEndsABlockedReadAndDropsTheConnection: a stream that has stopped sending is ended by
// the request's context at once (not by a kernel timeout), and that connection is not pooled.
func TestH1CancelEndsABlockedReadAndDropsTheConnection(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	url, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("data: first\n\n"))
		http.NewResponseController(w).Flush()
		if r.URL.Path == "/hang" {
			select {
			case <-release:
			case <-r.Context().Done():
			case <-time.After(10 * time.Second): // so a client that missed the cancel fails rather than hangs
			}
		}
	})
	tr := New(Config{MaxIdle: 4})
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/hang", strings.NewReader("{}"))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if line, _ := br.ReadString('\n'); line != "data: first\n" {
		t.Fatalf("first line %q", line)
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	began := time.Now()
	_, err = io.ReadAll(br)
	resp.Body.Close()
	if err == nil || time.Since(began) > 5*time.Second {
		t.Fatalf("read ended after %v with %v; want an error soon after the cancel", time.Since(began), err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("error %v: want the net package's deadline error (the engine files it under the context's cause)", err)
	}
	if _, reused, _ := h1Do(t, tr, http.MethodPost, url+"/ok", "{}"); reused || conns.Load() != 2 {
		t.Fatalf("after a cancelled stream: reused %v, %d connections; want a new one", reused, conns.Load())
	}
}

// TestH1FindsAPooledConnectionTheServerClosed: a server that closes a kept-alive connection while it
// is idle (and says nothing) is noticed before the next request is written on it.
func TestH1FindsAPooledConnectionTheServerClosed(t *testing.T) {
	closed := make(chan struct{}, 4)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed <- struct{}{}
		}
	}
	ts.Start()
	defer ts.Close()
	tr := New(Config{MaxIdle: 4})
	defer tr.CloseIdleConnections()
	h1Do(t, tr, http.MethodPost, ts.URL+"/a", "{}")
	ts.CloseClientConnections() // the server drops the idle connection
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never closed the connection")
	}
	// The FIN may trail the server's close by a moment on a loaded box; the peek sees it once it is in.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := tr.takeIdle(strings.TrimPrefix(ts.URL, "http://"))
		if c == nil {
			t.Fatal("the connection was not pooled after its answer")
		}
		if !c.usable() {
			c.close()
			break
		}
		tr.put(c)
		if time.Now().After(deadline) {
			t.Fatal("a connection the server closed still looks usable")
		}
		time.Sleep(time.Millisecond)
	}
	if got, reused, _ := h1Do(t, tr, http.MethodPost, ts.URL+"/b", "{}"); got != "ok" || reused {
		t.Fatalf("after the server's close: %q, reused %v; want ok on a new connection", got, reused)
	}
}

// TestH1IdlePoolFollowsRecentUse: after a burst that needed 40 connections, the pool keeps them
// while they may be needed again, and once use has been low for two windows it keeps only the
// recent peak plus idleSpare — thinking sessions do not each hold a socket.
func TestH1IdlePoolFollowsRecentUse(t *testing.T) {
	const burst = 40
	arrived := make(chan struct{}, burst)
	release := make(chan struct{})
	url, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/burst" {
			arrived <- struct{}{}
			<-release
		}
		w.Write([]byte("ok"))
	})
	tr := New(Config{MaxIdle: 1000})
	tr.peakWindow = 50 * time.Millisecond
	defer tr.CloseIdleConnections()
	done := make(chan struct{}, burst)
	for range burst {
		go func() {
			defer func() { done <- struct{}{} }()
			resp, err := (&http.Client{Transport: tr}).Post(url+"/burst", "application/json", strings.NewReader("{}"))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	for range burst {
		<-arrived
	}
	close(release)
	for range burst {
		<-done
	}
	idle := func() int { tr.mu.Lock(); defer tr.mu.Unlock(); return tr.nIdle }
	if n := idle(); n != burst {
		t.Fatalf("right after the burst %d connections are idle; want all %d kept", n, burst)
	}
	var conns []weak.Pointer[h1Conn] // to see that a closed connection's memory is let go
	tr.mu.Lock()
	for _, list := range tr.idle {
		for _, c := range list {
			conns = append(conns, weak.Make(c))
		}
	}
	tr.mu.Unlock()
	for range 3 { // quiet use over more than two windows
		time.Sleep(60 * time.Millisecond)
		h1Do(t, tr, http.MethodPost, url+"/one", "{}")
	}
	if n := idle(); n > 1+idleSpare {
		t.Fatalf("after two quiet windows %d connections are idle; want at most %d", n, 1+idleSpare)
	}
	runtime.GC()
	alive := 0
	for _, w := range conns {
		if w.Value() != nil {
			alive++
		}
	}
	if alive > idle() {
		t.Errorf("%d of the burst's connections are still in memory, %d of them closed: the pool keeps what it evicted", alive, alive-idle())
	}
}

// TestH1SendsLargeBodiesWhole: bodies below, at and above the 64 KiB a request copies behind its
// headers (a larger one is written from its own bytes) reach the server whole and in order, on one
// pooled connection, and the connection's write buffer keeps no large body.
func TestH1SendsLargeBodiesWhole(t *testing.T) {
	url, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d:%x", len(b), b[len(b)-8:])
	})
	tr := New(Config{MaxIdle: 4})
	defer tr.CloseIdleConnections()
	for _, n := range []int{100, 64 << 10, 64<<10 + 1, 3 << 20, 200} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i * 7 % 251)
		}
		got, _, _ := h1Do(t, tr, http.MethodPost, url+"/x", string(body))
		if want := fmt.Sprintf("%d:%x", n, body[n-8:]); got != want {
			t.Fatalf("%d bytes: the server read %s, want %s", n, got, want)
		}
	}
	if conns.Load() != 1 {
		t.Errorf("%d connections for 5 requests in turn", conns.Load())
	}
	// A large body of another length than it says is an error, not a request the server misreads.
	for _, claimed := range []int64{66000, 80000} {
		req, _ := http.NewRequest(http.MethodPost, url+"/x", strings.NewReader(strings.Repeat("a", 70000)))
		req.ContentLength = claimed
		if _, err := (&http.Client{Transport: tr}).Do(req); err == nil || !strings.Contains(err.Error(), "Content-Length") {
			t.Errorf("a 70,000-byte body claiming %d: err %v", claimed, err)
		}
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, cs := range tr.idle {
		for _, c := range cs {
			if cap(c.wbuf) > 80<<10 {
				t.Errorf("an idle connection keeps a %d-byte write buffer", cap(c.wbuf))
			}
		}
	}
}
