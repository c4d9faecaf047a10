package search

import (
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
)

// TestSamplerUnreachable: a probe whose last requests could not connect — a server killed mid-probe,
// a dead port — measured an outage: its Unreachable names it and judgeRun makes it invalid, so the
// search stops instead of halving the load against nothing. Refused connections among answers, a
// server that answers 500 (an answer) and cancellations are not an outage.
func TestSamplerUnreachable(t *testing.T) {
	const s = int64(1e9)
	ok := func(end int64) *metrics.Record {
		return &metrics.Record{RequestStartNs: end - s/10, RequestEndNs: metrics.Some(end), RequestAckNs: metrics.Some(end - s/20)}
	}
	refused := func(end int64) *metrics.Record {
		return &metrics.Record{RequestStartNs: end, RequestEndNs: metrics.Some(end),
			Error: &metrics.RecordError{Type: metrics.ErrTypeConnect, Message: "cannot connect to 127.0.0.1:9: connection refused"}}
	}
	http500 := func(end int64) *metrics.Record {
		r := ok(end)
		r.Error = &metrics.RecordError{Code: metrics.Some(500), Type: "HTTP 500", Message: "internal"}
		return r
	}
	cancelled := func(end int64) *metrics.Record {
		return &metrics.Record{RequestStartNs: end, WasCancelled: true, Error: &metrics.RecordError{Type: metrics.ErrTypeCancelled}}
	}
	// series makes n records of kind at t0 + i·step.
	series := func(kind func(int64) *metrics.Record, t0, step int64, n int) []*metrics.Record {
		var out []*metrics.Record
		for i := range n {
			out = append(out, kind(t0+int64(i)*step))
		}
		return out
	}
	join := func(parts ...[]*metrics.Record) []*metrics.Record {
		var out []*metrics.Record
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		records []*metrics.Record
		want    string // in Unreachable; "" for none
	}{
		{"killed mid-probe", join(series(ok, 10*s, s/10, 20), series(refused, 12*s, s/10, 6)), "the last 6 requests could not connect after its last answer (first: refused: cannot connect"},
		{"killed, records out of order", join(series(refused, 12*s, s/10, 6), series(ok, 10*s, s/10, 20)), "the last 6 requests could not connect after its last answer"},
		{"a dead port", series(refused, 10*s, s/2, 3), "the last 3 requests could not connect and none was answered"},
		{"refused, then answered again", join(series(refused, 10*s, s/10, 6), series(ok, 11*s, s/10, 5)), ""},
		{"one refused at the end", join(series(ok, 10*s, s/10, 20), series(refused, 13*s, 0, 1)), ""},
		{"four refused within a second", join(series(ok, 10*s, s/10, 20), series(refused, 13*s, s/10, 4)), ""},
		{"HTTP 500 to everything", series(http500, 10*s, s/10, 20), ""},
		{"cancelled by the drain", join(series(ok, 10*s, s/10, 20), series(cancelled, 13*s, s/10, 8)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := &metrics.StageSummary{}
			sum.Window.EEffNs = 100 * s
			sm := NewSampler(SLO{}, sum, false)
			for _, r := range tc.records {
				sm.Add(r)
			}
			m := sm.Measurement()
			if tc.want == "" && m.Unreachable != "" || !strings.Contains(m.Unreachable, tc.want) {
				t.Fatalf("Unreachable %q, want %q", m.Unreachable, tc.want)
			}
			if tc.want == "" {
				return
			}
			seq := &sequence{judge: func(Measurement, uint64) Judgement { return Judgement{Verdict: Pass, Reason: "fine"} }}
			if j := seq.judgeRun(&Measurement{}, m, 1, false); j.Verdict != Invalid || j.Reason != m.Unreachable {
				t.Errorf("judged %s: %s", j.Verdict, j.Reason)
			}
		})
	}
}
