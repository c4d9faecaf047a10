package engine

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/plload/plload/engine/h1client"
	"github.com/plload/plload/protocol"
	"github.com/plload/plload/workload"
)

// HTTPClientEnv names the environment variable that puts http:// targets on Go's net/http client
// instead of plload's HTTP/1.1 one (PLLOAD_HTTP_CLIENT=net/http), or on plload's client with each
// streamed body read on its request's goroutine instead of the poller (=h1-blocking, the client of
// the release before): for a side-by-side comparison, or a server the lean client does not get on
// with.
const HTTPClientEnv = "PLLOAD_HTTP_CLIENT"

// newTransports returns the stage's transport and the one a retry uses (a new connection per
// request). target.http picks the protocol (httpProtocols); HTTP/1.1 on http:// targets gets the lean
// HTTP/1.1 client (package h1client) with its poller unless HTTPClientEnv says otherwise; https://
// targets and HTTP/2 always get net/http, whose HTTP/2 shares a connection among streams as the
// server's SETTINGS allow.
func newTransports(sc *workload.Scenario, baseURL string, maxConns int, getenv func(string) string) (http.RoundTripper, http.RoundTripper, error) {
	protocols, err := httpProtocols(sc.Target.HTTP, baseURL)
	if err != nil {
		return nil, nil, err
	}
	switch v := getenv(HTTPClientEnv); {
	case v != "" && v != "net/http" && v != "h1-blocking":
		return nil, nil, fmt.Errorf("%s=%q: accepted are net/http, h1-blocking, or unset for plload's own HTTP/1.1 client on http:// targets", HTTPClientEnv, v)
	case strings.HasPrefix(baseURL, "http://") && !protocols.UnencryptedHTTP2() && (v == "" || v == "h1-blocking"):
		var p *h1client.Poller
		if v == "" {
			p, _ = h1client.SharedPoller() // none (not Linux): bodies are read on their requests' goroutines
		}
		return h1client.New(h1client.Config{MaxIdle: maxConns + 16, Poller: p}), h1client.New(h1client.Config{NoReuse: true, Poller: p}), nil
	}
	tr, err := newTransport(sc, baseURL, maxConns, protocols)
	if err != nil {
		return nil, nil, err
	}
	fresh := tr.Clone()
	fresh.DisableKeepAlives = true // on HTTP/2 too: the retry's connection carries that one stream
	return tr, fresh, nil
}

// httpProtocols is what target.http allows on baseURL's scheme: "1.1" HTTP/1.1 only; "2" HTTP/2 only
// (h2c with prior knowledge on http://, offered by ALPN alone on https://); "auto" (or unset)
// HTTP/2 where TLS negotiates it by ALPN, else HTTP/1.1 — on http:// that is HTTP/1.1, as a client
// cannot know that a cleartext server speaks HTTP/2 without trying.
func httpProtocols(version, baseURL string) (*http.Protocols, error) {
	var p http.Protocols
	tls := strings.HasPrefix(baseURL, "https://")
	switch version {
	case "", workload.DefaultHTTP:
		p.SetHTTP1(true)
		p.SetHTTP2(tls)
	case "1.1":
		p.SetHTTP1(true)
	case "2":
		p.SetHTTP2(tls)
		p.SetUnencryptedHTTP2(!tls)
	default:
		return nil, fmt.Errorf("target.http %q: accepted are %s", version, strings.Join(workload.HTTPVersions, ", "))
	}
	return &p, nil
}

// newTransport is tuned for load generation: keep-alive so each in-flight session holds one
// HTTP/1.1 connection (or a stream of a shared HTTP/2 one), no compression (it would hide the
// server's byte timing), the protocols target.http allows, and the scenario's TLS.
func newTransport(sc *workload.Scenario, baseURL string, maxConns int, protocols *http.Protocols) (*http.Transport, error) {
	tr := &http.Transport{
		Proxy:               nil, // a proxy would be measured too; load tests go straight to the target
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        maxConns + 16,
		MaxIdleConnsPerHost: maxConns + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		TLSHandshakeTimeout: 10 * time.Second,
		Protocols:           protocols,
	}
	if strings.HasPrefix(baseURL, "https://") || strings.HasPrefix(sc.Target.BaseURL, "https://") {
		cfg := &tls.Config{InsecureSkipVerify: sc.Target.TLS.InsecureSkipVerify} //nolint:gosec // the user asked for it; validate warns
		if ca := sc.Target.TLS.CAFile; ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return nil, fmt.Errorf("target.tls.ca_file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("target.tls.ca_file %s: no PEM certificates in it", ca)
			}
			cfg.RootCAs = pool
		}
		tr.TLSClientConfig = cfg
	}
	return tr, nil
}

// prepareClient builds the stage's HTTP client, URL and headers. Each stage gets fresh connections.
func (s *stageRun) prepareClient() error {
	sc := s.cfg.Scenario
	base := s.cfg.BaseURL
	if base == "" {
		base = workload.Expand(sc.Target.BaseURL, s.cfg.Getenv)
	}
	target := parseTarget(base)
	target.base = strings.TrimRight(target.base, "/")
	base = target.base
	s.base, s.target = base, target
	if !sc.Retrieval() {
		api, err := protocol.For(sc.Target.Endpoint)
		if err != nil {
			return err
		}
		s.api, s.url = api, target.at(api.Path())
	} else if api, ok := protocol.RetrievalFor(sc.Target.Endpoint); ok {
		s.url = target.at(api.Path())
	}
	s.host = strings.TrimPrefix(strings.TrimPrefix(base, "http://"), "https://")
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		s.host = u.Host
	}
	// One connection per request that can be in flight: concurrency sessions, arrival_rate's open
	// sessions, or the open-loop modes' max_in_flight.
	maxConns := s.pool.Spec.Concurrency + s.pool.Spec.MaxConcurrency + s.maxInFlight()
	tr, fresh, err := newTransports(sc, base, maxConns, s.cfg.Getenv)
	if err != nil {
		return err
	}
	s.conns.requireHTTP2 = sc.Target.HTTP == "2"
	s.client = &http.Client{Transport: tr, CheckRedirect: noRedirects}
	s.freshClient = &http.Client{Transport: fresh, CheckRedirect: noRedirects}
	if u, err := url.Parse(s.url); err == nil {
		if _, ok := tr.(*h1client.Transport); ok {
			s.connAddr = h1client.Addr(u)
		}
	}
	s.headers = http.Header{}
	s.sessionHeader = sc.Target.SessionHeader
	s.headers.Set("Content-Type", "application/json")
	s.headers.Set("Accept", "text/event-stream")
	s.headers.Set("User-Agent", "plload")
	// Asked for explicitly: net/http's transport (DisableCompression) and h1client send no
	// Accept-Encoding at all, which lets a server choose gzip, and a compressed stream's bytes arrive
	// in bursts that hide the server's token timing. An answer compressed anyway is an error naming
	// its Content-Encoding (send).
	s.headers.Set("Accept-Encoding", "identity")
	// The API says how the key goes (Authorization: Bearer, or the Messages API's x-api-key) and
	// adds the headers it requires; the key is a secret either way.
	key := ""
	if env := sc.Target.APIKeyEnv; env != "" {
		key = s.cfg.Getenv(env)
	}
	if s.api != nil {
		s.api.SetHeaders(s.headers, key)
	} else if api, ok := protocol.RetrievalFor(sc.Target.Endpoint); ok {
		s.headers.Set("Accept", "application/json") // a retrieval answer is one JSON body
		api.SetHeaders(s.headers, key)
	}
	if key != "" {
		s.secrets = addSecret(s.secrets, key)
	}
	for k, v := range sc.Target.Headers {
		value := workload.Expand(v, s.cfg.Getenv)
		s.headers.Set(k, value)
		if workload.IsSecretHeader(k) {
			s.secrets = headerSecrets(s.secrets, v, value, s.cfg.Getenv)
		}
	}
	s.secrets = target.authorize(s.headers, s.secrets)
	if err := s.prepareRetrieval(target); err != nil || s.api == nil {
		return err
	}
	s.body, err = protocol.NewBody(s.api, sc, s.cfg.Workload)
	return err
}

// noRedirects stops the client at a 3xx answer, which send records as an error naming its
// Location: a load test measures the one target the user named, and following a redirect would
// measure another server (with the API key sent to it), or turn a POST into a GET (302, 303).
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// maxMessageBytes bounds a record's error message (docs/records.md: a non-2xx answer's body is
// kept up to 4 KiB).
const maxMessageBytes = 4 << 10
