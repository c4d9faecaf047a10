package h1client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Transport is the HTTP/1.1 client for plain-http targets, the common case of a load test (a
// server on the cluster network). It does what net/http's Transport does for plload's requests —
// kept-alive connections in a pool, the httptrace hooks the engine times with, chunked and sized
// answers parsed by net/http's own http.ReadResponse — without the two goroutines per connection,
// the hand-offs between them and the locks on every body read. HTTPS, with its ALPN, certificates
// and edge cases, stays on net/http. A chunked answer's body can be read by the Poller (poller.go),
// one epoll loop per P for all connections, rather than through Read on the request's goroutine:
// see ReadPolled.
//
// Tried and not kept: a reader that, after a short read, waits for the poller before asking the
// kernel (one read syscall per chunk instead of two, the empty EAGAIN one saved). It needs the
// connection's whole life inside one RawConn.Read (each call clears the poller's ready token), run
// as a coroutine, plus a timer for an end that arrives with the last data; side by side at 256
// streams it cost 5–10 % more CPU per chunk than these plain reads (bench/README.md).
type Transport struct {
	dialer      net.Dialer
	dial        func(ctx context.Context, network, addr string) (net.Conn, error) // Config.Dial
	maxIdle     int
	idleTimeout time.Duration
	// noReuse opens a connection per request and closes it after (Config.NoReuse).
	noReuse bool
	// poller, when set, reads streamed answers' bodies (ReadPolled); nil: each on its request's goroutine.
	poller *Poller

	mu    sync.Mutex
	idle  map[string][]*h1Conn // by host:port, most recently used last
	nIdle int
	// busy counts the requests holding a connection; peak is its largest value in the current
	// idlePeakWindow and prevPeak in the one before. The pool keeps no more idle connections than
	// that recent peak (plus idleSpare): 5,000 sessions that start together and then think for
	// 30 s between turns need a few dozen connections, not 5,000 open sockets with their buffers.
	busy, peak, prevPeak int
	// expected counts, per address, the requests soon to go (Expect) and dialing the connections
	// being opened for them ahead of time: the pool dials ahead while its idle connections and dials
	// are fewer than the requests expected.
	expected, dialing map[string]int
	dialingAll        int
	peakSince         time.Time
	peakWindow        time.Duration // idlePeakWindow (a test shortens it)
}

// idlePeakWindow and idleSpare size the idle pool from recent use (see Transport.busy).
const (
	idlePeakWindow = 10 * time.Second
	idleSpare      = 16
)

// Config is how a Transport keeps its connections and reads its answers.
type Config struct {
	// MaxIdle bounds the idle connections kept for later requests; the recent peak of busy ones
	// bounds them further (see Transport.busy).
	MaxIdle int
	// NoReuse opens a connection per request, asks the server to close it (Connection: close) and
	// closes it after the answer: the engine's retry of a request whose kept-alive connection the
	// server had closed.
	NoReuse bool
	// Poller, when set, reads chunked answers' bodies (ReadPolled); nil: each is read through its
	// body's Read, on its request's goroutine.
	Poller *Poller
	// Dial opens a TCP connection; nil: a net.Dialer with a 10 s timeout. The benchmark of held
	// connections gives one that takes a known time, as a distant server's handshake does.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// New returns a Transport with no connections yet.
func New(cfg Config) *Transport {
	return &Transport{
		poller:      cfg.Poller,
		dial:        cfg.Dial,
		dialer:      net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second},
		maxIdle:     cfg.MaxIdle,
		idleTimeout: 90 * time.Second,
		noReuse:     cfg.NoReuse,
		idle:        map[string][]*h1Conn{},
		expected:    map[string]int{},
		dialing:     map[string]int{},
		peakWindow:  idlePeakWindow,
	}
}

// Config is what t was made with.
func (t *Transport) Config() Config {
	return Config{MaxIdle: t.maxIdle, NoReuse: t.noReuse, Poller: t.poller, Dial: t.dial}
}

// h1Conn is one connection with its read buffer and the request buffer it reuses.
type h1Conn struct {
	nc        *net.TCPConn
	raw       syscall.RawConn
	fd        int // the socket, for the poller's reads
	br        *bufio.Reader
	reads     stampedReads // br's source
	wbuf      []byte
	addr      string
	idleSince time.Time
}

func (c *h1Conn) close() { c.nc.Close() }

// stampedReads reads the connection and keeps the time its last read returned bytes: the bytes of
// an answer that come in the same read as its headers are stamped with that time, not with the
// later moment they are handed to the poller (ReadPolled).
type stampedReads struct {
	conn *net.TCPConn
	last time.Time
}

func (r *stampedReads) Read(p []byte) (int, error) {
	n, err := r.conn.Read(p)
	if n > 0 {
		r.last = time.Now()
	}
	return n, err
}

// usable says whether a pooled connection can carry another request: the server has neither closed
// it nor sent anything unasked. One non-blocking peek; a server that closed it while it sat idle
// (llama.cpp closes after every answer, uvicorn after 5 s) is found here rather than by a failed
// request and a retry.
func (c *h1Conn) usable() bool {
	ok := false
	err := c.raw.Read(func(fd uintptr) bool {
		var one [1]byte
		n, _, errno := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ok = n <= 0 && errno == syscall.EAGAIN // 0 with no error: the server's FIN; n > 0: bytes nobody asked for
		return true
	})
	return err == nil && ok
}

// alive reports whether a pooled connection may take a request: idle for less than idleTimeout,
// nothing unasked-for in its buffer, and not closed by the server.
func (c *h1Conn) alive(idleTimeout time.Duration) bool {
	return time.Since(c.idleSince) < idleTimeout && c.br.Buffered() == 0 && c.usable()
}

// aLongTimeAgo is a deadline in the past: setting it makes a blocked read or write return at once.
var aLongTimeAgo = time.Unix(1, 0)

// RoundTrip sends req on a pooled or new connection and returns the answer, whose body gives the
// connection back to the pool once read to its end.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.URL.Scheme != "http" {
		closeBody(req)
		return nil, fmt.Errorf("plload's HTTP/1.1 client serves http:// only, not %s://", req.URL.Scheme)
	}
	c, reused, err := t.conn(ctx, Addr(req.URL))
	if err != nil {
		closeBody(req)
		return nil, err
	}
	t.use(+1)
	trace := httptrace.ContextClientTrace(ctx)
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: c.nc, Reused: reused})
	}
	// The request's context ends a blocked read or write by moving the deadline to the past; such a
	// connection is never pooled again.
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(aLongTimeAgo) })
	resp, err := c.exchange(req, trace, t.noReuse)
	if err != nil {
		closeBody(req) // a RoundTripper closes the body, whichever write failed
		stop()
		t.use(-1)
		c.close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, err
	}
	reuse := !t.noReuse && !resp.Close && !req.Close
	polled := t.poller != nil && len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked"
	resp.Body = &h1Body{inner: resp.Body, t: t, c: c, stop: stop, reuse: reuse, polled: polled}
	return resp, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// exchange writes req and reads the answer's status line and headers.
func (c *h1Conn) exchange(req *http.Request, trace *httptrace.ClientTrace, closeAfter bool) (*http.Response, error) {
	// A body up to 64 KiB is copied behind the headers and goes in one write; a larger one (a
	// long prompt, a request with images) is written from its own bytes after the headers, so
	// that no second copy of it is made while it is in flight.
	inline := req.Body == nil || req.ContentLength <= 64<<10
	buf, err := c.appendRequest(c.wbuf[:0], req, closeAfter, inline)
	if err != nil {
		return nil, err
	}
	c.wbuf = buf
	if _, err := c.nc.Write(buf); err != nil {
		return nil, err
	}
	if !inline {
		// Content-Length bytes and no more, as the inline path copies: a body of another length
		// is an error, and its connection (closed on any error) is never reused.
		n, err := io.CopyN(c.nc, req.Body, req.ContentLength)
		if err == nil {
			if extra, _ := req.Body.Read(make([]byte, 1)); extra > 0 {
				err = fmt.Errorf("the request body is longer than its Content-Length %d", req.ContentLength)
			}
		} else if n < req.ContentLength && errors.Is(err, io.EOF) {
			err = fmt.Errorf("the request body had %d bytes, not its Content-Length %d", n, req.ContentLength)
		}
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	if _, err := c.br.Peek(1); err != nil {
		return nil, err // io.EOF here: the server closed the connection without answering
	}
	if trace != nil && trace.GotFirstResponseByte != nil {
		trace.GotFirstResponseByte()
	}
	for {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
		// A 1xx is informational; the answer follows on the same connection.
	}
}

// appendRequest renders req as HTTP/1.1 bytes: request line, Host, the request's headers,
// Content-Length and, with withBody, the body, written with one syscall.
func (c *h1Conn) appendRequest(buf []byte, req *http.Request, closeAfter, withBody bool) ([]byte, error) {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	buf = append(buf, req.Method...)
	buf = append(buf, ' ')
	buf = append(buf, req.URL.RequestURI()...)
	buf = append(buf, " HTTP/1.1\r\nHost: "...)
	buf = append(buf, host...)
	buf = append(buf, "\r\n"...)
	for name, values := range req.Header {
		if !validHeaderName(name) {
			return nil, fmt.Errorf("invalid header name %q", name)
		}
		for _, v := range values {
			if strings.ContainsAny(v, "\r\n\x00") {
				return nil, fmt.Errorf("invalid header value for %s: it holds a line break or NUL", name)
			}
			buf = append(buf, name...)
			buf = append(buf, ": "...)
			buf = append(buf, v...)
			buf = append(buf, "\r\n"...)
		}
	}
	if closeAfter {
		buf = append(buf, "Connection: close\r\n"...)
	}
	if req.Body != nil && req.ContentLength < 0 {
		return nil, errors.New("a request body of unknown length (plload sends sized bodies only)")
	}
	if req.ContentLength > 0 || req.Method == http.MethodPost {
		buf = append(buf, "Content-Length: "...)
		buf = fmt.Appendf(buf, "%d", req.ContentLength)
		buf = append(buf, "\r\n"...)
	}
	buf = append(buf, "\r\n"...)
	if req.Body != nil && withBody {
		defer req.Body.Close()
		n := len(buf)
		buf = append(buf, make([]byte, req.ContentLength)...)
		if _, err := io.ReadFull(req.Body, buf[n:]); err != nil {
			return nil, fmt.Errorf("reading the request body: %w", err)
		}
	}
	return buf, nil
}

// validHeaderName: an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// conn takes the most recently used idle connection to addr that is still alive, or dials one.
func (t *Transport) conn(ctx context.Context, addr string) (*h1Conn, bool, error) {
	for !t.noReuse {
		c := t.takeIdle(addr)
		if c == nil {
			break
		}
		if c.alive(t.idleTimeout) {
			return c, true, nil
		}
		c.close()
	}
	c, err := t.dialConn(ctx, addr)
	return c, false, err
}

// dialConn opens a new connection to addr.
func (t *Transport) dialConn(ctx context.Context, addr string) (*h1Conn, error) {
	dial := t.dial
	if dial == nil {
		dial = t.dialer.DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tcp, ok := nc.(*net.TCPConn)
	if !ok {
		nc.Close()
		return nil, fmt.Errorf("dialing %s gave a %T, not a TCP connection", addr, nc)
	}
	raw, err := tcp.SyscallConn()
	if err != nil {
		nc.Close()
		return nil, err
	}
	fd := -1
	raw.Control(func(s uintptr) { fd = int(s) })
	c := &h1Conn{nc: tcp, raw: raw, fd: fd, addr: addr}
	c.br = bufio.NewReaderSize(&c.reads, 4<<10)
	c.reads.conn = tcp
	return c, nil
}

func (t *Transport) takeIdle(addr string) *h1Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	list := t.idle[addr]
	if len(list) == 0 {
		return nil
	}
	c := list[len(list)-1]
	list[len(list)-1] = nil
	t.idle[addr] = list[:len(list)-1]
	t.nIdle--
	return c
}

// use counts a request taking (+1) or giving back (−1) its connection and keeps the recent peak.
func (t *Transport) use(delta int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.busy += delta
	if now := time.Now(); now.Sub(t.peakSince) > t.peakWindow {
		t.prevPeak, t.peak, t.peakSince = t.peak, t.busy, now
	}
	t.peak = max(t.peak, t.busy)
}

// put returns a connection whose answer was read to its end. Over the idle limit — maxIdle, or the
// recent peak of busy connections plus idleSpare — the connections idle longest are closed.
func (t *Transport) put(c *h1Conn) {
	c.idleSince = time.Now()
	var evicted []*h1Conn
	t.mu.Lock()
	t.idle[c.addr] = append(t.idle[c.addr], c)
	t.nIdle++
	for t.nIdle > min(t.maxIdle, max(t.peak, t.prevPeak)+idleSpare+t.expectedAll()) {
		var oldest *h1Conn
		addr := ""
		for a, list := range t.idle {
			if len(list) > 0 && (oldest == nil || list[0].idleSince.Before(oldest.idleSince)) {
				oldest, addr = list[0], a
			}
		}
		list := t.idle[addr]
		list[0] = nil // else the list's array keeps the closed connection, buffers and all
		t.idle[addr] = list[1:]
		t.nIdle--
		evicted = append(evicted, oldest)
	}
	t.mu.Unlock()
	for _, c := range evicted {
		c.close()
	}
}

// CloseIdleConnections closes every pooled connection (http.Client calls it).
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle, t.nIdle = map[string][]*h1Conn{}, 0
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.close()
		}
	}
}

// h1Body is an answer's body. Read to io.EOF on a keep-alive connection, it gives the connection
// back to the pool; closed earlier (or from another goroutine, as the engine's drain timer does),
// it closes the connection, which also ends a read blocked on it.
type h1Body struct {
	inner io.ReadCloser
	t     *Transport
	c     *h1Conn
	stop  func() bool
	reuse bool
	// polled: the body is chunked and the transport has a poller, so a streamed answer can be read
	// there (ReadPolled) rather than through Read.
	polled bool
	done   atomic.Bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.done.Load() {
		return 0, net.ErrClosed
	}
	n, err := b.inner.Read(p)
	if errors.Is(err, io.EOF) {
		b.finish(true)
	}
	return n, err
}

func (b *h1Body) Close() error {
	b.finish(false)
	return nil
}

func (b *h1Body) finish(atEOF bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	b.t.use(-1)
	// stop is false when the request's context already ended and poisoned the deadline.
	if b.stop() && atEOF && b.reuse && b.c.br.Buffered() == 0 {
		b.t.put(b.c)
		return
	}
	b.c.close()
}
