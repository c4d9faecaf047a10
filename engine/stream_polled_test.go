package engine

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plload/plload/engine/h1client"
)

// scriptServer is a loopback HTTP/1.1 server written by hand, for framings and faults Go's server
// never sends: each request on a connection is answered by script(conn, i), i counting that
// connection's requests from 0; script returns false to end the connection (closing it). It counts
// the connections it accepted.
func scriptServer(t *testing.T, script func(c net.Conn, i int) bool) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	var wg sync.WaitGroup
	done := make(chan struct{})
	var open sync.Map
	t.Cleanup(func() {
		close(done)
		ln.Close()
		open.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			open.Store(c, true)
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for i := 0; ; i++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if req.URL.Path != "/v1/chat/completions" { // the RTT probe's GET /models
						fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"data\":[]}")
						continue
					}
					select {
					case <-done:
						return
					default:
					}
					if !script(c, i) {
						return
					}
				}
			})
		}
	})
	return "http://" + ln.Addr().String() + "/v1", &conns
}

const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

// chunk frames s as one HTTP chunk.
func chunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

func contentEvent(text string) string {
	return `data: {"choices":[{"delta":{"content":"` + text + `"}}]}` + "\n\n"
}

// wholeAnswer is a streamed answer of n content chunks, [DONE] and the chunked terminator, each
// event its own chunk.
func wholeAnswer(n int) string {
	var b strings.Builder
	b.WriteString(sseHead)
	for i := range n {
		b.WriteString(chunk(contentEvent(fmt.Sprint("t", i, " "))))
	}
	b.WriteString(chunk("data: [DONE]\n\n"))
	b.WriteString("0\r\n\r\n")
	return b.String()
}

// writeSplit writes s in pieces of size bytes, with a pause between them so each is its own read.
func writeSplit(c net.Conn, s string, size int, pause time.Duration) {
	for len(s) > 0 {
		n := min(size, len(s))
		c.Write([]byte(s[:n]))
		s = s[n:]
		time.Sleep(pause)
	}
}

// TestPollerReadsEveryWayTheBytesCome: answers read by the poller, however their bytes are cut into
// reads — with the headers, one event per read, a few bytes per read cutting chunk-size lines,
// CRLFs and events, with chunk extensions and a trailer — give the same records, and the
// connection is kept for the next request when the answer ended cleanly.
func TestPollerReadsEveryWayTheBytesCome(t *testing.T) {
	p, err := h1client.SharedPoller()
	if err != nil {
		t.Skip(err)
	}
	const tokens = 6
	withTrailer := strings.Replace(wholeAnswer(tokens), "0\r\n\r\n", "0;done=1\r\nX-Trailer: 1\r\n\r\n", 1)
	withTrailer = strings.Replace(withTrailer, "\r\n"+contentEvent("t0 "), ";ext=\"a\"\r\n"+contentEvent("t0 "), 1)
	// manyReads: the cases whose answers come in hundreds of reads a stage, so the loops probe their
	// read lag (maybeProbe) and the stage's health has it.
	manyReads := map[string]bool{"seven bytes per read": true, "a byte per read, with a trailer": true}
	cases := map[string]func(c net.Conn){
		"all with the headers": func(c net.Conn) { c.Write([]byte(wholeAnswer(tokens))) },
		"an event per read": func(c net.Conn) {
			a := wholeAnswer(tokens)
			head, body, _ := strings.Cut(a, "\r\n\r\n")
			c.Write([]byte(head + "\r\n\r\n"))
			for part := range strings.SplitAfterSeq(body, "\n\n\r\n") {
				c.Write([]byte(part))
				time.Sleep(2 * time.Millisecond)
			}
		},
		"seven bytes per read":            func(c net.Conn) { writeSplit(c, wholeAnswer(tokens), 7, 200*time.Microsecond) },
		"a byte per read, with a trailer": func(c net.Conn) { writeSplit(c, withTrailer, 1, 20*time.Microsecond) },
	}
	for name, send := range cases {
		t.Run(name, func(t *testing.T) {
			base, conns := scriptServer(t, func(c net.Conn, _ int) bool { send(c); return true })
			before := p.Watched()
			recs, _, res := runShort(t, base, 0)
			for _, r := range recs {
				if r["error"] != nil {
					t.Fatalf("error record: %v", r["error"])
				}
				if n := r["metrics"].(map[string]any)["output_sequence_length"].(map[string]any)["value"]; fmt.Sprint(n) != fmt.Sprint(tokens) {
					t.Fatalf("output_sequence_length %v, want %d", n, tokens)
				}
			}
			if watched := p.Watched() - before; watched < int64(res.OK) {
				t.Fatalf("%d answers, %d read by the poller", res.OK, watched)
			}
			if lag := res.Injector.ReadLagP99Ms; manyReads[name] && (!lag.OK || lag.V <= 0 || lag.V > 1000) {
				t.Fatalf("read lag p99 %+v: want a measured figure", lag)
			}
			// 3 sessions: a connection each (and one for the RTT probe), kept across their turns.
			if n := conns.Load(); n > 4 || res.OK < 6 {
				t.Fatalf("%d answers over %d connections: not kept alive", res.OK, n)
			}
		})
	}
}

// TestPollerFaults: what a server does wrong mid-body gets the record it got before the poller.
func TestPollerFaults(t *testing.T) {
	if _, err := h1client.SharedPoller(); err != nil {
		t.Skip(err)
	}
	half := wholeAnswer(3)[:len(sseHead)+60]
	cases := []struct {
		name, typ, text string
		send            func(c net.Conn) bool
	}{
		{"cut mid-body", "TransportError", "stream cut", func(c net.Conn) bool {
			c.Write([]byte(half))
			return false
		}},
		{"reset mid-body", "TransportError", "reset", func(c net.Conn) bool {
			c.Write([]byte(half))
			time.Sleep(5 * time.Millisecond)
			c.(*net.TCPConn).SetLinger(0)
			return false
		}},
		{"bad chunk size", "TransportError", "invalid byte in chunk length", func(c net.Conn) bool {
			c.Write([]byte(sseHead + chunk(contentEvent("a")) + "zz\r\n"))
			time.Sleep(50 * time.Millisecond)
			return false
		}},
		{"stalls mid-body past the timeout", "TimeoutError", "no complete answer within target.timeout", func(c net.Conn) bool {
			c.Write([]byte(sseHead + chunk(contentEvent("a"))))
			time.Sleep(2500 * time.Millisecond)
			return false
		}},
		{"body ends without [DONE]", "TransportError", "without data: [DONE]", func(c net.Conn) bool {
			c.Write([]byte(sseHead + chunk(contentEvent("a")) + "0\r\n\r\n"))
			return true
		}},
		{"event over the size limit, a byte at a time", "TransportError", "over the 1024-byte limit", func(c net.Conn) bool {
			writeSplit(c, sseHead+chunk(contentEvent(strings.Repeat("x", 3000))), 512, 100*time.Microsecond)
			time.Sleep(50 * time.Millisecond)
			return false
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base, _ := scriptServer(t, func(c net.Conn, _ int) bool { return tc.send(c) })
			recs, _, _ := runShort(t, base, 1024)
			for _, r := range recs {
				e, _ := r["error"].(map[string]any)
				if md := r["metadata"].(map[string]any); md["was_cancelled"] == true {
					continue // the stage's end cut it
				}
				if e == nil || e["type"] != tc.typ || !strings.Contains(e["message"].(string), tc.text) {
					t.Fatalf("record error %v, want %s containing %q", r["error"], tc.typ, tc.text)
				}
			}
		})
	}
}

// TestPollerAfterDone: the answer is over at [DONE]; what follows decides only whether the
// connection is kept. A terminator that never comes costs the connection after drainLimit; bytes
// after the terminator cost it at once; the records are successes either way.
func TestPollerAfterDone(t *testing.T) {
	if _, err := h1client.SharedPoller(); err != nil {
		t.Skip(err)
	}
	noEnd := strings.TrimSuffix(wholeAnswer(2), "0\r\n\r\n")
	for _, tc := range []struct {
		name string
		send func(c net.Conn) bool
	}{
		{"no terminator", func(c net.Conn) bool {
			c.Write([]byte(noEnd))
			time.Sleep(drainLimit + 100*time.Millisecond)
			return false
		}},
		{"bytes after the terminator", func(c net.Conn) bool {
			c.Write([]byte(wholeAnswer(2) + "HTTP/1.1 200 OK\r\n"))
			time.Sleep(50 * time.Millisecond)
			return false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, conns := scriptServer(t, func(c net.Conn, _ int) bool { return tc.send(c) })
			recs, _, res := runShort(t, base, 0)
			for _, r := range recs {
				if r["error"] != nil && r["metadata"].(map[string]any)["was_cancelled"] != true {
					t.Fatalf("error record: %v", r["error"])
				}
			}
			if res.OK == 0 || conns.Load() < int64(res.OK) {
				t.Fatalf("%d answers over %d connections: a connection was kept that should not have been", res.OK, conns.Load())
			}
		})
	}
}

// TestH1BlockingClientPassesTheSameCases: the fault cases on plload's client with each body read on
// its request's goroutine (PLLOAD_HTTP_CLIENT=h1-blocking), the client without the poller.
func TestH1BlockingClientPassesTheSameCases(t *testing.T) { passTheSameCasesOn(t, "h1-blocking") }
