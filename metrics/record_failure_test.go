package metrics

import "testing"

func TestFailureKind(t *testing.T) {
	for _, tc := range []struct {
		rec        Record
		kind       string
		unanswered bool
		refused    bool
	}{
		{Record{}, "", false, false},
		{Record{WasCancelled: true, Error: &RecordError{Code: Some(CodeCancelled), Type: ErrTypeCancelled}}, "", false, false},
		{Record{Error: &RecordError{Type: ErrTypeConnect, Message: "cannot connect to 127.0.0.1:9: connection refused"}}, "refused", true, false},
		{Record{Error: &RecordError{Type: ErrTypeConnect, Message: "TLS with h:443 failed: x509: certificate signed by unknown authority (a private CA goes in target.tls.ca_file)"}}, "tls", true, false},
		{Record{Error: &RecordError{Type: ErrTypeConnect, Message: "cannot connect to nohost:80: lookup nohost: no such host"}}, "dns", true, false},
		{Record{Error: &RecordError{Type: ErrTypeTimeout, Message: "no complete answer within target.timeout 2s"}}, "timeout", true, false},
		{Record{RequestAckNs: Some[int64](1), Error: &RecordError{Type: ErrTypeTimeout, Message: "no complete answer within target.timeout 2s"}}, "timeout", false, false},
		{Record{Error: &RecordError{Code: Some(404), Type: "Not Found", Message: "404 page not found"}}, "HTTP 404", false, false},
		{Record{Error: &RecordError{Code: Some(429), Type: "Too Many Requests", Message: "Retry-After: 1; slow down"}}, "HTTP 429", false, true},
		{Record{Error: &RecordError{Code: Some(503), Type: "Service Unavailable", Message: "<html>"}}, "HTTP 503", false, true},
		{Record{Error: &RecordError{Code: Some(400), Type: "Bad Request", Message: "bad model"}}, "HTTP 400", false, false},
		{Record{Error: &RecordError{Type: ErrTypeTransport, Message: "the server closed the connection before answering: EOF"}}, "closed", true, false},
		{Record{Error: &RecordError{Type: ErrTypeTransport, Message: "the server reset (TCP RST) the connection before answering: connection reset by peer"}}, "reset", true, false},
		{Record{RequestAckNs: Some[int64](1), Error: &RecordError{Type: ErrTypeTransport, Message: "the server reset the connection (TCP RST) mid-answer"}}, "reset", false, false},
		{Record{RequestAckNs: Some[int64](1), Error: &RecordError{Type: ErrTypeTransport, Message: "the connection closed mid-answer (stream cut)"}}, "stream cut", false, false},
		{Record{RequestAckNs: Some[int64](1), Error: &RecordError{Type: ErrTypeTransport, Message: "the stream ended without data: [DONE] after 3 token events (truncated answer?)"}}, "stream cut", false, false},
		{Record{RequestAckNs: Some[int64](1), Error: &RecordError{Type: ErrTypeTransport, Message: "bad JSON in the stream: x"}}, "bad stream", false, false},
		{Record{RequestAckNs: Some[int64](1), Error: &RecordError{Type: ErrTypeTransport, Message: `expected a text/event-stream answer to a streaming request, got Content-Type "application/json": {}`}}, "not SSE", false, false},
		{Record{RequestAckNs: Some[int64](1), Error: &RecordError{Code: Some(CodeSSEError), Type: ErrTypeSSE, Message: "model overloaded"}}, "stream error", false, false},
		{Record{RequestAckNs: Some[int64](1), Error: &RecordError{Type: ErrTypeInvalidResult, Message: "the answer has no content"}}, "empty answer", false, false},
		{Record{RequestAckNs: Some[int64](1), Error: &RecordError{Type: ErrTypeInvalidResult, Message: "the answer has 3 vectors for 4 inputs"}}, "invalid answer", false, false},
	} {
		r := tc.rec
		if got := FailureKind(&r); got != tc.kind {
			t.Errorf("%+v: kind %q, want %q", r.Error, got, tc.kind)
		}
		if got := Unanswered(&r); got != tc.unanswered {
			t.Errorf("%+v: unanswered %v, want %v", r.Error, got, tc.unanswered)
		}
		if got := Refused(&r); got != tc.refused {
			t.Errorf("%+v: refused %v, want %v", r.Error, got, tc.refused)
		}
	}
	var tally FailureTally
	for _, msg := range []string{"a", "b", "c"} {
		tally.Add(&Record{Error: &RecordError{Type: ErrTypeConnect, Message: "connection refused " + msg}})
	}
	tally.Add(&Record{Error: &RecordError{Code: Some(503), Type: "Service Unavailable", Message: "busy"}})
	tally.Add(&Record{})
	if got, want := tally.Summary(), "refused × 3 (first: connection refused a); HTTP 503 × 1 (first: busy)"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}
