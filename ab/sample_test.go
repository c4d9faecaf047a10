package ab

import (
	"testing"

	"github.com/plload/plload/metrics"
)

// An A/B sample counts a RAG turn's chat requests, never its successful steps (their latency is
// another server's): the same rule as a stage's summary.
func TestCollectorLeavesStepsOut(t *testing.T) {
	c := NewCollector(0, 10_000_000_000)
	chat := &metrics.Record{RequestStartNs: 1_000_000, RequestEndNs: metrics.Some(int64(201_000_000)), RequestLatency: metrics.Some(200.0)}
	step := &metrics.Record{Step: "embed", RequestStartNs: 1_000_000, RequestEndNs: metrics.Some(int64(51_000_000)), RequestLatency: metrics.Some(50.0)}
	c.Add(step)
	c.Add(chat)
	s := c.Sample()
	if s.Counts.InWindow != 1 || len(s.E2E) != 1 || s.E2E[0] != 200 {
		t.Errorf("counts %+v, E2E %v; want the chat request alone", s.Counts, s.E2E)
	}
}
