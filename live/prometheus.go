package live

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Collector serves a Progress on /metrics: AIPerf's metric names (so dashboards built for AIPerf and
// personaload work) and plload_* histograms, every stage with a `stage` label, so the endpoint keeps
// all stages for the whole run.
type Collector struct {
	live  *Progress
	descs map[string]*prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

var secondsBuckets = []float64{0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 30, 60}

// NewCollector returns the collector for l.
func NewCollector(l *Progress) *Collector {
	c := &Collector{live: l, descs: map[string]*prometheus.Desc{}}
	add := func(name, help string, labels ...string) {
		c.descs[name] = prometheus.NewDesc(name, help, append([]string{"stage"}, labels...), nil)
	}
	add("aiperf_time_to_first_token_ms", "Time to first token, ms, since the stage started (warmup included).")
	add("aiperf_inter_token_latency_ms", "Gaps between streamed tokens, ms, since the stage started (warmup included).")
	add("aiperf_request_latency_ms", "Request latency, ms, since the stage started (warmup included).")
	add("aiperf_output_token_throughput_avg_tps", "Output tokens per second since the stage started.")
	add("aiperf_request_throughput_avg_requests_per_sec", "Successful requests per second since the stage started.")
	add("aiperf_request_error_rate_avg_percent", "Errors and cancellations, % of finished requests.")
	add("aiperf_overall_usage_prompt_cache_read_pct_avg_percent", "Cached ÷ prompt tokens, % (server usage).")
	add("plload_requests_total", "Finished requests by outcome.", "outcome")
	add("plload_output_tokens_per_second_10s", "Output tokens per second over the last 10 s.")
	add("plload_ttft_seconds", "Time to first token.")
	add("plload_itl_seconds", "Gaps between streamed tokens.")
	add("plload_request_latency_seconds", "Request latency.")
	c.descs["plload_active_sessions"] = prometheus.NewDesc("plload_active_sessions", "Sessions open now.", nil, nil)
	return c
}

// Describe sends every descriptor.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect sends the current values of every stage seen so far.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	snaps := c.live.Snapshots()
	ch <- prometheus.MustNewConstMetric(c.descs["plload_active_sessions"], prometheus.GaugeValue, float64(c.live.active.Load()))
	for _, s := range snaps {
		stage := strconv.Itoa(s.Stage)
		summary := func(name string, h *hdrhistogram.Histogram) {
			q := map[float64]float64{}
			for _, p := range []float64{50, 90, 95, 99} {
				q[p/100] = float64(h.ValueAtQuantile(p)) / 1000
			}
			ch <- prometheus.MustNewConstSummary(c.descs[name], uint64(h.TotalCount()), h.Mean()*float64(h.TotalCount())/1000, q, stage)
		}
		summary("aiperf_time_to_first_token_ms", s.TTFT)
		summary("aiperf_inter_token_latency_ms", s.ITL)
		summary("aiperf_request_latency_ms", s.Latency)
		gauge := func(name string, v float64) {
			ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v, stage)
		}
		gauge("aiperf_output_token_throughput_avg_tps", s.OutTokPerSecAvg)
		gauge("aiperf_request_throughput_avg_requests_per_sec", s.ReqPerSecAvg)
		gauge("aiperf_request_error_rate_avg_percent", s.ErrorRatePct)
		gauge("aiperf_overall_usage_prompt_cache_read_pct_avg_percent", s.CacheReadPct)
		gauge("plload_output_tokens_per_second_10s", s.OutTokPerSec10s)
		for outcome, n := range map[string]int64{"ok": s.OK, "error": s.Errors - s.RateLimited, "rate_limited": s.RateLimited, "cancelled": s.Cancel} {
			ch <- prometheus.MustNewConstMetric(c.descs["plload_requests_total"], prometheus.CounterValue, float64(n), stage, outcome)
		}
		histogram("plload_ttft_seconds", c.descs, ch, s.TTFT, stage)
		histogram("plload_itl_seconds", c.descs, ch, s.ITL, stage)
		histogram("plload_request_latency_seconds", c.descs, ch, s.Latency, stage)
	}
}

// histogram turns an HDR histogram (µs) into a Prometheus histogram in seconds.
func histogram(name string, descs map[string]*prometheus.Desc, ch chan<- prometheus.Metric, h *hdrhistogram.Histogram, stage string) {
	counts := make(map[float64]uint64, len(secondsBuckets))
	bars := h.Distribution()
	for _, b := range secondsBuckets {
		limit := int64(b * 1e6)
		var n int64
		for _, bar := range bars {
			if bar.To <= limit {
				n += bar.Count
			}
		}
		counts[b] = uint64(n)
	}
	sum := h.Mean() * float64(h.TotalCount()) / 1e6
	ch <- prometheus.MustNewConstHistogram(descs[name], uint64(h.TotalCount()), sum, counts, stage)
}

// Serve listens on addr (host:port) before any traffic, so that a busy port is bad input, and serves
// l's /metrics until stop is called.
func Serve(addr string, l *Progress) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("output.prometheus_port: cannot listen on %s: %v (is another run or exporter using it?)", addr, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(l))
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return func() { srv.Close() }, nil
}
