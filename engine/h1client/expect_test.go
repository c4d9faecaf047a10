package h1client

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// waitConns waits until the server has accepted n connections.
func waitConns(t *testing.T, conns interface{ Load() int64 }, n int64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); conns.Load() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server accepted %d connections, want %d", conns.Load(), n)
		}
	}
}

// idleCount is the pool's idle connections.
func idleCount(tr *Transport) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.nIdle
}

// dialingCount is the connections being dialed ahead. Expect decides under the pool's lock, before it
// returns, whether to dial: a count of 0 just after it returned means it dialed nothing, with no wait
// for a dial that might come late.
func dialingCount(tr *Transport) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.dialingAll
}

// TestExpectOpensConnectionsAhead: a request expected soon gets a connection dialed ahead into the
// pool when none is idle, and takes it when it goes (no dial then); an idle one is not dialed for
// again; no more than limit connections are busy, idle or dialing; ending an expectation twice does
// nothing; a transport that opens a connection per request dials nothing ahead.
func TestExpectOpensConnectionsAhead(t *testing.T) {
	base, conns := countingServer(t, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	u, _ := url.Parse(base)
	addr := Addr(u)
	tr := New(Config{MaxIdle: 8})
	defer tr.CloseIdleConnections()

	done := tr.Expect(context.Background(), addr, 4)
	waitConns(t, conns, 1)
	for deadline := time.Now().Add(5 * time.Second); idleCount(tr) != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the connection dialed ahead never reached the pool")
		}
	}
	done()
	done()
	if got, reused, _ := h1Do(t, tr, http.MethodPost, base+"/a", "{}"); got != "ok" || !reused || conns.Load() != 1 {
		t.Fatalf("%q reused %v with %d connections; want ok on the one dialed ahead", got, reused, conns.Load())
	}

	// One idle connection serves one expected request; a second expected one gets a dial of its own.
	d1 := tr.Expect(context.Background(), addr, 4)
	if conns.Load() != 1 {
		t.Fatal("dialed ahead although a connection was idle")
	}
	d2 := tr.Expect(context.Background(), addr, 4)
	waitConns(t, conns, 2)
	// The limit counts busy, idle and dialing connections: with 2 idle and a limit of 2, none more.
	for deadline := time.Now().Add(5 * time.Second); idleCount(tr) != 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second connection never reached the pool")
		}
	}
	d3 := tr.Expect(context.Background(), addr, 2)
	if n := dialingCount(tr); n != 0 || conns.Load() != 2 {
		t.Fatalf("%d connections and %d dialing with a limit of 2", conns.Load(), n)
	}
	d1()
	d2()
	d3()
	tr.mu.Lock()
	left := len(tr.expected)
	tr.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d addresses still expected after every expectation ended", left)
	}

	nr := New(Config{NoReuse: true})
	nrDone := nr.Expect(context.Background(), addr, 4)
	if n := dialingCount(nr); n != 0 || conns.Load() != 2 {
		t.Fatalf("a no-reuse transport dialed ahead: %d dialing", n)
	}
	nrDone()
}

// BenchmarkBurstConnectTime: 16 requests due at one instant to a server whose connections take
// 20 ms to open (a distant server's handshake; loopback's take microseconds), each dialing when due
// against each expected 50 ms ahead (Expect). Reports the time from the due instant to each request
// having its connection (its start, as records count it), p50 and max.
//
//	go test ./engine/h1client -run '^$' -bench BurstConnectTime -benchtime 5x
func BenchmarkBurstConnectTime(b *testing.B) {
	const burst, connectTime, lead = 16, 20 * time.Millisecond, 50 * time.Millisecond
	base, _ := countingServer(b, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	u, _ := url.Parse(base)
	var d net.Dialer
	slowDial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		time.Sleep(connectTime)
		return d.DialContext(ctx, network, addr)
	}
	for _, ahead := range []bool{false, true} {
		name := "dial_when_due"
		if ahead {
			name = "connection_opened_ahead"
		}
		b.Run(name, func(b *testing.B) {
			var waits []float64
			for b.Loop() {
				tr := New(Config{MaxIdle: 64, Dial: slowDial}) // a fresh pool: every request needs a connection
				due := time.Now().Add(lead)
				got := make(chan float64, burst)
				for range burst {
					go func() {
						if ahead {
							done := tr.Expect(context.Background(), Addr(u), burst)
							time.Sleep(time.Until(due))
							done()
						}
						time.Sleep(time.Until(due))
						ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
							GotConn: func(httptrace.GotConnInfo) { got <- float64(time.Since(due).Microseconds()) / 1000 }})
						req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/", strings.NewReader("{}"))
						if resp, err := (&http.Client{Transport: tr}).Do(req); err == nil {
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
					}()
				}
				for range burst {
					waits = append(waits, <-got)
				}
				tr.CloseIdleConnections()
			}
			slices.Sort(waits)
			b.ReportMetric(waits[len(waits)/2], "conn-wait-p50-ms")
			b.ReportMetric(waits[len(waits)-1], "conn-wait-max-ms")
		})
	}
}
