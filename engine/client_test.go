package engine

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plload/plload/engine/h1client"
	"github.com/plload/plload/workload"
)

// countingServer is a loopback server that counts the connections it accepted.
func countingServer(t *testing.T, h http.HandlerFunc) (string, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.URL, &conns
}

// TestNetHTTPClientPassesTheSameCases: net/http stays the client for https:// targets and for
// PLLOAD_HTTP_CLIENT=net/http, so it must pass the fault matrix, the keep-alive and the
// close-after-response cases and the dead-target abort just as plload's own client does.
func TestNetHTTPClientPassesTheSameCases(t *testing.T) { passTheSameCasesOn(t, "net/http") }

// passTheSameCasesOn reruns the fault, keep-alive and close tests with HTTPClientEnv set to client.
func passTheSameCasesOn(t *testing.T, client string) {
	if testing.Short() {
		t.Skip("reruns other tests")
	}
	t.Setenv(HTTPClientEnv, client)
	for name, test := range map[string]func(*testing.T){
		"faults":                      TestErrorsAndFaultsAreRecorded,
		"more faults":                 TestMoreFaults,
		"mixed faults":                TestAccountingUnderMixedFaults,
		"closed keep-alive":           TestClosedKeepAliveIsRetriedOnce,
		"kept alive":                  TestConnectionsAreKeptAlive,
		"server closes after answers": TestServerClosingAfterEachAnswer,
		"dead target":                 TestDeadTargetAbortsTheStage,
	} {
		t.Run(name, test)
	}
}

// TestHTTPClientChoice: http:// gets plload's client unless the environment asks for net/http;
// https:// always gets net/http; anything else in the variable is refused by name.
func TestHTTPClientChoice(t *testing.T) {
	sc, issues := workload.Parse("t.yaml", []byte(scenarioYAML("http://127.0.0.1:1/v1", shortSessions, "  mode: concurrency\n  stages:\n    - {concurrency: 1, duration: 1s}")), workload.LoadOptions{Getenv: testEnv})
	if issues.Err() != nil {
		t.Fatal(issues.Err())
	}
	for _, tc := range []struct {
		base, env        string
		wantH1, wantPoll bool
		wantErr          string
	}{
		{"http://127.0.0.1:1/v1", "", true, true, ""},
		{"http://127.0.0.1:1/v1", "h1-blocking", true, false, ""},
		{"http://127.0.0.1:1/v1", "net/http", false, false, ""},
		{"https://127.0.0.1:1/v1", "", false, false, ""},
		{"http://127.0.0.1:1/v1", "fasthttp", false, false, `PLLOAD_HTTP_CLIENT="fasthttp": accepted are net/http, h1-blocking`},
	} {
		tr, fresh, err := newTransports(sc, tc.base, 8, func(string) string { return tc.env })
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s with %q: err %v, want %q", tc.base, tc.env, err, tc.wantErr)
			}
			continue
		}
		h1, isH1 := tr.(*h1client.Transport)
		freshH1, _ := fresh.(*h1client.Transport)
		if err != nil || isH1 != tc.wantH1 || (freshH1 != nil) != tc.wantH1 || freshH1 != nil && !freshH1.Config().NoReuse {
			t.Errorf("%s with %q: %T and %T, err %v; want plload's client %v", tc.base, tc.env, tr, fresh, err, tc.wantH1)
		}
		if _, perr := h1client.SharedPoller(); perr == nil && isH1 && (h1.Config().Poller != nil) != tc.wantPoll {
			t.Errorf("%s with %q: poller %v, want one: %v", tc.base, tc.env, h1.Config().Poller != nil, tc.wantPoll)
		}
	}
}

// TestRTTProbeOfASilentServerEnds: a server that takes GET /models and never answers costs the
// stage its RTT figure (with a warning), not its start: the stage runs, on both clients.
func TestRTTProbeOfASilentServerEnds(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	url, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			select {
			case <-release:
			case <-r.Context().Done():
			case <-time.After(30 * time.Second):
			}
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
	})
	for _, client := range []string{"", "net/http"} {
		t.Run("client "+client, func(t *testing.T) {
			t.Setenv(HTTPClientEnv, client)
			text := strings.Replace(scenarioYAML(url+"/v1", shortSessions, "  mode: concurrency\n  drain_timeout: 1s\n  stages:\n    - {concurrency: 1, duration: 500ms}"),
				"timeout: 10s", "timeout: 1s", 1)
			began := time.Now()
			res, dir, err := runScenario(t, context.Background(), text)
			if err != nil || len(res) != 1 || res[0].OK == 0 || time.Since(began) > 20*time.Second {
				t.Fatalf("after %v: err %v, %d stages, ok %d", time.Since(began), err, len(res), res[0].OK)
			}
			log, _ := os.ReadFile(filepath.Join(dir, "stage_01", "run.log"))
			if res[0].RTT.N != 0 || !strings.Contains(string(log), "no answer within 1s") {
				t.Fatalf("RTT %+v; run.log:\n%s", res[0].RTT, log)
			}
		})
	}
}
