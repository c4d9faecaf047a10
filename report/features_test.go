package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// featureStage is stage 1 of the golden scenario with agent, structured-output and non-streamed
// records (or a batch), as the engine writes them.
func featureStage(t *testing.T, batch bool, recs ...*metrics.Record) *resultfiles.StageReport {
	t.Helper()
	sc, _ := goldenStages(t)
	in := resultfiles.StageInput(sc, 0)
	in.T0Ns, in.Batch = metrics.Some(t0), batch
	st := metrics.NewStage(in)
	for _, r := range recs {
		st.Add(r)
	}
	rep := resultfiles.NewStageReport("plload test", sc, 0, strings.Repeat("a", 64), st.Summary(), resultfiles.EngineCounts{})
	if batch {
		rep.Mode = workload.ModeBatch
	}
	return rep
}

func agentRecords() []*metrics.Record {
	var recs []*metrics.Record
	for k := range 4 {
		r := rec(1.5+float64(k), 100+50*float64(k), 10, "a")
		r.ToolRound = metrics.Some(k % 2)
		r.ConversationID, r.TurnIndex = "a", k/2 // two turns of a user request and one tool round
		r.ToolCalls, r.ToolCallsInvalid, r.TTFToolCall = metrics.Some(2), metrics.Some(k/3), metrics.Some(120.0)
		r.StructuredValid = metrics.Some(k != 2)
		recs = append(recs, r)
	}
	return recs
}

// TestAgentsTable: the agents table appears only for stages with tool rounds or structured output,
// with calls and rounds per turn, the invalid-arguments share, TTF tool call, TTFT by round and the
// structured valid share; stage.json has summary.tools and summary.structured and matches the schema.
func TestAgentsTable(t *testing.T) {
	plain := StageTable([]*resultfiles.StageReport{featureStage(t, false, rec(1.5, 100, 10, "a"))})
	if strings.Contains(plain, "Agents and structured output") {
		t.Fatalf("agents table on a plain stage:\n%s", plain)
	}
	st := featureStage(t, false, agentRecords()...)
	text := StageTable([]*resultfiles.StageReport{st})
	i := strings.Index(text, "Agents and structured output:")
	if i < 0 {
		t.Fatalf("no agents table:\n%s", text)
	}
	section := text[i:]
	for _, want := range []string{"tool calls/turn", "rounds/turn", "invalid args", "TTF tool call p50 ms", "TTFT user turn", "TTFT tool round",
		"| 4.00 | 1.00 | 12.5% | 120 |", "75.0% (3/4)"} {
		if !strings.Contains(section, want) {
			t.Errorf("agents table lacks %q:\n%s", want, section)
		}
	}
	_, stageSchema := schemas(t)
	data, _ := json.Marshal(st)
	if err := validate(t, stageSchema, "stage.json with tools", data); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	for _, key := range []string{`"tools":{`, `"ttft_ms_by_round":{`, `"e2e_ms_by_round":{`, `"cache_hit_by_round":[`, `"structured":{"valid":3,"invalid":1,"share_valid":0.75}`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("stage.json lacks %s", key)
		}
	}
}

// TestBatchStage: a batch stage's stage.json has batch {requests, completion_s, cost_per_job_usd, …}
// (round-tripping through ReadStage), its table and headline name the completion time, req/s, out
// tok/s and $ per job.
func TestBatchStage(t *testing.T) {
	recs := []*metrics.Record{rec(0.5, 100, 10, "a"), rec(2, 100, 10, "b"), rec(3, 100, 10, "a")}
	recs[0].CreditIssuedNs = t0 // issued at t0, sent 0.5 s later: the job starts at the issue
	st := featureStage(t, true, recs...)
	b := st.Batch
	if b == nil || b.Requests != 3 || b.CostPerJobUSD == nil {
		t.Fatalf("batch %+v", b)
	}
	end := float64(recs[2].RequestEndNs.V-t0) / 1e9
	if d := b.CompletionS - end; d > 1e-9 || d < -1e-9 {
		t.Fatalf("completion %v s, want %v", b.CompletionS, end)
	}
	dir := t.TempDir()
	if err := st.Write(dir); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "stage.json"))
	_, stageSchema := schemas(t)
	if err := validate(t, stageSchema, "batch stage.json", data); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	back, err := resultfiles.ReadStage(filepath.Join(dir, "stage.json"))
	if err != nil || back.Batch == nil || back.Batch.CompletionS != b.CompletionS || strings.Contains(string(data), `"summary":{"batch"`) {
		t.Fatalf("read back %+v, %v", back.Batch, err)
	}
	head := resultfiles.HeadlineText([]*resultfiles.StageReport{back})
	for _, want := range []string{"batch of 3 requests completed in " + resultfiles.Num(b.CompletionS, 2) + " s", "req/s", "out tok/s", "/job", "SLO"} {
		if !strings.Contains(head, want) {
			t.Errorf("headline lacks %q: %s", want, head)
		}
	}
	table := StageTable([]*resultfiles.StageReport{back})
	if !strings.Contains(table, "Batch job:") || !strings.Contains(table, "| 3 (3) | "+resultfiles.Num(b.CompletionS, 2)+" |") || !strings.Contains(table, "| batch |") {
		t.Fatalf("batch table:\n%s", table)
	}
	back.Cost.Unpriced = true
	if head := resultfiles.HeadlineText([]*resultfiles.StageReport{back}); !strings.Contains(head, "cost per job N/A") {
		t.Fatalf("unpriced headline: %s", head)
	}
}

// TestNotStreamedTables: non-streamed records (latency and usage only) print N/A for TTFT, TPOT and
// ITL, never 0 or NaN.
func TestNotStreamedTables(t *testing.T) {
	var recs []*metrics.Record
	for k := range 3 {
		start := t0 + int64((1.5+float64(k))*1e9)
		recs = append(recs, &metrics.Record{CreditIssuedNs: start, RequestStartNs: start, RequestEndNs: metrics.Some(start + 4e8),
			RequestLatency: metrics.Some(400.0), NotStreamed: true, InputSequenceLength: metrics.Some(200), OutputSequenceLength: metrics.Some(50),
			UsagePromptTokens: metrics.Some(200), UsageCompletionTokens: metrics.Some(50), UsageTotalTokens: metrics.Some(250)})
	}
	st := featureStage(t, false, recs...)
	text := StageTable([]*resultfiles.StageReport{st})
	if strings.Contains(text, "NaN") || strings.Contains(text, "Inf") {
		t.Fatalf("NaN in the tables:\n%s", text)
	}
	lat := text[strings.Index(text, "Latency (ms):\n\n")+len("Latency (ms):\n\n"):]
	lat = lat[:strings.Index(lat, "\n\n")]
	row := strings.Split(strings.TrimSpace(lat), "\n")
	cells := strings.Split(row[len(row)-1], "|")
	// | stage | load | requests (ok) | TTFT | TPOT | ITL | E2E | SLO |
	if strings.TrimSpace(cells[3]) != "3 (3)" || strings.TrimSpace(cells[4]) != "N/A" || strings.TrimSpace(cells[5]) != "N/A" || strings.TrimSpace(cells[6]) != "N/A" || !strings.Contains(cells[7], "400") {
		t.Fatalf("latency row %q", row[len(row)-1])
	}
	_, stageSchema := schemas(t)
	data, _ := json.Marshal(st)
	if err := validate(t, stageSchema, "non-streamed stage.json", data); err != nil {
		t.Fatal(err)
	}
}

// TestBatchHeadlineWhenTheJobDidNotComplete: a batch none of whose requests was answered (a dead
// target) says so, with no cost per job; one cut short by the engine's abort says it stopped.
func TestBatchHeadlineWhenTheJobDidNotComplete(t *testing.T) {
	failed := func(startS float64) *metrics.Record {
		r := rec(startS, 100, 10, "a")
		r.Error = &metrics.RecordError{Code: metrics.Some(502), Type: "Bad Gateway"}
		return r
	}
	dead := featureStage(t, true, failed(0.1), failed(0.2))
	if dead.Batch.CostPerJobUSD != nil {
		t.Fatalf("a job that answered nothing has a cost per job: %v", *dead.Batch.CostPerJobUSD)
	}
	if head := resultfiles.HeadlineText([]*resultfiles.StageReport{dead}); !strings.Contains(head, "batch of 2 requests sent over") || !strings.Contains(head, "none answered: the job did not complete") || strings.Contains(head, "completed in") || strings.Contains(head, "/job") {
		t.Fatalf("headline of a dead job: %s", head)
	}
	cut := featureStage(t, true, rec(0.5, 100, 10, "a"), failed(0.6))
	cut.Engine.Aborted = "target unreachable"
	if head := resultfiles.HeadlineText([]*resultfiles.StageReport{cut}); !strings.Contains(head, "stopped, not completed, after") || strings.Contains(head, "completed in") {
		t.Fatalf("headline of an aborted job: %s", head)
	}
}
