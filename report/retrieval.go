package report

import (
	"fmt"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// retrievalTable is an embeddings or rerank stage's own numbers: its requests answer in one piece
// and generate nothing, so what counts is their latency, how many they serve, the input tokens
// they read, and what a million of those cost. A chat stage beside it shows N/A.
func (c columns) retrievalTable(rows []runStage) table {
	t := table{title: "Embeddings and rerank", header: c.leadHeader("endpoint", "requests (ok)", "req/s", "input tok/s",
		c.statHeader("latency", metrics.SLOMetricE2E), "$/1M input tok", "SLO")}
	for _, rs := range rows {
		s := rs.st.Summary
		if !workload.IsRetrieval(rs.st.Target.Endpoint) {
			t.add(c.lead(rs), "N/A (chat)", "", "", "", "", "", sloText(rs.st))
			continue
		}
		t.add(c.lead(rs), rs.st.Target.Endpoint, requestsCell(s), resultfiles.Num(s.Throughput.ReqPerSec, 2),
			resultfiles.Num(s.Throughput.InTokPerSec, 1), censored(s, c.statCell(metrics.SLOMetricE2E, s.E2E)),
			costText(rs.st, s.Cost.USDPer1MIn, 4), sloText(rs.st))
	}
	return t
}

// ragTable is a RAG stage's pipeline: each step's latency (and its failures), the time from the
// question to the chat's first token, and the whole turn's latency, question to last token.
func (c columns) ragTable(rows []runStage) table {
	t := table{title: "RAG turns (question → embed → rerank → chat)", header: c.leadHeader("steps: requests (errors)",
		c.statHeader("embed", ""), c.statHeader("rerank", ""), c.statHeader("question to first token", ""),
		c.statHeader("whole turn", metrics.SLOMetricRAGTurn))}
	for _, rs := range rows {
		r := rs.st.Summary.RAG
		if r == nil {
			t.add(c.lead(rs), "N/A (no RAG steps)", "", "", "", "")
			continue
		}
		counts, latency := "", map[string]string{"embed": "N/A (no step)", "rerank": "N/A (no step)"}
		for _, st := range r.Steps {
			if counts != "" {
				counts += ", "
			}
			counts += fmt.Sprintf("%s %d (%d)", st.Step, st.Requests, st.Errors)
			latency[st.Step] = c.statCell("", st.Latency)
		}
		t.add(c.lead(rs), counts, latency["embed"], latency["rerank"], c.statCell("", r.TurnTTFT),
			c.statCell(metrics.SLOMetricRAGTurn, r.Turn))
	}
	return t
}
