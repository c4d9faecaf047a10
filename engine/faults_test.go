package engine

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/workload"
)

// faultServer answers every chat request with fault, for faults the mock does not make.
func faultServer(t *testing.T, fault func(w http.ResponseWriter)) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fault(w) }))
	t.Cleanup(ts.Close)
	return ts.URL + "/v1"
}

// runShort runs a short concurrency stage against base and returns its records and summary.
func runShort(t *testing.T, base string, maxEventBytes int) ([]map[string]any, *metrics.StageSummary, StageResult) {
	t.Helper()
	check := leakCheck(t)
	text := strings.Replace(scenarioYAML(base, shortSessions,
		"  mode: concurrency\n  drain_timeout: 2s\n  stages:\n    - {concurrency: 3, duration: 500ms}"), "timeout: 10s", "timeout: 2s", 1)
	res, dir, err := runScenarioWith(t, context.Background(), text, maxEventBytes)
	if err != nil && !(errors.Is(err, ErrStageFailed) && res[0].OK == 0) {
		t.Fatal(err)
	}
	check()
	path := filepath.Join(dir, "stage_01", "profile_export.jsonl")
	recs := readRecords(t, path)
	checkAllRecords(t, recs)
	if len(recs) != res[0].Issued || len(recs) == 0 {
		t.Fatalf("%d records for %d issued", len(recs), res[0].Issued)
	}
	in := metrics.StageInput{Duration: 500 * time.Millisecond, T0Ns: metrics.Some(res[0].T0Ns), NeverStarted: -1,
		SLO: metrics.SLOLimits{TTFTP95Ms: 1000, ITLP95Ms: 100, ErrorRateMax: 0.01}}
	sum, err := metrics.SummarizeFile(path, in, false)
	if err != nil {
		t.Fatal(err)
	}
	return recs, sum, res[0]
}

func TestMoreFaults(t *testing.T) {
	cases := []struct {
		name     string
		fault    func(w http.ResponseWriter)
		maxEvent int
		typ      string
		text     string
	}{
		{"event over the size limit", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"" + strings.Repeat("x", 5000) + "\"}}]}\n\n"))
		}, 1024, "TransportError", "over the 1024-byte limit"},
		{"non-SSE content type", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"choices":[{"message":{"content":"hi"}}]}`))
		}, 0, "TransportError", `expected a text/event-stream answer to a streaming request, got Content-Type "application/json"`},
		{"closes after the headers", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			http.NewResponseController(w).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}, 0, "TransportError", "stream cut"},
		{"answer without content", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\ndata: [DONE]\n\n"))
		}, 0, "InvalidInferenceResultError", "no content"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, sum, res := runShort(t, faultServer(t, tc.fault), tc.maxEvent)
			for _, r := range recs {
				e, _ := r["error"].(map[string]any)
				if e == nil || e["type"] != tc.typ || !strings.Contains(e["message"].(string), tc.text) {
					t.Fatalf("record error %v, want %s containing %q", r["error"], tc.typ, tc.text)
				}
			}
			if res.Errors != len(recs) || sum.ErrorRate.V != 1 || sum.SLO.Verdict != metrics.SLOFail {
				t.Fatalf("error rate %v, SLO %s, %d errors of %d", sum.ErrorRate, sum.SLO.Verdict, res.Errors, len(recs))
			}
		})
	}
}

func TestNoUsageIsASuccessWithAWarning(t *testing.T) {
	base, _ := startMock(t, func(c *mock.Config) { c.NoUsage = true })
	recs, sum, res := runShort(t, base, 0)
	if res.Errors != 0 || res.NoUsage != len(recs) {
		t.Fatalf("%+v", res)
	}
	if sum.CacheHit.OK || sum.MissingUsage == 0 || !strings.Contains(strings.Join(sum.Warnings, " "), "no server usage") {
		t.Fatalf("cache hit %v, missing usage %d, warnings %v", sum.CacheHit, sum.MissingUsage, sum.Warnings)
	}
	for _, r := range recs {
		m := r["metrics"].(map[string]any)
		if m["usage_prompt_tokens"] != nil || m["output_sequence_length"] == nil {
			t.Fatalf("metrics %v", m)
		}
	}
}

// TestAccountingUnderMixedFaults: every request issued ends in exactly one record, whatever happened
// to it, at high concurrency with every fault mixed in and a drain that cancels the slow ones.
func TestAccountingUnderMixedFaults(t *testing.T) {
	base, _ := startMock(t, func(c *mock.Config) {
		c.TPS, c.ErrorRate, c.RateLimitRate = 200, 0.1, 0.1
		c.Faults = map[mock.FaultKind]float64{mock.FaultCut: 0.08, mock.FaultReset: 0.08, mock.FaultStall: 0.05,
			mock.FaultMalformed: 0.08, mock.FaultNoDone: 0.08, mock.FaultHTML503: 0.08}
	})
	check := leakCheck(t)
	text := strings.Replace(scenarioYAML(base, shortSessions,
		"  mode: concurrency\n  drain_timeout: 300ms\n  stages:\n    - {concurrency: 64, duration: 1500ms}\n    - {concurrency: 96, duration: 1s}"), "timeout: 10s", "timeout: 700ms", 1)
	res, dir, err := runScenario(t, context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	check()
	kinds := map[string]int{}
	for i, r := range res {
		recs := readRecords(t, filepath.Join(dir, stageName(i+1), "profile_export.jsonl"))
		checkAllRecords(t, recs)
		if len(recs) != r.Issued || r.Issued != r.OK+r.Errors+r.Cancelled {
			t.Fatalf("stage %d: issued %d, records %d, ok+errors+cancelled %d", i+1, r.Issued, len(recs), r.OK+r.Errors+r.Cancelled)
		}
		for _, rec := range recs {
			if e, ok := rec["error"].(map[string]any); ok {
				kinds[e["type"].(string)]++
			} else {
				kinds["ok"]++
			}
		}
	}
	for _, want := range []string{"ok", "Internal Server Error", "Too Many Requests", "Service Unavailable", "TransportError", "TimeoutError"} {
		if kinds[want] == 0 {
			t.Errorf("no %s among %v", want, kinds)
		}
	}
}

func stageName(i int) string { return filepath.Base(stageDir("", i)) }

func TestServerMetricsAreScraped(t *testing.T) {
	base, _ := startMock(t, nil)
	text := scenarioYAML(base, shortSessions, "  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 1500ms}")
	sc, issues := workload.Parse("t.yaml", []byte(text), workload.LoadOptions{Getenv: testEnv})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	w, _ := sc.Build()
	for _, tc := range []struct {
		url, note string
	}{{strings.TrimSuffix(base, "/v1") + "/metrics", ""}, {strings.TrimSuffix(base, "/v1") + "/nope", "HTTP 404"}} {
		dir := t.TempDir()
		res, err := Run(context.Background(), Config{Scenario: sc, Workload: w, Dir: dir, Getenv: testEnv, ServerMetricsURL: tc.url})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res[0].ServerMetricsNote, tc.note) || (tc.note == "") != (res[0].ServerMetricsNote == "") {
			t.Fatalf("%s: note %q", tc.url, res[0].ServerMetricsNote)
		}
		data, _ := os.ReadFile(filepath.Join(dir, "stage_01", "server_metrics.jsonl"))
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if tc.note == "" && (len(lines) < 2 || !strings.Contains(lines[0], `"engine":"plload-mock"`) || !strings.Contains(lines[len(lines)-1], `"running"`)) {
			t.Fatalf("server_metrics.jsonl: %q", data)
		}
	}
}

// TestSlowOrFailedScrapesDoNotEndScraping: a /metrics that is slow now and then (llama.cpp took 3 s
// under prefill) or answers 500 once is counted as a failed scrape, and scraping goes on for the rest
// of the stage.
func TestSlowOrFailedScrapesDoNotEndScraping(t *testing.T) {
	base, _ := startMock(t, nil)
	var n atomic.Int64
	real := strings.TrimSuffix(base, "/v1") + "/metrics"
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 2:
			time.Sleep(scrapeTimeout + 300*time.Millisecond) // slower than a scrape may take
		case 3:
			http.Error(w, "busy", http.StatusInternalServerError)
			return
		}
		resp, err := http.Get(real)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		io.Copy(w, resp.Body)
	}))
	defer flaky.Close()
	text := scenarioYAML(base, shortSessions, "  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 5s}")
	sc, issues := workload.Parse("t.yaml", []byte(text), workload.LoadOptions{Getenv: testEnv})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	w, _ := sc.Build()
	res, err := Run(context.Background(), Config{Scenario: sc, Workload: w, Dir: t.TempDir(), Getenv: testEnv, ServerMetricsURL: flaky.URL + "/metrics"})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	t.Logf("%d of %d scrapes ok; note %q", r.ScrapesOK, r.Scrapes, r.ServerMetricsNote)
	if r.ServerMetricsNote != "" || r.Scrapes < 4 || r.ScrapesOK != r.Scrapes-2 {
		t.Fatalf("%d of %d scrapes ok, note %q: want all but the slow and the failed one, and scraping to go on", r.ScrapesOK, r.Scrapes, r.ServerMetricsNote)
	}
}
