package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agentRec is a successful agent request: tool round, tool calls (invalid of them), TTF tool call.
func agentRec(startS, ttft float64, round, calls, invalid int, ttfTool float64) *Record {
	r := ok(startS, ttft, []float64{10, 10}, 3)
	r.ToolRound = Some(round)
	if calls > 0 {
		r.ToolCalls, r.ToolCallsInvalid, r.TTFToolCall = Some(calls), Some(invalid), Some(ttfTool)
	}
	return r
}

// inTurn puts r in turn k of conversation c.
func inTurn(r *Record, c string, k int) *Record {
	r.ConversationID, r.TurnIndex = c, k
	return r
}

// TestStageTools: calls, rounds and their per-turn rates, the invalid-arguments share, TTF tool call,
// TTFT and E2E by user turn vs tool round, and the cache hit by round, over successful in-window
// requests only.
func TestStageTools(t *testing.T) {
	warm := inTurn(agentRec(0.5, 999, 0, 9, 9, 999), "w", 0) // warmup: not counted
	fail := inTurn(failed(5, 500, "Internal Server Error"), "b", 0)
	fail.ToolRound = Some(1)
	r1 := inTurn(agentRec(2, 100, 0, 2, 1, 150), "a", 0) // turn 1: two calls, one with bad arguments
	r2 := inTurn(agentRec(2.5, 300, 1, 1, 0, 320), "a", 0)
	r3 := inTurn(agentRec(3, 500, 2, 0, 0, 0), "a", 0) // answers without calls: the turn ends
	r4 := inTurn(agentRec(4, 200, 0, 0, 0, 0), "a", 1) // turn 2: no tool call at all
	r2.UsageCachedTokens, r3.UsageCachedTokens, r4.UsageCachedTokens = Some(90), Some(80), Some(10)
	s := summary(input(), warm, fail, r1, r2, r3, r4)
	tl := s.Tools
	if tl == nil {
		t.Fatal("no summary.tools")
	}
	if tl.Turns != 2 || tl.Calls != 3 || tl.Rounds != 2 || tl.InvalidArguments != 1 {
		t.Fatalf("tools %+v", tl)
	}
	near(t, "calls_per_turn", tl.CallsPerTurn.V, 1.5)
	near(t, "rounds_per_turn", tl.RoundsPerTurn.V, 1)
	near(t, "invalid_arguments_share", tl.InvalidArgumentsShare.V, 1.0/3)
	if tl.TTFToolCall.N != 2 {
		t.Fatalf("ttf_tool_call n = %d", tl.TTFToolCall.N)
	}
	near(t, "ttf_tool_call p50", tl.TTFToolCall.P50, 235)
	if s.TTFTByRound == nil || s.E2EByRound == nil {
		t.Fatal("no split by round")
	}
	near(t, "ttft user turn p50", s.TTFTByRound.UserTurn.P50, 150)
	near(t, "ttft tool round p50", s.TTFTByRound.ToolRound.P50, 400)
	near(t, "e2e tool round max", s.E2EByRound.ToolRound.Max, 520)
	if s.TTFTByRound.UserTurn.N != 2 || s.TTFTByRound.ToolRound.N != 2 {
		t.Fatalf("split %+v", s.TTFTByRound)
	}
	byRound := s.CacheHitByRound
	if len(byRound) != 3 || byRound[0].Round != 0 || byRound[0].Requests != 2 || byRound[2].Round != 2 {
		t.Fatalf("cache by round %+v", byRound)
	}
	near(t, "round 0 cache hit", byRound[0].CacheHit.V, 60.0/200)
	near(t, "round 1 cache hit", byRound[1].CacheHit.V, 0.9)
	if s.Structured != nil || s.Batch != nil {
		t.Fatalf("structured %+v batch %+v on a stage without them", s.Structured, s.Batch)
	}
}

// TestRoundsPerTurnAcrossTheWindowEdges: rounds per turn counts whole turns, so it never reads
// past the cap (3 rounds here). A turn begun in the warmup, whose rounds fall in the window, and a
// turn the window's end cut after one round are left out (counting requests, they made it 10
// rounds over 3 turns: 3.33); the turns that ran to the cap count, whatever order their records
// come in.
func TestRoundsPerTurnAcrossTheWindowEdges(t *testing.T) {
	turn := func(c string, startS float64, rounds int) []*Record {
		var out []*Record
		for k := 0; k <= rounds; k++ {
			out = append(out, inTurn(agentRec(startS+0.05*float64(k), 100, k, 1, 0, 50), c, 0))
		}
		return out
	}
	var recs []*Record
	recs = append(recs, turn("begun-in-warmup", 0.95, 3)...) // its rounds start at 1.0, 1.05, 1.1 s
	recs = append(recs, turn("whole", 3, 3)...)
	capped := turn("whole-read-backwards", 6, 3)
	for i := len(capped) - 1; i >= 0; i-- {
		recs = append(recs, capped[i])
	}
	recs = append(recs, turn("cut-by-the-end", 10.9, 1)...) // window [1 s, 11 s): round 2 never went
	tl := summary(input(), recs...).Tools
	if tl == nil || tl.Turns != 2 || tl.Rounds != 6 || tl.Calls != 8 {
		t.Fatalf("tools %+v: want the 2 whole turns, their 6 rounds and 8 calls", tl)
	}
	near(t, "rounds_per_turn", tl.RoundsPerTurn.V, 3)
	near(t, "calls_per_turn", tl.CallsPerTurn.V, 4)
}

// TestStageWithoutFeatures: a plain stage's summary has none of the §18 keys.
func TestStageWithoutFeatures(t *testing.T) {
	s := summary(input(), ok(2, 100, []float64{10}, 2))
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"tools"`, `"ttft_ms_by_round"`, `"e2e_ms_by_round"`, `"cache_hit_by_round"`, `"structured"`, `"batch"`} {
		if strings.Contains(string(data), key) {
			t.Errorf("%s in a plain stage's summary", key)
		}
	}
	// Agent sessions whose server never called a tool: tools, but no split by round.
	s = summary(input(), agentRec(2, 100, 0, 0, 0, 0))
	if s.Tools == nil || s.Tools.Rounds != 0 || s.TTFTByRound != nil || s.Tools.InvalidArgumentsShare.OK {
		t.Fatalf("tools %+v split %+v", s.Tools, s.TTFTByRound)
	}
}

// TestStageStructured: valid, invalid and the share valid, over successful in-window requests.
func TestStageStructured(t *testing.T) {
	var recs []*Record
	for i, v := range []bool{true, true, true, false} {
		r := ok(2+float64(i), 100, nil, 1)
		r.StructuredValid = Some(v)
		recs = append(recs, r)
	}
	warm := ok(0.5, 100, nil, 1)
	warm.StructuredValid = Some(false)
	s := summary(input(), append(recs, warm, ok(6, 100, nil, 1))...)
	st := s.Structured
	if st == nil || st.Valid != 3 || st.Invalid != 1 {
		t.Fatalf("structured %+v", st)
	}
	near(t, "share_valid", st.ShareValid.V, 0.75)
}

// TestStageBatch: a batch stage's job counts every record, warmup included: completion from the first
// issue to the last end, its rates and its cost.
func TestStageBatch(t *testing.T) {
	in := input()
	in.Batch = true
	first := ok(0.5, 100, []float64{100}, 4) // in warmup: still part of the job
	first.CreditIssuedNs = sec(0.25)
	last := ok(9, 500, []float64{500}, 6) // ends at 10 s
	s := summary(in, first, ok(3, 100, []float64{100}, 10), failed(4, 500, "Internal Server Error"), last)
	b := s.Batch
	if b == nil || b.Requests != 4 || b.Succeeded != 3 || b.OutputTokens != 20 {
		t.Fatalf("batch %+v", b)
	}
	near(t, "completion_s", b.CompletionS, 9.75)
	near(t, "req/s", b.ReqPerSec, 3/9.75)
	near(t, "out tok/s", b.OutTokPerSec, 20/9.75)
	near(t, "cost per job", *b.CostPerJobUSD, 2*9.75/3600)
	in.Cost.Unpriced = true
	if s := summary(in, first, last); s.Batch.CostPerJobUSD != nil {
		t.Fatal("a cost per job without a price")
	}
	in.Batch = false
	if s := summary(in, first, last); s.Batch != nil {
		t.Fatal("a batch result on a stage that is not a batch")
	}
}

// TestStageNotStreamed: non-streamed records (request_latency and usage, no TTFT, ITL or gaps) give
// E2E and throughput; TTFT, TPOT and ITL are empty (N/A), never 0, and nothing is NaN.
func TestStageNotStreamed(t *testing.T) {
	var recs []*Record
	for i := range 5 {
		start := 2 + float64(i)
		recs = append(recs, &Record{CreditIssuedNs: sec(start), RequestStartNs: sec(start), RequestEndNs: Some(sec(start + 0.4)),
			RequestLatency: Some(400.0), NotStreamed: true, InputSequenceLength: Some(100), OutputSequenceLength: Some(50),
			UsagePromptTokens: Some(100), UsageCompletionTokens: Some(50), UsageTotalTokens: Some(150)})
	}
	s := summary(input(), recs...)
	if s.TTFT.Known() || s.TPOT.Known() || s.ITL.Known() || s.TTFO.Known() || s.TTST.Known() || s.PerUser.Known() || s.TTFTByTurn.First.Known() {
		t.Fatalf("latencies from records without them: ttft %+v tpot %+v itl %+v", s.TTFT, s.TPOT, s.ITL)
	}
	if s.E2E.N != 5 || s.Throughput.OutputTokens != 250 || s.Requests.Succeeded != 5 {
		t.Fatalf("e2e %+v throughput %+v", s.E2E, s.Throughput)
	}
	near(t, "out tok/s", s.Throughput.OutTokPerSec, 25)
	if s.SLO.Verdict != SLONA {
		t.Fatalf("SLO on TTFT and ITL with neither measured: %s", s.SLO.Verdict)
	}
	if _, err := json.Marshal(s); err != nil { // NaN or Inf would fail here
		t.Fatal(err)
	}
}

// TestSummarizeFileKeep: Keep counts only the records it keeps, in the window given.
func TestSummarizeFileKeep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile_export.jsonl")
	var b []byte
	for i := range 6 {
		r := ok(2+float64(i), 100, []float64{10}, 2)
		r.Model = []string{"base", "lora"}[i%2]
		b = append(r.AppendJSON(b), '\n')
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	in := input()
	in.Keep = func(r *Record) bool { return r.Model == "lora" }
	s, err := SummarizeFile(path, in, false)
	if err != nil {
		t.Fatal(err)
	}
	if s.Requests.Total != 3 || s.Window.T0Ns != base || s.Window.Seconds != 10 {
		t.Fatalf("requests %+v window %+v", s.Requests, s.Window)
	}

}
