package cli

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMockserverTLSWritesItsCertificate: mockserver --tls --tls-cert-out serves https:// with a
// certificate written to the file before it says where it listens; a client trusting that file alone
// reaches it, over HTTP/2 when its ALPN offers it. --tls-cert-out without --tls is bad input.
func TestMockserverTLSWritesItsCertificate(t *testing.T) {
	if c, _, e := plload(t, "mockserver", "--tls-cert-out", filepath.Join(t.TempDir(), "c.pem")); c != 2 || !strings.Contains(e, "needs --tls") {
		t.Fatalf("--tls-cert-out alone: exit %d: %s", c, e)
	}
	certFile := filepath.Join(t.TempDir(), "mock.pem")
	url, out, stop := runMockserver(t, "--tls", "--tls-cert-out", certFile)
	if !strings.HasPrefix(url, "https://") || !strings.Contains(out.String(), "certificate in "+certFile) {
		t.Fatalf("first line: %q", out.String())
	}
	pem, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate: %q", certFile, pem)
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, Protocols: &protocols}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url + "/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Proto != "HTTP/2.0" {
		t.Fatalf("GET /v1/models: %d over %s", resp.StatusCode, resp.Proto)
	}
	stop()
}

// TestSelftestOverHTTP2: selftest --http 2 runs its ladder over h2c, and --tls over TLS with HTTP/2
// negotiated; each step line names the protocol and the one connection its streams shared, and the
// final line states the bound as over HTTP/1.1. A bad --http is refused with the accepted values.
func TestSelftestOverHTTP2(t *testing.T) {
	if c, _, e := plload(t, "selftest", "--in-process", "--http", "3"); c != 2 || !strings.Contains(e, "accepted are auto, 1.1, 2") {
		t.Fatalf("--http 3: exit %d: %s", c, e)
	}
	if testing.Short() {
		t.Skip("runs the ladder for a few seconds")
	}
	for _, extra := range [][]string{{"--in-process", "--http", "2"}, {"--in-process", "--tls"}} {
		t.Run(strings.Join(extra, " "), func(t *testing.T) {
			args := append([]string{"selftest", "--ladder", "3", "--ttft", "20ms", "--itl", "5ms", "--tokens", "10",
				"--warmup", "300ms", "--duration", "1s", "--bound", "1s"}, extra...)
			code, out, errOut := plload(t, args...)
			o := parseSelftest(t, out)
			if code != 0 || len(o.steps) != 1 || !strings.HasPrefix(o.final, "PASS:") || !strings.Contains(o.steps[0], "| HTTP/2.0 on 1 connection |") {
				t.Fatalf("exit %d, final %q:\n%s%s", code, o.final, out, errOut)
			}
		})
	}
}
