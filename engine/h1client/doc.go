// Package h1client is plload's HTTP/1.1 client for http:// targets: a Transport (an
// http.RoundTripper) with a pool of kept-alive connections, and a Poller, a few epoll loops that
// read the chunked bodies of every connection's streamed answers, each read stamped with the time
// it returned, and that measure how late they read (ReadLag).
//
// The engine sends requests through a Transport like any other RoundTripper, and hands each
// streamed answer's body to ReadPolled with a Sink, which gets the body's bytes as they are read and
// decodes them; this package knows HTTP/1.1, chunked framing, connections and the loops, not what
// the bytes say. Without a Poller (not Linux, or the engine's PLLOAD_HTTP_CLIENT=h1-blocking), a
// body is read through its Read on its request's goroutine, as net/http's are.
package h1client
