package report

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

const scenarioText = `name: golden
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

const t0 = int64(1_800_000_000_000_000_000)

func rec(startS, ttft float64, osl int, corr string) *metrics.Record {
	gaps := make([]float64, osl-1)
	lat := ttft
	for i := range gaps {
		gaps[i] = 20 + float64(i%3)*5
		lat += gaps[i]
	}
	start := t0 + int64(startS*1e9)
	return &metrics.Record{XCorrelationID: corr, CreditIssuedNs: start, RequestStartNs: start,
		RequestEndNs: metrics.Some(start + int64(lat*1e6)), TTFT: metrics.Some(ttft), RequestLatency: metrics.Some(lat),
		InterChunkLatency: gaps, OutputSequenceLength: metrics.Some(osl), InterTokenLatency: metrics.Some((lat - ttft) / float64(osl-1)),
		InputSequenceLength: metrics.Some(200), OutputChars: metrics.Some(4 * osl),
		UsageCompletionTokens: metrics.Some(osl), UsagePromptTokens: metrics.Some(200), UsageCachedTokens: metrics.Some(128)}
}

// goldenStages builds two stages from hand-made records: stage 1 passes, stage 2 fails on TTFT and has
// a 429 and a cancelled request.
func goldenStages(t *testing.T) (*workload.Scenario, []*StageReport) {
	t.Helper()
	sc, issues := workload.Parse("golden.yaml", []byte(scenarioText), workload.LoadOptions{Getenv: func(string) string { return "" }})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	var out []*StageReport
	for i, ttfts := range [][]float64{{100, 120, 140, 160}, {200, 300, 400, 500}} {
		in := StageInput(sc, i)
		in.T0Ns = metrics.Some(t0)
		st := metrics.NewStage(in)
		for k, ttft := range ttfts {
			st.Add(rec(1.5+float64(k), ttft, 10, string(rune('a'+k%2))))
		}
		if i == 1 {
			st.Add(&metrics.Record{RequestStartNs: t0 + 6e9, RequestEndNs: metrics.Some(t0 + 6e9 + 1e6),
				Error: &metrics.RecordError{Code: metrics.Some(429), Type: "Too Many Requests", Message: "slow down"}})
			st.Add(&metrics.Record{RequestStartNs: t0 + 7e9, RequestEndNs: metrics.Some(t0 + 12e9), WasCancelled: true,
				CancellationTimeNs: metrics.Some(t0 + 12e9), Error: &metrics.RecordError{Code: metrics.Some(499), Type: metrics.ErrTypeCancelled, Message: "cancelled"}})
		}
		sha := strings.Repeat(string(rune('a'+i)), 64)
		rep := NewStageReport("plload test", sc, i, sha, st.Summary(), EngineCounts{Issued: 4 + 2*i, Sessions: 2})
		rep.Injector = metrics.InjectorHealth{CPUPercent: 35 + 10*float64(i), Cores: 2, SchedLatencyP99Ms: 0.26, GCPauseTotalMs: 1.5, RunQueueWaitPercent: metrics.Some(9.0)}
		rep.NetworkRTT = metrics.Dist{N: 20, P50: 0.12, P95: 0.31}
		if i == 0 {
			rep.Server = &metrics.ServerSummary{Engine: "vllm", Samples: 10, RunningMean: metrics.Some(1.5), RunningMax: metrics.Some(2.0),
				WaitingMean: metrics.Some(0.0), WaitingMax: metrics.Some(0.0), KVUsageMean: metrics.Some(0.12), KVUsageMax: metrics.Some(0.2),
				TTFTP50Ms: metrics.Some(118.0), TTFTP95Ms: metrics.Some(150.0), CacheHitRate: metrics.Some(0.61)}
		} else {
			rep.Server = &metrics.ServerSummary{Note: "server metrics off: http://127.0.0.1:8000/metrics answered HTTP 404"}
		}
		out = append(out, rep)
	}
	return sc, out
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./report -update creates it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Fatalf("%s differs (-want +got):\n%s", path, diff)
	}
}

func TestGoldenReport(t *testing.T) {
	sc, r := goldenReport(t)
	stages := r.Stages
	md := r.Markdown(sc)
	golden(t, "report.md", []byte(md))
	if strings.Contains(md, "sk-SECRET") {
		t.Fatal("a secret reached report.md")
	}
	if r.HeadlineStage == nil || *r.HeadlineStage != 1 || !strings.HasPrefix(md, "# plload report: golden\n\n**Headline**: stage 01:") {
		t.Fatalf("headline: stage %v\n%s", r.HeadlineStage, md[:200])
	}
	data, _ := json.MarshalIndent(stages[1], "", "  ")
	golden(t, "stage_02.json", data)
	data, _ = json.MarshalIndent(r, "", "  ")
	golden(t, "report.json", data)
}

func TestStageJSONRoundTrip(t *testing.T) {
	_, stages := goldenStages(t)
	dir := t.TempDir()
	if err := stages[1].Write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := ReadStage(filepath.Join(dir, "stage.json"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stages[1], back); diff != "" {
		t.Fatalf("stage.json round trip (-wrote +read):\n%s", diff)
	}
	os.WriteFile(filepath.Join(dir, "stage.json"), []byte(`{"schema_version": 99, "summary": {}}`), 0o644)
	if _, err := ReadStage(filepath.Join(dir, "stage.json")); err == nil || !strings.Contains(err.Error(), "schema_version 99") {
		t.Fatalf("unknown schema accepted: %v", err)
	}
}

func TestComparisonAndHandoff(t *testing.T) {
	_, a := goldenStages(t)
	_, b := goldenStages(t)
	b[1].DatasetSHA256 = strings.Repeat("f", 64)
	runs := []Run{{Dir: "/r/before", Name: "before", Stages: a}, {Dir: "/r/after", Name: "after", Stages: b}}
	text := Comparison(runs)
	if !strings.Contains(text, "workload differs: stage 02 of before ran dataset bbbbbbbbbbbb…, of after ffffffffffff…") ||
		strings.Contains(text, "stage 01 of before") || strings.Count(text, "| before |") != 2*5 {
		t.Fatalf("comparison:\n%s", text)
	}
	h := Handoff(runs, "/abs/golden.yaml")
	for _, want := range []string{"stage 02 (load c=4): TTFT p95 over the SLO", "against a limit of 250 ms", "Done when: TTFT p95 ≤ 250 ms at stage 02",
		"plload run /abs/golden.yaml", "plload report /r/before /r/after"} {
		if !strings.Contains(h, want) {
			t.Errorf("handoff lacks %q:\n%s", want, h)
		}
	}
}

// TestWorkloadDiffersAcrossSources: two runs whose stage came from different sources (or one from a
// file, one synthetic) are said to differ, even before their datasets are compared.
func TestWorkloadDiffersAcrossSources(t *testing.T) {
	st := func(src *SourceInfo) *StageReport {
		return &StageReport{Stage: 1, DatasetSHA256: "same", Source: src}
	}
	a := &SourceInfo{Kind: "dataset", File: "a.jsonl", Format: "openai", SHA256: strings.Repeat("a", 64)}
	b := &SourceInfo{Kind: "dataset", File: "a.jsonl", Format: "openai", SHA256: strings.Repeat("b", 64)}
	for _, tc := range []struct {
		x, y *SourceInfo
		want string
	}{
		{a, a, ""},
		{a, b, "stage 01 of x came from dataset a.jsonl (openai, sha256 aaaaaaaaaaaa…), of y from dataset a.jsonl (openai, sha256 bbbbbbbbbbbb…)"},
		{nil, a, "of x came from the synthetic workload"},
	} {
		got := strings.Join(WorkloadWarnings([]Run{{Name: "x", Stages: []*StageReport{st(tc.x)}}, {Name: "y", Stages: []*StageReport{st(tc.y)}}}), "\n")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%v vs %v: %q, want %q", tc.x, tc.y, got, tc.want)
		}
	}
}
