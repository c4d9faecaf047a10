package metrics

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRoundTrip(t *testing.T) {
	recs := []*Record{sampleRecord()}
	cancelled := sampleRecord()
	cancelled.TTFT, cancelled.TTST, cancelled.RequestLatency, cancelled.InterChunkLatency = Opt[float64]{}, Opt[float64]{}, Opt[float64]{}, nil
	cancelled.OutputSequenceLength, cancelled.InputSequenceLength = Opt[int]{}, Opt[int]{}
	cancelled.WasCancelled, cancelled.CancellationTimeNs, cancelled.ErrorISL = true, Some(int64(7)), Some(3)
	cancelled.Error = &RecordError{Code: Some(499), Type: ErrTypeCancelled, Message: "x"}
	replayed := sampleRecord() // a reused pool entry's request on a retried connection
	replayed.DatasetSession, replayed.Retried = Some(4), true
	agent := sampleRecord() // a tool round of an agent session on a model mix, structured output
	agent.Model, agent.ToolRound, agent.StructuredValid = "lora-a", Some(2), Some(false)
	agent.ToolCalls, agent.ToolCallsInvalid, agent.TTFToolCall = Some(3), Some(1), Some(88.25)
	agent.ClientPromptTokens, agent.ClientPromptMessages = Some(540), Some(7)
	plain := sampleRecord() // non-streamed: no TTFT, ITL or gaps
	plain.TTFT, plain.TTST, plain.InterChunkLatency, plain.NotStreamed = Opt[float64]{}, Opt[float64]{}, nil, true
	plain.ToolRound, plain.StructuredValid = Some(0), Some(true)
	recs = append(recs, cancelled, replayed, agent, plain)
	var buf bytes.Buffer
	for _, r := range recs {
		buf.Write(r.AppendJSON(nil))
		buf.WriteByte('\n')
	}
	var got []*Record
	if err := ReadRecords(&buf, func(r *Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(recs, got); diff != "" {
		t.Fatalf("round trip (-wrote +read):\n%s", diff)
	}
}

// TestReadsAIPerfFixtures: the real AIPerf files in testdata (copied from the AIPerf repository,
// Apache-2.0; see testdata/README.md) read, and each record's TTFT, latency and ITL follow from its own
// timestamps and gaps.
func TestReadsAIPerfFixtures(t *testing.T) {
	f, err := os.Open("testdata/aiperf_profile_export.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	err = ReadRecords(f, func(r *Record) error {
		n++
		if r.RequestLatency.V <= 0 || !r.TTFT.OK || len(r.InterChunkLatency) == 0 || r.OutputSequenceLength.V != 200 {
			t.Errorf("record %d: %+v", n, r)
			return nil
		}
		sum := r.TTFT.V
		for _, g := range r.InterChunkLatency {
			sum += g
		}
		if d := sum - r.RequestLatency.V; d > 1e-6 || d < -1e-6 {
			t.Errorf("record %d: TTFT + gaps = %v, latency %v", n, sum, r.RequestLatency.V)
		}
		// AIPerf's per-request ITL is (latency − TTFT) ÷ (OSL − 1).
		itl := (r.RequestLatency.V - r.TTFT.V) / float64(r.OutputSequenceLength.V-1)
		if d := itl - r.InterTokenLatency.V; d > 1e-9 || d < -1e-9 {
			t.Errorf("record %d: ITL %v, from its own numbers %v", n, r.InterTokenLatency.V, itl)
		}
		if r.RequestEndNs.V-r.RequestStartNs <= 0 || r.BenchmarkPhase != PhaseProfiling {
			t.Errorf("record %d: times %+v", n, r)
		}
		return nil
	})
	if err != nil || n != 10 {
		t.Fatalf("%d records: %v", n, err)
	}
	docs, _ := os.ReadFile("testdata/aiperf_docs_examples.jsonl")
	var got []*Record
	if err := ReadRecords(bytes.NewReader(docs), func(r *Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[1].WasCancelled || got[1].Error == nil || got[1].Error.Code.V != 499 || !got[0].TTFT.OK {
		t.Fatalf("docs examples: %+v %+v", got[0], got[1])
	}
}

func TestReadErrorsNameTheLine(t *testing.T) {
	in := sampleLine() + "\n\nnot json\n"
	err := ReadRecords(strings.NewReader(in), func(*Record) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("%v", err)
	}
}

func sampleLine() string { return string(sampleRecord().AppendJSON(nil)) }

// FuzzParseRecord: no line panics the parser, and whatever it accepts survives a round trip: the
// record written back (AppendJSON) parses to the same record and writes the same bytes, so a report
// recomputed from plload's own rewrite of a file has the same numbers.
func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(sampleLine()))
	f.Add([]byte(`{"metadata":{"request_start_ns":1.5e18,"x_request_id":null},"metrics":{"inter_chunk_latency":{"value":[1,2,"x"]}}}`))
	f.Add([]byte(`{"metadata":{"request_start_ns":7,"was_cancelled":true},"metrics":{"error_isl":{"value":3}},"error":{"code":499,"type":"RequestCancellationError","message":"x\u00e9\n"}}`))
	f.Add([]byte(`{"metadata":{"request_start_ns":5,"intended_start_ns":4,"request_ack_ns":6,"request_end_ns":9,"persona":2,"retried":true,"turn_index":1},"metrics":{"usage_prompt_cache_read_tokens":{"value":3}}}`))
	f.Add([]byte(`{"metadata":{"request_start_ns":1,"conversation_id":"c\"1"},"metrics":{"time_to_first_token":{"value":0.1},"inter_chunk_latency":{"value":[1e-7,2.5,3]},"output_sequence_length":{"value":4}}}`))
	// The early (2025) layout: its names, a cancelled request known by its error alone.
	f.Add([]byte(`{"metadata": {"timestamp_ns": 1.76e18, "credit_phase": "profiling"}, "metrics": {"ttft": {"value": 40.5}, "ttst": {"value": null}, "reasoning_token_count": {"value": 3}, "output_sequence_length": {"value": 3.0}, "max_response_timestamp": {"value": 1760000000100000000}}, "error": null}`))
	f.Add([]byte(`{"metadata": {"timestamp_ns": 5}, "metrics": {"error_request_count": {"value": 1}}, "error": {"code": 499, "type": "RequestCancellationError", "message": "x"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		first, err := ParseRecord(line)
		if err != nil {
			return
		}
		written := first.AppendJSON(nil)
		second, err := ParseRecord(written)
		if err != nil {
			t.Fatalf("plload cannot read the record it wrote (%v):\nread  %s\nwrote %s", err, line, written)
		}
		// An empty gaps list and none are the same to every computation (and written the same way).
		if diff := cmp.Diff(first, second, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip changed the record (-read +reread):\n%s\nread  %s\nwrote %s", diff, line, written)
		}
		if again := second.AppendJSON(nil); !bytes.Equal(again, written) {
			t.Fatalf("writing is not stable:\n%s\n%s", written, again)
		}
	})
}

// TestMetricValues: a value that is not a number names its tag; null values and whole null metrics
// are absent (not 0); tags plload does not need are skipped; token counts are rounded; a scalar where
// the gaps list belongs is a list of one.
func TestMetricValues(t *testing.T) {
	head := `{"metadata":{"request_start_ns":1},"metrics":`
	for metrics, want := range map[string]string{
		`{"time_to_first_token":{"value":"fast","unit":"ms"}}`: "metrics.time_to_first_token:",
		`{"output_sequence_length":{"value":true}}`:            "metrics.output_sequence_length:",
		`{"inter_chunk_latency":{"value":[1,"x"]}}`:            "metrics.inter_chunk_latency: list item",
	} {
		if _, err := ParseRecord([]byte(head + metrics + "}")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", metrics, err, want)
		}
	}
	rec, err := ParseRecord([]byte(head + `{"time_to_first_token":{"value":null},"request_latency":null,` +
		`"prefill_throughput":{"value":12.5,"unit":"tokens/sec"},"output_sequence_length":{"value":41.6},` +
		`"inter_chunk_latency":{"value":7.5},"time_to_second_token":{"value":3.25}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if rec.TTFT.OK || rec.RequestLatency.OK || rec.OutputSequenceLength != Some(42) || rec.TTST != Some(3.25) ||
		len(rec.InterChunkLatency) != 1 || rec.InterChunkLatency[0] != 7.5 {
		t.Fatalf("%+v", rec)
	}
}

// TestRecordProblemsInTheRecordsTerms: a line with a wrong type or cut short names the key, what it
// held and what belongs there — never Go's type names — and says what a records file is.
func TestRecordProblemsInTheRecordsTerms(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"metadata":{"request_start_ns":1},"metrics":{"ttft":5}}`, `metrics.ttft holds a number where an object {"value": …, "unit": …} belongs`},
		{`{"metadata":{"request_start_ns":1},"metrics":{},"error":"boom"}`, `error holds a string where an object belongs`},
		{`{"metadata":{"request_start_ns":"x"},"metrics":{}}`, `invalid number literal`},
		{`{"metadata":{"request_start_`, `not valid JSON at byte`},
	} {
		_, err := ParseRecord([]byte(tc.line))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), recordsAccepted) || strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "metrics.rawMetric") {
			t.Errorf("%s: %v; want %q and what a records file is, no Go types", tc.line, err, tc.want)
		}
	}
}
