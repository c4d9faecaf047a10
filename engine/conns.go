package engine

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// connTally counts the connections that carried a stage's requests and the protocols its answers
// came in: on HTTP/2 many streams share one connection, and how many is part of what was measured.
//
// A connection is counted when a request is the first to use it (GotConn with Reused false), so the
// tally keeps no reference to connections that have closed. The exception is the connection the RTT
// probe opened before the stage, whose first stage request finds it already used: warm remembers it
// (a handful at most) so that its first stage request counts it once.
type connTally struct {
	opened atomic.Int64
	mu     sync.Mutex
	warm   map[net.Conn]bool // the probe's connections; true once a stage request counted it
	protos []string          // distinct resp.Proto values, in order of first sight
	// requireHTTP2: target.http is "2", so an answer over another protocol is a failure (a TLS
	// server that negotiated no ALPN protocol gets HTTP/1.1 from net/http even when only HTTP/2 is
	// enabled).
	requireHTTP2 bool
	// refusal is the first record message that said the server does not speak HTTP/2: the other
	// streams of that connection fail with net/http's "connection force closed", which is the same
	// cause and gets the same words while no answer has come over HTTP/2.
	refusal atomic.Pointer[string]
}

// probed remembers a connection the RTT probe used, before the stage's first request.
func (c *connTally) probed(info httptrace.GotConnInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.warm == nil {
		c.warm = map[net.Conn]bool{}
	}
	if _, seen := c.warm[info.Conn]; !seen {
		c.warm[info.Conn] = false
	}
}

// got counts the connection a stage request got, if no earlier request of the stage used it.
func (c *connTally) got(info httptrace.GotConnInfo) {
	if !info.Reused {
		c.opened.Add(1)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if counted, ok := c.warm[info.Conn]; ok && !counted {
		c.warm[info.Conn] = true
		c.opened.Add(1)
	}
}

// answered notes the protocol of an answer; it returns why the answer cannot be used ("" when it
// can): an HTTP/2-only stage that got something else.
func (c *connTally) answered(resp *http.Response, host string) string {
	c.mu.Lock()
	if !slices.Contains(c.protos, resp.Proto) {
		c.protos = append(c.protos, resp.Proto)
	}
	c.mu.Unlock()
	if c.requireHTTP2 && resp.ProtoMajor != 2 {
		return fmt.Sprintf(notHTTP2+"%s answered over %s (its TLS negotiated no HTTP/2 by ALPN): set target.http to auto or 1.1 for this server", host, resp.Proto)
	}
	return ""
}

// fill puts the tally in the stage's result.
func (c *connTally) fill(r *StageResult) {
	r.Connections = int(c.opened.Load())
	c.mu.Lock()
	r.Protocol = strings.Join(c.protos, ", ")
	c.mu.Unlock()
}

// notHTTP2 begins every record message of a target.http "2" stage whose server does not speak
// HTTP/2, so the preflight can name the fix rather than a TLS or connection problem.
const notHTTP2 = `target.http is "2" but `

// refused is the record message for err when it shows that the server does not speak HTTP/2, or
// came after such an error and before any answer (see refusal); "" otherwise.
func (c *connTally) refused(err error, host string) string {
	if !c.requireHTTP2 {
		return ""
	}
	c.mu.Lock()
	answered := len(c.protos) > 0
	c.mu.Unlock()
	if msg := http2Refused(err, host, answered); msg != "" {
		c.refusal.CompareAndSwap(nil, &msg)
		return msg
	}
	if first := c.refusal.Load(); first != nil && !answered {
		return *first
	}
	return ""
}

// http2Refused rewords the errors of an HTTP/2-only client that met an HTTP/1.1-only server, which
// would otherwise read as a broken TLS setup or a garbled frame; "" for any other error.
//   - TLS without ALPN h2: the handshake names the protocols.
//   - h2c: a server answering the preface with an HTTP/1.1 status line is recognised by net/http; one
//     that answers with bare bytes (Python's http.server sends an HTML 505 without a status line)
//     reads as an oversized or garbled first frame: taken as a refusal only before the stage's
//     first answer, when no HTTP/2 server causes them.
func http2Refused(err error, host string, answered bool) string {
	garbled := func(msg string) bool {
		// "could not be established": net/http's word for a connection whose HTTP/2 handshake failed,
		// as a retry on a fresh connection to such a server says it.
		return !answered && (strings.Contains(msg, "http2: frame too large") || strings.Contains(msg, "connection error: PROTOCOL_ERROR") ||
			strings.Contains(msg, "http2: client conn could not be established"))
	}
	switch msg := err.Error(); {
	case strings.Contains(msg, "no application protocol"), strings.Contains(msg, "unsupported application protocols"):
		return fmt.Sprintf(notHTTP2+"%s does not offer HTTP/2 (TLS refused ALPN h2: %v): set target.http to auto or 1.1 for this server", host, rootCause(err))
	case strings.Contains(msg, "looked like an HTTP/1.1 header"), garbled(msg):
		return fmt.Sprintf(notHTTP2+"%s did not answer the HTTP/2 preface in HTTP/2 (%v): it does not speak h2c (HTTP/2 without TLS); set target.http to 1.1, or use https:// if it speaks HTTP/2 over TLS", host, rootCause(err))
	}
	return ""
}

// streamReset is the error code of an HTTP/2 stream the server reset ("INTERNAL_ERROR"), or "".
// net/http's bundled HTTP/2 keeps its StreamError type unexported; its text is the only handle.
func streamReset(err error) string {
	msg := err.Error()
	i := strings.Index(msg, "stream error: stream ID ")
	if i < 0 || !strings.Contains(msg, "received from peer") {
		return ""
	}
	parts := strings.Split(msg[i:], "; ")
	if len(parts) < 2 {
		return "reset"
	}
	return parts[1]
}
