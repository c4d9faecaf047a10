package cluster

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

var benchMergeRecords = flag.Int("merge.records", 20000, "records per shard in BenchmarkMerge (the issue's figure is 1000000)")

const benchScenario = `name: mergebench
seed: 1
target: {base_url: "http://127.0.0.1:9/v1", model: m, timeout: 10s}
personas: {count: 2, system_prompt_tokens: {min: 20, max: 40}}
session: {turns: {min: 2, max: 4}, user_input_tokens: {min: 5, max: 15}, max_output_tokens: 16, think_time: {min: 5ms, max: 20ms}}
load: {mode: concurrency, stages: [{concurrency: 400, warmup: 10s, duration: 600s}]}
slo: {ttft_p95: 1s, itl_p95: 100ms, error_rate_max: 0.01}
`

// BenchmarkMerge merges 4 shards of -merge.records records each (16 chunk gaps per record, as a
// 16-token answer has): ns/op is the whole merge (read, sort, write, summarize, report).
func BenchmarkMerge(b *testing.B) {
	const shards = 4
	base := b.TempDir()
	sc, issues := workload.Parse("bench.yaml", []byte(benchScenario), workload.LoadOptions{})
	if err := issues.Err(); err != nil {
		b.Fatal(err)
	}
	resolved, err := sc.ResolvedYAML()
	if err != nil {
		b.Fatal(err)
	}
	var dirs []string
	for i := range shards {
		d := filepath.Join(base, fmt.Sprint(i))
		writeBenchShard(b, d, sc, resolved, i, shards, *benchMergeRecords)
		dirs = append(dirs, d)
	}
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		out := filepath.Join(base, fmt.Sprintf("merged%d", n))
		if _, err := Merge(MergeOptions{Dirs: dirs, Out: out, Tool: "bench"}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.RemoveAll(out)
		b.StartTimer()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(shards**benchMergeRecords), "records")
}

// writeBenchShard writes one shard's directory: records of sessions i, i+N, … a second apart in
// completion order, sessions.jsonl, dataset.jsonl, stage.json with its shard block.
func writeBenchShard(b testing.TB, dir string, sc *workload.Scenario, resolved []byte, index, count, records int) {
	stage := filepath.Join(dir, "stage_01")
	os.MkdirAll(stage, 0o755)
	os.WriteFile(filepath.Join(dir, "scenario.resolved.yaml"), resolved, 0o644)
	os.WriteFile(filepath.Join(stage, "dataset.jsonl"), []byte("{}\n"), 0o644)
	rng := rand.New(rand.NewPCG(uint64(index), 1))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	var buf []byte
	for k := range records {
		session := int64(k/3)*int64(count) + int64(index)
		start := t0 + int64(k)*int64(time.Millisecond)*int64(count)/4 + rng.Int64N(int64(time.Millisecond))
		r := metrics.Record{SessionNum: k, XRequestID: fmt.Sprintf("%08x-0000-4000-8000-%012x", index, k), XCorrelationID: "c",
			ConversationID: fmt.Sprintf("s01-%06d", session), TurnIndex: k % 3, CreditIssuedNs: start, RequestStartNs: start + 1000,
			RequestAckNs: metrics.Some(start + 2e6), RequestEndNs: metrics.Some(start + 40e6), WorkerID: "plload", RecordProcessorID: "plload",
			BenchmarkPhase: metrics.PhaseProfiling, IntendedStartNs: metrics.Some(start), TTFT: metrics.Some(5.0), RequestLatency: metrics.Some(40.0),
			InputSequenceLength: metrics.Some(50), OutputSequenceLength: metrics.Some(16), OutputTokenCount: metrics.Some(16)}
		for range 16 {
			r.InterChunkLatency = append(r.InterChunkLatency, 2+rng.Float64())
		}
		buf = append(r.AppendJSON(buf), '\n')
	}
	os.WriteFile(filepath.Join(stage, "profile_export.jsonl"), buf, 0o644)
	os.WriteFile(filepath.Join(stage, "sessions.jsonl"), nil, 0o644)
	in := resultfiles.StageInput(sc, 0)
	in.T0Ns = metrics.Some(t0)
	sum, err := metrics.SummarizeFile(filepath.Join(stage, "profile_export.jsonl"), in, false)
	if err != nil {
		b.Fatal(err)
	}
	st := resultfiles.NewStageReport("bench", sc, 0, "sha", sum, resultfiles.EngineCounts{Issued: records})
	st.RecordsKept = true
	data, _ := json.Marshal(st)
	var m map[string]any
	json.Unmarshal(data, &m)
	m["shard"] = resultfiles.ShardInfo{Index: index, Count: count, ClockOffsetNs: int64(index) * 1000}
	data, _ = json.Marshal(m)
	os.WriteFile(filepath.Join(stage, "stage.json"), data, 0o644)
	rep, _ := json.Marshal(map[string]any{"schema_version": resultfiles.SchemaVersion, "run": sc.Name, "stages": []any{},
		"shard": resultfiles.ShardInfo{Index: index, Count: count, ClockOffsetNs: int64(index) * 1000}})
	os.WriteFile(filepath.Join(dir, "report.json"), rep, 0o644)
}
