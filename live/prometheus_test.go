package live

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestCollectorServesEveryStage: /metrics carries AIPerf's names and plload's histograms for
// every stage with its label, and the numbers are the live snapshot's, in the units the names say.
func TestCollectorServesEveryStage(t *testing.T) {
	c := (&clock{}).at(0)
	l := NewProgress(2)
	l.now = c.now
	l.StageStarted(1)
	l.Window(c.t, c.t.Add(time.Minute))
	l.SessionOpened()
	c.at(2 * time.Second)
	l.Record(liveRecord(4, []float64{8, 12}, 3, 25)) // TTFT 4 ms, gaps 8 and 12 ms, latency 24 ms
	l.Record(failed(429, "Too Many Requests"))
	l.Record(failed(500, "Internal Server Error"))
	l.StageStarted(2)

	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(NewCollector(l)); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	stage1 := func(name string, labels ...string) *dto.Metric {
		t.Helper()
		f := byName[name]
		if f == nil {
			t.Fatalf("%s not served", name)
		}
	next:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			if got["stage"] != "1" {
				continue
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if got[labels[i]] != labels[i+1] {
					continue next
				}
			}
			return m
		}
		t.Fatalf("%s has no stage 1 series %v", name, labels)
		return nil
	}
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	if g := byName["plload_active_sessions"].GetMetric()[0].GetGauge().GetValue(); g != 1 {
		t.Errorf("active sessions %v", g)
	}
	// Stage 1 at 2 s: 3 tokens and 1 success over 2 s; 2 of 3 finished requests failed.
	near("out tok/s", stage1("aiperf_output_token_throughput_avg_tps").GetGauge().GetValue(), 1.5, 1e-9)
	near("req/s", stage1("aiperf_request_throughput_avg_requests_per_sec").GetGauge().GetValue(), 0.5, 1e-9)
	near("error %", stage1("aiperf_request_error_rate_avg_percent").GetGauge().GetValue(), 200.0/3, 1e-9)
	near("cache %", stage1("aiperf_overall_usage_prompt_cache_read_pct_avg_percent").GetGauge().GetValue(), 25, 1e-9)
	near("tok/s 10 s", stage1("plload_output_tokens_per_second_10s").GetGauge().GetValue(), 0.3, 1e-9)
	for outcome, want := range map[string]float64{"ok": 1, "error": 1, "rate_limited": 1, "cancelled": 0} {
		near("requests "+outcome, stage1("plload_requests_total", "outcome", outcome).GetCounter().GetValue(), want, 0)
	}
	// The AIPerf summaries are in ms: count, sum and the p50 of TTFT 4 ms (HDR: 3 significant digits).
	ttft := stage1("aiperf_time_to_first_token_ms").GetSummary()
	near("TTFT count", float64(ttft.GetSampleCount()), 1, 0)
	near("TTFT sum", ttft.GetSampleSum(), 4, 0.01)
	for _, q := range ttft.GetQuantile() {
		near("TTFT quantile", q.GetValue(), 4, 0.01)
	}
	itl := stage1("aiperf_inter_token_latency_ms").GetSummary()
	near("ITL count", float64(itl.GetSampleCount()), 2, 0)
	near("ITL sum", itl.GetSampleSum(), 20, 0.02)
	// plload's histograms are in seconds, cumulative: gaps of 8 and 12 ms are both ≤ 20 ms, one ≤ 10 ms.
	h := stage1("plload_itl_seconds").GetHistogram()
	near("ITL histogram sum", h.GetSampleSum(), 0.020, 0.00002)
	for _, b := range h.GetBucket() {
		want := 0.0
		switch {
		case b.GetUpperBound() >= 0.02:
			want = 2
		case b.GetUpperBound() >= 0.01:
			want = 1
		}
		near("ITL bucket", float64(b.GetCumulativeCount()), want, 0)
	}
	lat := stage1("plload_request_latency_seconds").GetHistogram()
	for _, b := range lat.GetBucket() {
		if want := map[bool]float64{true: 1, false: 0}[b.GetUpperBound() >= 0.03]; float64(b.GetCumulativeCount()) != want {
			t.Errorf("latency bucket ≤ %v s: %d, want %v (latency 24 ms)", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if n := len(byName["plload_ttft_seconds"].GetMetric()); n != 2 {
		t.Errorf("%d stages in plload_ttft_seconds, want 2 (the run keeps every stage)", n)
	}
}
