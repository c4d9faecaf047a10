package metrics

import (
	"testing"
	"time"
)

// A RAG turn's steps are summed apart: a successful step is not a chat request (its latency would
// pull the stage's E2E toward another server's), a failed one counts as its turn's failure in the
// error rate; the whole turn runs from when it was due to the chat's end.
func TestRAGStepsSummedApart(t *testing.T) {
	ms := int64(1_000_000)
	st := NewStage(StageInput{T0Ns: Some(int64(0)), Duration: 10 * time.Second})
	step := func(name string, start, lat int64, failed bool) *Record {
		r := &Record{Step: name, RequestStartNs: start * ms, RequestEndNs: Some((start + lat) * ms), RequestLatency: Some(float64(lat))}
		if failed {
			r.RequestLatency = Opt[float64]{}
			r.Error = &RecordError{Code: Some(503), Type: "Service Unavailable"}
		}
		return r
	}
	chat := &Record{RequestStartNs: 130 * ms, RequestAckNs: Some(130 * ms), RequestEndNs: Some(330 * ms), RequestLatency: Some(200.0),
		TTFT: Some(50.0), RAGTurnStartNs: Some(100 * ms), InputSequenceLength: Some(10), OutputSequenceLength: Some(5)}
	for _, r := range []*Record{step("embed", 100, 10, false), step("rerank", 110, 20, false), chat,
		step("embed", 500, 10, false), step("rerank", 510, 5, true)} {
		st.Add(r)
	}
	sum := st.Summary()
	if sum.E2E.N != 1 || sum.E2E.Mean != 200 || sum.Requests.Succeeded != 1 || sum.Requests.Errors != 1 {
		t.Fatalf("chat numbers: E2E %+v, requests %+v", sum.E2E, sum.Requests)
	}
	if !sum.ErrorRate.OK || sum.ErrorRate.V != 0.5 {
		t.Errorf("error rate %v, want 0.5 (one turn of two failed at its rerank step)", sum.ErrorRate)
	}
	r := sum.RAG
	if r == nil || len(r.Steps) != 2 || r.Steps[0].Step != "embed" || r.Steps[0].Requests != 2 || r.Steps[1].Errors != 1 || r.Steps[1].Latency.Mean != 20 {
		t.Fatalf("rag %+v", r)
	}
	if r.Turn.N != 1 || r.Turn.Mean != 230 || r.TurnTTFT.Mean != 80 {
		t.Errorf("turn %v ms, to first token %v ms; want 230 and 80", r.Turn.Mean, r.TurnTTFT.Mean)
	}
	if v, ok := sum.LatencyDist(SLOMetricRAGTurn).Stat("p95"); !ok || v != 230 {
		t.Errorf("rag_turn p95 %v %v", v, ok)
	}
}

// The rule every reader of records applies: a successful step is summed apart, a failed one is a
// request (its turn's failure).
func TestSummedApart(t *testing.T) {
	ok := &Record{Step: "embed", RequestEndNs: Some(int64(1))}
	failed := &Record{Step: "rerank", Error: &RecordError{Type: "Service Unavailable"}}
	chat := &Record{RequestEndNs: Some(int64(1))}
	if !ok.SummedApart() || failed.SummedApart() || chat.SummedApart() {
		t.Errorf("summed apart: ok step %v, failed step %v, chat %v", ok.SummedApart(), failed.SummedApart(), chat.SummedApart())
	}
}
