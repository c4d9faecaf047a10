package metrics

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// by_turn is the mean TTFT and request size of each turn index over the successful in-window
// requests (a failed one and one in warmup left out, one without request_bytes counted for TTFT
// only), in turn order; absent when no record carries request_bytes, so files of other tools'
// records summarize as before.
func TestByTurn(t *testing.T) {
	turn := func(i int, ttft float64, bytes int) *Record {
		r := ok(2+float64(i), ttft, []float64{10}, 2)
		r.TurnIndex = i
		if bytes > 0 {
			r.RequestBytes = Some(bytes)
		}
		return r
	}
	failed := turn(1, 999, 99999)
	failed.Error = &RecordError{Type: ErrTypeSSE, Message: "boom"}
	warm := turn(0, 999, 99999)
	warm.RequestStartNs, warm.CreditIssuedNs = sec(0.5), sec(0.5)
	s := summary(input(), turn(2, 30, 1000), turn(0, 100, 3000), turn(0, 200, 5000), turn(2, 50, 0), failed, warm)
	want := []TurnNumbers{
		{Turn: 0, Requests: 2, TTFTMeanMs: Some(150.0), RequestBytesMean: Some(4000.0)},
		{Turn: 2, Requests: 2, TTFTMeanMs: Some(40.0), RequestBytesMean: Some(1000.0)},
	}
	if diff := cmp.Diff(want, s.ByTurn); diff != "" {
		t.Errorf("by_turn (-want +got):\n%s", diff)
	}
	if s := summary(input(), turn(0, 100, 0), turn(1, 100, 0)); s.ByTurn != nil {
		t.Errorf("records without request_bytes: by_turn %+v, want none", s.ByTurn)
	}
}

// request_bytes goes to a record's file and back as a plload metric in bytes.
func TestRequestBytesRoundTrip(t *testing.T) {
	r := ok(2, 100, []float64{10}, 2)
	r.RequestBytes = Some(4321)
	line := r.AppendJSON(nil)
	if !strings.Contains(string(line), `"request_bytes":{"value":4321,"unit":"bytes"}`) {
		t.Fatalf("written as %s", line)
	}
	back, err := ParseRecord(line)
	if err != nil || back.RequestBytes != Some(4321) {
		t.Errorf("read back %+v, %v", back.RequestBytes, err)
	}
}
