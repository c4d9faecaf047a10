package h1client

import (
	"context"
	"net"
	"net/url"
	"sync/atomic"
)

// Reserved is a connection held for one request that is to go soon: an open-loop arrival prepared
// ahead of its time (Transport.Reserve), so that when it is due only its write remains, not a dial.
type Reserved struct {
	t     *Transport
	addr  string
	ready chan struct{} // closed when c is set (or the dial failed: c nil)
	c     *h1Conn
	// reused: c came from the idle pool, not a dial made for it (httptrace's GotConnInfo.Reused).
	reused bool
	state  atomic.Int32 // reservedHeld, then reservedTaken or reservedReleased
	given  atomic.Bool  // the released connection went to the pool (once: Release or the dial)
}

const (
	reservedHeld int32 = iota
	reservedTaken
	reservedReleased
)

// Reserve holds a connection to addr for a request that is to go soon: an idle one, or one dialed
// now, in the background, so that the caller (preparing the request) never waits for it. At most
// limit connections are busy or reserved at once — the stage's in-flight cap, which bounds the
// connections a stage holds and the files its check counted — so past that, and on a transport
// that opens a connection per request, it returns nil: the request dials when it goes, as any other.
// The request carries the reservation in its context (WithReserved); Release gives back one it did
// not take.
func (t *Transport) Reserve(ctx context.Context, addr string, limit int) *Reserved {
	if t.noReuse {
		return nil
	}
	t.mu.Lock()
	if t.busy+t.reserved >= limit {
		t.mu.Unlock()
		return nil
	}
	t.reserved++
	t.mu.Unlock()
	r := &Reserved{t: t, addr: addr, ready: make(chan struct{})}
	for {
		c := t.takeIdle(addr)
		if c == nil {
			break
		}
		if c.alive(t.idleTimeout) {
			r.c, r.reused = c, true
			close(r.ready)
			return r
		}
		c.close()
	}
	go func() {
		c, _, err := t.conn(ctx, addr)
		if err == nil {
			r.c = c
		}
		close(r.ready)
		if r.state.Load() == reservedReleased { // its request went without it, or never went
			r.giveBack()
		}
	}()
	return r
}

// Addr is the host:port a request to u goes to, as Reserve and RoundTrip name it.
func Addr(u *url.URL) string {
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "80")
	}
	return u.Host
}

type reservedKey struct{}

// WithReserved returns ctx carrying r (nil: ctx itself): RoundTrip sends the request on r's
// connection when it is ready and alive, else on a pooled or new one.
func WithReserved(ctx context.Context, r *Reserved) context.Context {
	if r == nil {
		return ctx
	}
	return context.WithValue(ctx, reservedKey{}, r)
}

// takeReserved is the reserved connection for a request to addr, if its context carries one that is ready
// and alive; it is the request's from then on.
func (t *Transport) takeReserved(ctx context.Context, addr string) (*h1Conn, bool) {
	r, _ := ctx.Value(reservedKey{}).(*Reserved)
	if r == nil || r.t != t || r.addr != addr {
		return nil, false
	}
	select {
	case <-r.ready:
	case <-ctx.Done(): // RoundTrip's own dial reports the context's end
		r.Release()
		return nil, false
	}
	// A dial still going when the request is due is waited for: it began earlier than a new one
	// would, so it ends sooner, and two dials per request would only add load at a burst.
	if !r.state.CompareAndSwap(reservedHeld, reservedTaken) {
		return nil, false
	}
	t.unreserve()
	if r.c == nil {
		return nil, false
	}
	if r.c.br.Buffered() != 0 || !r.c.usable() { // the server closed it while it waited
		r.c.close()
		return nil, false
	}
	return r.c, r.reused
}

// Release gives back a reservation its request did not take (it never went, or went on another
// connection): the connection joins the idle pool. Safe to call more than once, and after a take.
func (r *Reserved) Release() {
	if r == nil || !r.state.CompareAndSwap(reservedHeld, reservedReleased) {
		return
	}
	r.t.unreserve()
	select {
	case <-r.ready:
		r.giveBack()
	default: // the dial's goroutine gives it back when it is done
	}
}

// giveBack pools a released reservation's connection, once.
func (r *Reserved) giveBack() {
	if r.c != nil && r.given.CompareAndSwap(false, true) {
		r.t.put(r.c)
	}
}

func (t *Transport) unreserve() {
	t.mu.Lock()
	t.reserved--
	t.mu.Unlock()
}
