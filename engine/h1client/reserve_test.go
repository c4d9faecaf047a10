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

// reservedDo sends one request carrying r and returns its body and whether its connection was a
// pooled one.
func reservedDo(t *testing.T, tr *Transport, r *Reserved, target string) (string, bool) {
	t.Helper()
	var reused bool
	ctx := httptrace.WithClientTrace(WithReserved(context.Background(), r), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return string(b), reused
}

// waitConns waits until the server has accepted n connections.
func waitConns(t *testing.T, conns interface{ Load() int64 }, n int64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); conns.Load() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server accepted %d connections, want %d", conns.Load(), n)
		}
	}
}

// TestReserveHoldsAConnectionForAPreparedRequest: a reservation dials ahead (the request then dials
// nothing) or takes an idle connection; at most limit connections are busy or held; one given back
// unused joins the pool; one the server closed while it waited is replaced at the send, not failed.
func TestReserveHoldsAConnectionForAPreparedRequest(t *testing.T) {
	base, conns := countingServer(t, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	u, _ := url.Parse(base)
	addr := Addr(u)
	tr := New(Config{MaxIdle: 8})
	defer tr.CloseIdleConnections()

	// Dialed ahead: the server has the connection before the request goes, and the request opens none.
	r := tr.Reserve(context.Background(), addr, 4)
	if r == nil {
		t.Fatal("no reservation under the limit")
	}
	waitConns(t, conns, 1)
	if got, reused := reservedDo(t, tr, r, base+"/a"); got != "ok" || reused || conns.Load() != 1 {
		t.Fatalf("%q reused %v with %d connections; want ok on the one dialed ahead", got, reused, conns.Load())
	}
	r.Release() // after its request took it: nothing happens

	// Taken from the pool: no dial at all.
	r = tr.Reserve(context.Background(), addr, 4)
	if got, reused := reservedDo(t, tr, r, base+"/b"); got != "ok" || !reused || conns.Load() != 1 {
		t.Fatalf("%q reused %v with %d connections; want ok on the pooled one", got, reused, conns.Load())
	}

	// The limit counts busy and held connections.
	held := []*Reserved{tr.Reserve(context.Background(), addr, 2), tr.Reserve(context.Background(), addr, 2)}
	if held[0] == nil || held[1] == nil {
		t.Fatal("no reservation under the limit")
	}
	if extra := tr.Reserve(context.Background(), addr, 2); extra != nil {
		t.Fatal("a third connection held with a limit of 2")
	}
	waitConns(t, conns, 2)
	// Given back unused (the arrival never went): both join the pool and serve later requests.
	held[0].Release()
	held[1].Release()
	held[1].Release()
	tr.mu.Lock()
	idle, reserved := tr.nIdle, tr.reserved
	tr.mu.Unlock()
	if idle != 2 || reserved != 0 {
		t.Fatalf("after release: %d idle, %d held; want 2 and 0", idle, reserved)
	}
	if got, reused, _ := h1Do(t, tr, http.MethodPost, base+"/c", "{}"); got != "ok" || !reused || conns.Load() != 2 {
		t.Fatalf("%q reused %v with %d connections; want a released one", got, reused, conns.Load())
	}

	// A transport that opens a connection per request holds none.
	if (New(Config{NoReuse: true})).Reserve(context.Background(), addr, 4) != nil {
		t.Fatal("a no-reuse transport held a connection")
	}
}

// TestReservedConnectionTheServerClosed: a held connection the server closed before the request
// went is not used; the request goes on a new one and succeeds.
func TestReservedConnectionTheServerClosed(t *testing.T) {
	base, conns := countingServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		w.Write([]byte("ok"))
	})
	u, _ := url.Parse(base)
	tr := New(Config{MaxIdle: 8})
	defer tr.CloseIdleConnections()
	r := tr.Reserve(context.Background(), Addr(u), 4)
	waitConns(t, conns, 1)
	<-r.ready
	r.c.nc.CloseRead() // as if the server's FIN had come in
	r.c.nc.CloseWrite()
	if got, reused := reservedDo(t, tr, r, base+"/a"); got != "ok" || reused {
		t.Fatalf("%q reused %v; want ok on a new connection", got, reused)
	}
	waitConns(t, conns, 2)
}

// BenchmarkBurstConnectTime: 16 requests due at one instant to a server whose connections take
// 20 ms to open (a distant server's handshake; loopback's take microseconds), each dialing when due
// against each with a connection held for it 50 ms ahead (Reserve). Reports the time from the due
// instant to each request having its connection (its start, as records count it), p50 and max.
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
	for _, held := range []bool{false, true} {
		name := "dial_when_due"
		if held {
			name = "connection_held_ahead"
		}
		b.Run(name, func(b *testing.B) {
			var waits []float64
			for b.Loop() {
				tr := New(Config{MaxIdle: 64, Dial: slowDial}) // a fresh pool: every request needs a connection
				due := time.Now().Add(lead)
				got := make(chan float64, burst)
				for range burst {
					go func() {
						var r *Reserved
						if held {
							r = tr.Reserve(context.Background(), Addr(u), burst)
							defer r.Release()
						}
						time.Sleep(time.Until(due))
						ctx := httptrace.WithClientTrace(WithReserved(context.Background(), r), &httptrace.ClientTrace{
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
