package mock

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serverMetrics is what /metrics serves. Request, token and cache names follow vLLM's, so a scraper
// written for vLLM can be tested against the mock; plload_mock_* are the mock's own.
type serverMetrics struct {
	registry *prometheus.Registry
	// running and genTokens are read by the GPU model (gpu.go) as well as served here, so each is one
	// value both read, not a Prometheus metric the model would have to scrape.
	running      atomic.Int64
	genTokens    *tokenMeter
	waiting      prometheus.Gauge
	promptTokens prometheus.Counter
	cacheQueries prometheus.Counter
	cacheHits    prometheus.Counter
	requests     *prometheus.CounterVec
	ttft         prometheus.Histogram
	lateness     *latency
}

func newServerMetrics(model string, cache *prefixCache) *serverMetrics {
	labels := prometheus.Labels{"model_name": model}
	m := &serverMetrics{
		registry:  prometheus.NewRegistry(),
		genTokens: newTokenMeter(),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{Name: "vllm:num_requests_waiting",
			Help: "Requests queued for a slot (--max-concurrency).", ConstLabels: labels}),
		promptTokens: prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:prompt_tokens_total",
			Help: "Prompt tokens received.", ConstLabels: labels}),
		cacheQueries: prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:prefix_cache_queries_total",
			Help: "Prompt tokens looked up in the prefix cache.", ConstLabels: labels}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{Name: "vllm:prefix_cache_hits_total",
			Help: "Prompt tokens found in the prefix cache.", ConstLabels: labels}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "plload_mock_requests_total",
			Help: "Requests by outcome: ok, error, rate_limited, bad_request, or a fault kind.", ConstLabels: labels}, []string{"outcome"}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "vllm:time_to_first_token_seconds",
			Help: "From the request's arrival to its first token being sent.", ConstLabels: labels,
			Buckets: []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}}),
		lateness: newLatency(),
	}
	// vLLM says its cache's size as an info metric whose labels carry it; so does the mock, so that a
	// run against it reads the size as it would a vLLM server's.
	cacheInfo := prometheus.NewGauge(prometheus.GaugeOpts{Name: "vllm:cache_config_info", Help: "The prefix cache's configuration.",
		ConstLabels: prometheus.Labels{"model_name": model, "block_size": strconv.Itoa(cache.block), "num_gpu_blocks": strconv.Itoa(cache.capacity)}})
	cacheInfo.Set(1)
	usage := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "vllm:kv_cache_usage_perc",
		Help: "Share of the prefix cache in use, 0–1.", ConstLabels: labels}, cache.usage)
	running := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "vllm:num_requests_running",
		Help: "Requests holding a slot (prefilling or decoding).", ConstLabels: labels}, func() float64 { return float64(m.running.Load()) })
	genTokens := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "vllm:generation_tokens_total",
		Help: "Tokens generated (sent), reasoning included.", ConstLabels: labels}, func() float64 { return float64(m.genTokens.total.Load()) })
	m.registry.MustRegister(running, m.waiting, m.promptTokens, genTokens, m.cacheQueries, m.cacheHits,
		m.requests, m.ttft, usage, cacheInfo, newLatenessCollector(m.lateness, labels))
	return m
}

func (m *serverMetrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// latency records the mock's send lateness (actual − scheduled send time of each chunk) in an HDR
// histogram: O(1) per chunk, exact to 3 significant digits from 1 µs to 1 h.
type latency struct {
	mu    sync.Mutex
	total *hdrhistogram.Histogram // since start
	since *hdrhistogram.Histogram // since the last /mock/stats?reset=1
}

func newLatency() *latency {
	return &latency{total: hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3),
		since: hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)}
}

func (l *latency) record(d time.Duration) {
	us := max(int64(d/time.Microsecond), 1) // a send on time or early is recorded as 1 µs
	l.mu.Lock()
	_ = l.total.RecordValue(us)
	_ = l.since.RecordValue(us)
	l.mu.Unlock()
}

// LatenessStats is the send lateness summary /mock/stats returns, in milliseconds.
type LatenessStats struct {
	Chunks int64   `json:"chunks"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
}

func statsOf(h *hdrhistogram.Histogram) LatenessStats {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return LatenessStats{Chunks: h.TotalCount(), P50Ms: ms(h.ValueAtQuantile(50)), P90Ms: ms(h.ValueAtQuantile(90)),
		P99Ms: ms(h.ValueAtQuantile(99)), P999Ms: ms(h.ValueAtQuantile(99.9)), MaxMs: ms(h.Max())}
}

// statsHandler serves GET /mock/stats: send lateness since the last reset; ?reset=1 starts a new window
// (the self-test resets it before each step).
func (l *latency) statsHandler(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	s := statsOf(l.since)
	if r.URL.Query().Get("reset") == "1" {
		l.since.Reset()
	}
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s)
}

// latenessCollector exposes the lateness since start as a Prometheus summary plus its maximum.
type latenessCollector struct {
	l             *latency
	desc, maxDesc *prometheus.Desc
}

func newLatenessCollector(l *latency, labels prometheus.Labels) *latenessCollector {
	return &latenessCollector{l: l,
		desc: prometheus.NewDesc("plload_mock_send_lateness_seconds",
			"Chunk send time minus its scheduled time (the mock's own error), since start.", nil, labels),
		maxDesc: prometheus.NewDesc("plload_mock_send_lateness_max_seconds",
			"The largest send lateness since start.", nil, labels),
	}
}

func (c *latenessCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.desc
	ch <- c.maxDesc
}

func (c *latenessCollector) Collect(ch chan<- prometheus.Metric) {
	sec := func(us int64) float64 { return float64(us) / 1e6 }
	c.l.mu.Lock()
	h := c.l.total
	count := uint64(h.TotalCount())
	q := map[float64]float64{0.5: sec(h.ValueAtQuantile(50)), 0.9: sec(h.ValueAtQuantile(90)),
		0.99: sec(h.ValueAtQuantile(99)), 0.999: sec(h.ValueAtQuantile(99.9))}
	sum := h.Mean() * float64(count) / 1e6
	maxV := sec(h.Max())
	c.l.mu.Unlock()
	ch <- prometheus.MustNewConstSummary(c.desc, count, sum, q)
	ch <- prometheus.MustNewConstMetric(c.maxDesc, prometheus.GaugeValue, maxV)
}

// LatenessSince returns the send lateness since the last reset, and starts a new window when reset.
func (s *Server) LatenessSince(reset bool) LatenessStats {
	l := s.metrics.lateness
	l.mu.Lock()
	defer l.mu.Unlock()
	st := statsOf(l.since)
	if reset {
		l.since.Reset()
	}
	return st
}
