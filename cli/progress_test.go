package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// promScenario is testdata/tiny.yaml with a live /metrics port and two longer stages.
func promScenario(t *testing.T, port int) string {
	data, _ := os.ReadFile("cli/testdata/tiny.yaml")
	text := strings.Replace(string(data), "    - {concurrency: 2, warmup: 200ms, duration: 800ms}",
		"    - {concurrency: 2, warmup: 200ms, duration: 1500ms}\n    - {concurrency: 3, duration: 1500ms}", 1)
	text += fmt.Sprintf("output: {prometheus_port: %d}\n", port)
	path := filepath.Join(t.TempDir(), "prom.yaml")
	os.WriteFile(path, []byte(text), 0o644)
	return path
}

// TestLivePrometheusDuringARun scrapes /metrics while a real run goes on and parses it.
func TestLivePrometheusDuringARun(t *testing.T) {
	t.Setenv("PLLOAD_TINY_KEY", "k")
	t.Setenv("PLLOAD_TINY_SECRET", "s")
	port := freePort(t)
	path := promScenario(t, port)
	code := make(chan int, 1)
	var out, errOut syncBuffer
	go func() {
		code <- Run(context.Background(), []string{"plload", "run", path, "--out", t.TempDir()}, &out, &errOut)
	}()
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	var families map[string]int
	deadline := time.Now().Add(20 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("no stage-2 metrics scraped; stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		}
		time.Sleep(100 * time.Millisecond)
		resp, err := http.Get(url)
		if err != nil {
			continue
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		mf, err := parser.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("the live endpoint does not parse: %v", err)
		}
		families = map[string]int{}
		for name, f := range mf {
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "stage" && l.GetValue() == "2" {
						families[name]++
					}
				}
			}
		}
		if families["aiperf_time_to_first_token_ms"] > 0 && mf["aiperf_time_to_first_token_ms"].GetMetric()[0].GetSummary().GetSampleCount() > 0 {
			// Stage 1 is still served while stage 2 runs: the endpoint does not drop between stages.
			if len(mf["plload_requests_total"].GetMetric()) < 8 {
				t.Fatalf("stage 1 is gone from /metrics during stage 2")
			}
			break
		}
	}
	for _, name := range []string{"aiperf_time_to_first_token_ms", "aiperf_inter_token_latency_ms", "aiperf_request_latency_ms",
		"aiperf_output_token_throughput_avg_tps", "aiperf_request_throughput_avg_requests_per_sec",
		"aiperf_request_error_rate_avg_percent", "aiperf_overall_usage_prompt_cache_read_pct_avg_percent",
		"plload_ttft_seconds", "plload_itl_seconds", "plload_request_latency_seconds", "plload_requests_total"} {
		if families[name] == 0 {
			t.Errorf("/metrics lacks %s for stage 2", name)
		}
	}
	if c := <-code; c != 0 {
		t.Fatalf("run exit %d: %s", c, errOut.String())
	}
}

func TestPrometheusPortInUseIsBadInput(t *testing.T) {
	t.Setenv("PLLOAD_TINY_KEY", "k")
	t.Setenv("PLLOAD_TINY_SECRET", "s")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out := t.TempDir()
	code, _, stderr := plload(t, "run", promScenario(t, ln.Addr().(*net.TCPAddr).Port), "--out", out)
	if code != 2 || !strings.Contains(stderr, "output.prometheus_port: cannot listen") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("files left behind: %v", entries)
	}
}
