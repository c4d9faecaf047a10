package h1client

import (
	"context"
	"net"
	"net/url"
	"sync"
)

// Expect says that a request to addr is to go soon — an open-loop arrival prepared ahead of its
// time — so that the pool can have a connection ready for it: while the idle connections to addr and
// the dials under way are fewer than the requests expected, it opens one more, in the background,
// into the idle pool. When the request is due it takes a pooled connection as any request does,
// instead of dialing (16 arrivals at one instant would dial 16 at once, each a round trip to a
// distant server). At most limit connections are busy, idle or being dialed — the stage's in-flight
// cap, which bounds the connections a stage holds and the files its check counted. A transport that
// opens a connection per request dials nothing ahead. done ends the expectation, when the request
// is due or will never go; calling it again does nothing.
func (t *Transport) Expect(ctx context.Context, addr string, limit int) (done func()) {
	t.mu.Lock()
	t.expected[addr]++
	dial := !t.noReuse && len(t.idle[addr])+t.dialing[addr] < t.expected[addr] && t.busy+t.nIdle+t.dialingAll < limit
	if dial {
		t.dialing[addr]++
		t.dialingAll++
	}
	t.mu.Unlock()
	if dial {
		go func() {
			c, err := t.dialConn(ctx, addr)
			t.mu.Lock()
			t.dialing[addr]--
			t.dialingAll--
			t.mu.Unlock()
			if err == nil {
				t.put(c)
			} // a dial that failed is the request's to make again, and to report
		}()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			if t.expected[addr]--; t.expected[addr] == 0 {
				delete(t.expected, addr)
			}
			t.mu.Unlock()
		})
	}
}

// expectedAll is the requests expected soon, over every address; t.mu is held. The idle pool keeps
// that many connections beyond its usual bound, so that those dialed for them are not closed first.
func (t *Transport) expectedAll() int {
	n := 0
	for _, e := range t.expected {
		n += e
	}
	return n
}

// Addr is the host:port a request to u goes to, as RoundTrip and Expect name it.
func Addr(u *url.URL) string {
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "80")
	}
	return u.Host
}
