package mock

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// clientFor is a client that speaks only the protocols named, trusting the mock's certificate when
// it has one.
func clientFor(t *testing.T, m *Running, h1, h2, h2c bool) *http.Client {
	t.Helper()
	var p http.Protocols
	p.SetHTTP1(h1)
	p.SetHTTP2(h2)
	p.SetUnencryptedHTTP2(h2c)
	tr := &http.Transport{Protocols: &p}
	if pem := m.CACertPEM(); pem != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			t.Fatal("CACertPEM holds no certificate")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func startTLS(t *testing.T, mutate func(*Config)) *Running {
	t.Helper()
	cfg := DefaultConfig()
	cfg.TTFT, cfg.TPS = 5*time.Millisecond, 1000
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := StartTLS(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return r
}

// TestServesEachProtocol: one cleartext port answers HTTP/1.1 and h2c with prior knowledge; the TLS
// mock answers HTTP/2 or HTTP/1.1 as ALPN picks, with a certificate its CACertPEM verifies; the
// stream is the same whole answer on each.
func TestServesEachProtocol(t *testing.T) {
	plain, secure := start(t, nil), startTLS(t, nil)
	if got := secure.BaseURL(); got[:8] != "https://" {
		t.Fatalf("TLS BaseURL %q", got)
	}
	for _, tc := range []struct {
		name        string
		m           *Running
		h1, h2, h2c bool
		want        string
	}{
		{"cleartext HTTP/1.1", plain, true, false, false, "HTTP/1.1"},
		{"h2c prior knowledge", plain, false, false, true, "HTTP/2.0"},
		{"TLS, ALPN offers both", secure, true, true, false, "HTTP/2.0"},
		{"TLS, HTTP/1.1 only", secure, true, false, false, "HTTP/1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := chatBody(t, []map[string]string{{"role": "user", "content": "hello"}}, map[string]any{"max_tokens": 6, "ignore_eos": true})
			resp := post(t, clientFor(t, tc.m, tc.h1, tc.h2, tc.h2c), tc.m.BaseURL()+"/chat/completions", body)
			defer resp.Body.Close()
			events, err := readEvents(t, resp.Body)
			content, _ := tokensOf(events)
			if resp.Proto != tc.want || err != nil || len(content) != 6 || events[len(events)-1].data != "[DONE]" {
				t.Fatalf("%s: %d tokens, read error %v, last event %v; want %s, 6 tokens, [DONE]", resp.Proto, len(content), err, events[len(events)-1], tc.want)
			}
		})
	}
}

// TestCutOnHTTP2BreaksTheStream: a cut fault cannot close a connection other streams share; on
// HTTP/2 it resets its own stream, so the client still sees a broken answer, never a clean end.
func TestCutOnHTTP2BreaksTheStream(t *testing.T) {
	m := start(t, func(c *Config) { c.Faults = map[FaultKind]float64{FaultCut: 1} })
	client := clientFor(t, m, false, false, true)
	body := chatBody(t, []map[string]string{{"role": "user", "content": "hello"}}, map[string]any{"max_tokens": 10})
	resp, err := client.Post(m.BaseURL()+"/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, readErr := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 2 || readErr == nil || errors.Is(readErr, io.EOF) {
		t.Fatalf("%s: read error %v; want HTTP/2 and a stream error", resp.Proto, readErr)
	}
}
