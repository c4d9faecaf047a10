package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/report"
	"github.com/plload/plload/resultfiles"
)

// writeByModelRun writes a results directory whose stage 1 mixes two models (base answers in 100 ms,
// lora in 400 ms; a TTFT p95 limit of 250 ms) and whose stage 2 names no model.
func writeByModelRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	const t0 = int64(1_800_000_000_000_000_000)
	for stage, models := range [][]string{{"base", "lora"}, {""}} {
		sd := filepath.Join(dir, "stage_0"+string(rune('1'+stage)))
		if err := os.MkdirAll(sd, 0o755); err != nil {
			t.Fatal(err)
		}
		var lines []byte
		for i := range 8 {
			m := models[i%len(models)]
			ttft := map[string]float64{"base": 100, "lora": 400, "": 150}[m]
			start := t0 + int64(i)*int64(time.Second) + int64(time.Second)
			r := &metrics.Record{XCorrelationID: "s" + string(rune('a'+i)), CreditIssuedNs: start, RequestStartNs: start,
				RequestEndNs: metrics.Some(start + int64(ttft*1e6) + 2e8), TTFT: metrics.Some(ttft), RequestLatency: metrics.Some(ttft + 200),
				InterChunkLatency: []float64{100, 100}, OutputSequenceLength: metrics.Some(3), InputSequenceLength: metrics.Some(50),
				UsageCompletionTokens: metrics.Some(3), UsagePromptTokens: metrics.Some(50), Model: m}
			lines = append(r.AppendJSON(lines), '\n')
		}
		path := filepath.Join(sd, "profile_export.jsonl")
		if err := os.WriteFile(path, lines, 0o644); err != nil {
			t.Fatal(err)
		}
		in := metrics.StageInput{T0Ns: metrics.Some(t0), Warmup: time.Second, Duration: 10 * time.Second, NeverStarted: -1,
			SLO:  metrics.SLOLimits{TTFTP95Ms: 250, Latency: []metrics.LatencyLimit{{Metric: metrics.SLOMetricTTFT, Stat: metrics.SLOStatP95, LimitMs: 250}}},
			Cost: metrics.CostInputs{GPUHourlyUSD: 2, GPUCount: 1, ExpectedTurns: 1}}
		sum, err := metrics.SummarizeFile(path, in, false)
		if err != nil {
			t.Fatal(err)
		}
		st := &resultfiles.StageReport{SchemaVersion: resultfiles.SchemaVersion, Tool: "plload test", Run: "mix", Stage: stage + 1, Stages: 2,
			Mode: "concurrency", Concurrency: 2, Warmup: "1s", Duration: "10s", SLO: in.SLO,
			Cost: resultfiles.CostInputs{CostInputs: in.Cost}, Engine: resultfiles.EngineCounts{Outages: []resultfiles.Outage{}}, Summary: sum}
		data, _ := json.MarshalIndent(st, "", "  ")
		if err := os.WriteFile(filepath.Join(sd, "stage.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestReportByModel: `plload report DIR --by model` prints each model's tables with its own SLO
// verdict and cost, from the stage's records in the stage's window; a stage without model metadata
// says so; another value of --by is exit 2.
func TestReportByModel(t *testing.T) {
	dir := writeByModelRun(t)
	code, out, errOut := plload(t, "report", dir, "--by", "model")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	i := strings.Index(out, "by model")
	if i < 0 {
		t.Fatalf("no split:\n%s", out)
	}
	split := out[i:]
	s2 := strings.Index(split, "## Stage 02 by model")
	if s2 < 0 {
		t.Fatalf("no stage 02:\n%s", split)
	}
	stage1, stage2 := split[:s2], split[s2:]
	// Each model's latency row: base passes its 250 ms TTFT p95 limit, lora fails it.
	var base, lora string
	for _, line := range strings.Split(stage1, "\n") {
		if strings.Contains(line, "model base") && strings.Contains(line, "| 100/100/100/**100**/100 ‡ |") && strings.Contains(line, "| 300/300/300/300/300 ‡ |") {
			base = line
		}
		if strings.Contains(line, "model lora") && strings.Contains(line, "| 400/400/400/**400**/400 ‡ |") && strings.Contains(line, "| 600/600/600/600/600 ‡ |") {
			lora = line
		}
	}
	if !strings.HasSuffix(base, "| PASS |") || !strings.HasSuffix(lora, "| FAIL |") {
		t.Fatalf("latency rows: base %q lora %q\n%s", base, lora, stage1)
	}
	if strings.Count(stage1, "model base: c=2") < 5 || !strings.Contains(stage1, "$/1M out") || strings.Contains(stage1, "N/A (no price)") {
		t.Fatalf("stage 01 tables per model:\n%s", stage1)
	}
	if !strings.Contains(stage2, "no model metadata") {
		t.Fatalf("stage 02 without models:\n%s", stage2)
	}
	// Each model's requests are its own: 4 of the stage's 8 each, in the stage's own window.
	st, err := resultfiles.ReadStage(filepath.Join(dir, "stage_01", "stage.json"))
	if err != nil {
		t.Fatal(err)
	}
	split1, err := report.SplitByModel(dir, st)
	if err != nil || len(split1.Models) != 2 {
		t.Fatalf("%v %+v", err, split1)
	}
	for _, m := range split1.Models {
		if m.Summary.Requests.Total != 4 || m.Summary.Window != st.Summary.Window {
			t.Errorf("%s: requests %+v window %+v (stage's %+v)", m.Name, m.Summary.Requests, m.Summary.Window, st.Summary.Window)
		}
	}
	if code, _, errOut := plload(t, "report", dir, "--by", "persona"); code != 2 || !strings.Contains(errOut, "accepted: model") {
		t.Fatalf("--by persona: exit %d %s", code, errOut)
	}
}
