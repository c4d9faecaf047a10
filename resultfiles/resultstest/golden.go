// Package resultstest builds the golden stages and report that the tests of results, report and gate
// share: two stages of a small concurrency scenario from hand-made records, one passing its SLO and
// one failing it, with and without the troubles (lost scrapes, retries, an outage, an abort) that the
// outputs must show.
package resultstest

import (
	"strings"
	"testing"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// ScenarioText is the golden scenario: two concurrency stages, an SLO, a price, and a secret header
// that must never reach a file.
const ScenarioText = `name: golden
seed: 3
target: {base_url: "http://127.0.0.1:8000/v1", model: m, headers: {Authorization: "Bearer sk-SECRET"}}
personas: {count: 2, system_prompt_tokens: {min: 10, max: 20}}
session:
  turns: {min: 2, max: 4}
  user_input_tokens: {min: 5, max: 10}
  max_output_tokens: {min: 5, max: 10}
  think_time: {min: 5s, max: 20s}
load:
  mode: concurrency
  stages:
    - {concurrency: 2, warmup: 1s, duration: 10s}
    - {concurrency: 4, warmup: 1s, duration: 10s}
slo: {ttft_p95: 250ms, itl_p95: 50ms, error_rate_max: 0.2}
cost: {gpu_hourly_usd: 2, label: test GPU}
`

// T0 is the golden stages' t0, in epoch ns.
const T0 = int64(1_800_000_000_000_000_000)

// Record is a successful request that started startS seconds after T0: its first token after ttft
// ms, then osl−1 more 20–30 ms apart, in session corr.
func Record(startS, ttft float64, osl int, corr string) *metrics.Record {
	gaps := make([]float64, osl-1)
	lat := ttft
	for i := range gaps {
		gaps[i] = 20 + float64(i%3)*5
		lat += gaps[i]
	}
	start := T0 + int64(startS*1e9)
	return &metrics.Record{XCorrelationID: corr, CreditIssuedNs: start, RequestStartNs: start,
		RequestEndNs: metrics.Some(start + int64(lat*1e6)), TTFT: metrics.Some(ttft), RequestLatency: metrics.Some(lat),
		InterChunkLatency: gaps, OutputSequenceLength: metrics.Some(osl), InterTokenLatency: metrics.Some((lat - ttft) / float64(osl-1)),
		InputSequenceLength: metrics.Some(200), OutputChars: metrics.Some(4 * osl),
		UsageCompletionTokens: metrics.Some(osl), UsagePromptTokens: metrics.Some(200), UsageCachedTokens: metrics.Some(128)}
}

// GoldenStages builds two stages from hand-made records: stage 1 passes, stage 2 fails on TTFT and has
// a 429 and a cancelled request.
func GoldenStages(t testing.TB) (*workload.Scenario, []*resultfiles.StageReport) {
	t.Helper()
	sc, issues := workload.Parse("golden.yaml", []byte(ScenarioText), workload.LoadOptions{Getenv: func(string) string { return "" }})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	var out []*resultfiles.StageReport
	for i, ttfts := range [][]float64{{100, 120, 140, 160}, {200, 300, 400, 500}} {
		in := resultfiles.StageInput(sc, i)
		in.T0Ns = metrics.Some(T0)
		st := metrics.NewStage(in)
		for k, ttft := range ttfts {
			st.Add(Record(1.5+float64(k), ttft, 10, string(rune('a'+k%2))))
		}
		if i == 1 {
			st.Add(&metrics.Record{RequestStartNs: T0 + 6e9, RequestEndNs: metrics.Some(T0 + 6e9 + 1e6),
				Error: &metrics.RecordError{Code: metrics.Some(429), Type: "Too Many Requests", Message: "slow down"}})
			st.Add(&metrics.Record{RequestStartNs: T0 + 7e9, RequestEndNs: metrics.Some(T0 + 12e9), WasCancelled: true,
				CancellationTimeNs: metrics.Some(T0 + 12e9), Error: &metrics.RecordError{Code: metrics.Some(499), Type: metrics.ErrTypeCancelled, Message: "cancelled"}})
		}
		sha := strings.Repeat(string(rune('a'+i)), 64)
		rep := resultfiles.NewStageReport("plload test", sc, i, sha, st.Summary(), resultfiles.EngineCounts{Issued: 4 + 2*i, Sessions: 2})
		rep.Injector = metrics.InjectorHealth{CPUPercent: 35 + 10*float64(i), Cores: 2, SchedLatencyP99Ms: 0.26, GCPauseTotalMs: 1.5, RunQueueWaitPercent: metrics.Some(9.0), StealPercent: metrics.Some(0.4)}
		rep.NetworkRTT = metrics.Dist{N: 20, P50: 0.12, P95: 0.31}
		if i == 0 {
			rep.Server = &metrics.ServerSummary{Engine: "vllm", Samples: 10, RunningMean: metrics.Some(1.5), RunningMax: metrics.Some(2.0),
				WaitingMean: metrics.Some(0.0), WaitingMax: metrics.Some(0.0), KVUsageMean: metrics.Some(0.12), KVUsageMax: metrics.Some(0.2),
				TTFTP50Ms: metrics.Some(118.0), TTFTP95Ms: metrics.Some(150.0), CacheHitRate: metrics.Some(0.61), ClientCacheHit: metrics.Some(0.605)}
		} else {
			rep.Server = &metrics.ServerSummary{Note: "server metrics off: http://127.0.0.1:8000/metrics answered HTTP 404"}
		}
		out = append(out, rep)
	}
	return sc, out
}

// HostileMessage is a server's error text that Markdown would read as a link, an image, HTML and a
// table cell's end: report.html must show it, never fetch or run it.
const HostileMessage = "dial tcp 127.0.0.1:8000: connect: connection refused | [docs](http://evil.example/) ![x](http://evil.example/x.png) <script>alert(1)</script> `tick`"

// TroubledStages are the golden stages with what the engine and the scraper report when things go
// wrong: stage 01 lost 2 of 12 scrapes; stage 02 retried 3 requests, had an outage and was aborted.
func TroubledStages(t testing.TB) (*workload.Scenario, []*resultfiles.StageReport) {
	t.Helper()
	sc, stages := GoldenStages(t)
	stages[0].Server.Scrapes, stages[0].Server.ScrapesOK = 12, 10
	stages[1].Engine.Retried = 3
	stages[1].Engine.Outages = []resultfiles.Outage{{From: "2026-11-29T12:00:05.000Z", To: "2026-11-29T12:00:09.500Z", Kind: "refused", Requests: 412, FirstMessage: HostileMessage}}
	stages[1].Engine.Aborted = "target unreachable since 2026-11-29T12:00:05.000Z (every request failed for 15s)"
	return sc, stages
}

// GoldenReport is report.json of the troubled stages, with fixed times and command line.
func GoldenReport(t testing.TB) (*workload.Scenario, *resultfiles.Report) {
	t.Helper()
	sc, stages := TroubledStages(t)
	return sc, resultfiles.New(sc, stages, resultfiles.Meta{Tool: "plload test", ScenarioFile: "/abs/golden.yaml", Command: "plload run /abs/golden.yaml",
		Started: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Finished: time.Date(2026, 11, 29, 12, 0, 30, 0, time.UTC)})
}
