package mock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server is the mock's HTTP handler and state (cache, slots, metrics). It is safe for concurrent use.
type Server struct {
	cfg     Config
	tokens  *tokenCache
	images  *imageCache
	cache   *prefixCache
	metrics *serverMetrics
	gpu     *gpuModel     // GET /dcgm/metrics
	slots   chan struct{} // nil = unlimited
	scale   scaleClock    // when the slots change (Config.ScaleAfter)
	stop    chan struct{} // closed by Close: ends stalls and waits
	once    sync.Once
	mux     *http.ServeMux

	hijackedMu sync.Mutex
	hijacked   map[net.Conn]struct{}

	inFlight atomic.Int64 // requests between admission and their last byte, for BusyPoll

	// closing counts the slots a scale down has still to close: the next running requests to end
	// leave their tokens in (release) rather than free their slots.
	closing atomic.Int64

	// cpu bounds the requests being prepared at once (Config.SharesProcess); nil = unbounded.
	cpu      chan struct{}
	spinning atomic.Bool
}

// New returns a mock server for cfg, or what is wrong with cfg.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tc, err := newTokenCache(4_000_000)
	if err != nil {
		return nil, fmt.Errorf("loading the o200k_base tokenizer: %w", err)
	}
	s := &Server{cfg: cfg, tokens: tc, images: newImageCache(1 << 16), cache: newPrefixCache(cfg.CacheCapacity, cfg.CacheBlock),
		stop: make(chan struct{}), hijacked: map[net.Conn]struct{}{}}
	s.slots = newSlots(cfg)
	if cfg.SharesProcess {
		s.cpu = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1))
	}
	s.metrics = newServerMetrics(cfg.Model, s.cache)
	s.gpu = newGPUModel(s)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	s.mux.HandleFunc("POST /v1/completions", s.handleCompletions)
	s.mux.HandleFunc("POST /v1/messages", s.handleMessages)
	s.mux.Handle("POST /v1/responses", newResponsesHandler(s))
	s.mux.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	s.mux.HandleFunc("POST /v1/rerank", s.handleRerank)
	s.mux.HandleFunc("GET /v1/models", s.handleModels)
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	s.mux.Handle("GET /metrics", s.metrics.handler())
	s.mux.HandleFunc("GET /mock/stats", s.metrics.lateness.statsHandler)
	s.mux.Handle("GET /dcgm/metrics", s.gpu)
	return s, nil
}

// withCPU runs prepare, a request's CPU work before admission, within the mock's share of the
// process's cores (Config.SharesProcess).
func (s *Server) withCPU(prepare func() bool) bool {
	if s.cpu == nil {
		return prepare()
	}
	s.cpu <- struct{}{}
	defer func() { <-s.cpu }()
	return prepare()
}

// Config returns the configuration the server runs with.
func (s *Server) Config() Config { return s.cfg }

// ServeHTTP routes a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cfg.CloseAfterResponse {
		w.Header().Set("Keep-Alive", "timeout=5, max=100") // what llama.cpp promises, and does not keep
	}
	s.mux.ServeHTTP(w, r)
}

// Stop ends every stalled or waiting request and closes hijacked connections. Idempotent.
func (s *Server) Stop() {
	s.once.Do(func() {
		s.stopScaleClock()
		close(s.stop)
		s.hijackedMu.Lock()
		for c := range s.hijacked {
			_ = c.Close()
		}
		s.hijackedMu.Unlock()
	})
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	entries := make([]string, 0, 1+len(s.cfg.Models))
	for _, m := range s.cfg.listedModels() {
		entries = append(entries, `{"id":`+jsonString(m)+`,"object":"model","created":0,"owned_by":"plload"}`)
	}
	fmt.Fprintf(w, `{"object":"list","data":[%s]}`, strings.Join(entries, ","))
}

// Running is a mock listening on a real socket.
type Running struct {
	*Server
	listener net.Listener
	http     *http.Server
	served   chan struct{} // closed when Serve returns
	serveErr error
	caPEM    []byte // the self-signed certificate of a TLS mock (nil: cleartext)
}

// Start serves the mock on addr ("" = a free port on 127.0.0.1) without TLS: HTTP/1.1, and HTTP/2
// with prior knowledge (h2c) on the same port. A non-loopback address is allowed only because the
// caller named it, and is logged as a warning: the mock has no authentication.
func Start(cfg Config, addr string) (*Running, error) { return listenAndServe(cfg, addr, false) }

// StartTLS is Start over TLS with a self-signed certificate made for this run (CACertPEM):
// HTTP/2 or HTTP/1.1, as the client's ALPN asks.
func StartTLS(cfg Config, addr string) (*Running, error) { return listenAndServe(cfg, addr, true) }

// serverProtocols are the protocols the mock serves: HTTP/1.1 always, HTTP/2 over TLS when the
// client's ALPN offers it, and h2c when a cleartext client opens with HTTP/2's preface. The
// handlers and their timing are the same on each: every chunk is written and flushed at its time, a
// DATA frame on HTTP/2 as a chunk on HTTP/1.1.
func serverProtocols() *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	return &p
}

func listenAndServe(cfg Config, addr string, useTLS bool) (*Running, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	srv, err := New(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mock: listening on %s: %w", addr, err)
	}
	if !IsLoopback(addr) {
		slog.Warn("mock: listening on a non-loopback address; anyone who can reach it can use it (no authentication)", "addr", ln.Addr().String())
	}
	r := &Running{Server: srv, listener: ln, served: make(chan struct{}),
		http: &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, Protocols: serverProtocols()}}
	if useTLS {
		host, _, _ := net.SplitHostPort(addr)
		cert, caPEM, err := selfSigned(host)
		if err != nil {
			ln.Close()
			return nil, err
		}
		r.caPEM = caPEM
		r.http.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if cfg.CloseAfterResponse {
		// A connection turns idle once its answer is written and flushed: close it then, as
		// llama.cpp does, without the Connection: close that would warn the client.
		r.http.ConnState = func(c net.Conn, state http.ConnState) {
			if state == http.StateIdle {
				_ = c.Close()
			}
		}
	}
	serve := r.http.Serve
	if useTLS {
		serve = func(ln net.Listener) error { return r.http.ServeTLS(ln, "", "") }
	}
	go func() {
		if err := serve(ln); !errors.Is(err, http.ErrServerClosed) {
			r.serveErr = err
		}
		close(r.served)
	}()
	return r, nil
}

// Addr is the host:port the mock listens on.
func (r *Running) Addr() string { return r.listener.Addr().String() }

// BaseURL is the OpenAI base URL of the mock, ending in /v1 (https:// when it serves TLS).
func (r *Running) BaseURL() string {
	if r.caPEM != nil {
		return "https://" + r.Addr() + "/v1"
	}
	return "http://" + r.Addr() + "/v1"
}

// CACertPEM is the PEM of a TLS mock's self-signed certificate, which is its own CA: what a client
// trusts to reach it (nil for a cleartext mock).
func (r *Running) CACertPEM() []byte { return r.caPEM }

// Close stops the mock: stalls end, connections close, and it waits (until ctx ends) for handlers.
func (r *Running) Close(ctx context.Context) error {
	r.Stop()
	err := r.http.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		err = r.http.Close()
	}
	<-r.served
	if err == nil {
		err = r.serveErr
	}
	return err
}

// Wait blocks until the server stops serving (after Close, or on a fatal listener error).
func (r *Running) Wait() error {
	<-r.served
	return r.serveErr
}

// IsLoopback reports whether a host:port names only the loopback interface (127.0.0.0/8, ::1, localhost).
// An empty host (":8000") means every interface, which is not loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// beginTimed and endTimed bracket the part of a request whose sends are scheduled; with BusyPoll the
// first one in starts the spinner and the last one out lets it stop.
func (s *Server) beginTimed() {
	if !s.cfg.BusyPoll {
		return
	}
	s.inFlight.Add(1)
	if s.spinning.CompareAndSwap(false, true) {
		go s.spin()
	}
}

func (s *Server) endTimed() {
	if s.cfg.BusyPoll {
		s.inFlight.Add(-1)
	}
}

func (s *Server) spin() {
	for {
		for s.inFlight.Load() > 0 {
			runtime.Gosched()
		}
		s.spinning.Store(false)
		// A request may have arrived between the last check and the store; if so, and nobody else
		// took over, keep spinning.
		if s.inFlight.Load() == 0 || !s.spinning.CompareAndSwap(false, true) {
			return
		}
	}
}
