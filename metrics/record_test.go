package metrics

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sampleRecord() *Record {
	return &Record{
		SessionNum: 3, XRequestID: "r", XCorrelationID: "c", ConversationID: "s01-000001", TurnIndex: 1,
		CreditIssuedNs: 1795964934747406753, RequestStartNs: 1795964934748144129,
		RequestAckNs: Some(int64(1795964934754833615)), RequestEndNs: Some(int64(1795964936153756252)),
		WorkerID: "plload", RecordProcessorID: "plload", BenchmarkPhase: PhaseProfiling,
		IntendedStartNs: Some(int64(1795964934747264294)), Persona: Some(2),
		TTFT: Some(Ms(205794047)), TTST: Some(24.557095), RequestLatency: Some(1405.6121229999999),
		InterChunkLatency: []float64{24.557095, 1e-7}, OutputSequenceLength: Some(49), InputSequenceLength: Some(562),
	}
}

func TestAppendJSONLayout(t *testing.T) {
	line := sampleRecord().AppendJSON(nil)
	var m map[string]map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, line)
	}
	s := string(line)
	if !strings.HasPrefix(s, `{"metadata":{"session_num":3,`) || strings.Index(s, `"metrics"`) < strings.Index(s, `"was_cancelled":false`) {
		t.Fatalf("key order: %s", s)
	}
	for _, absent := range []string{"null", "cancellation_time_ns", "error", "time_to_first_output_token"} {
		if strings.Contains(s, absent) {
			t.Errorf("%q written for an absent value: %s", absent, s)
		}
	}
	if got := m["metadata"]["request_end_ns"].(json.Number).String(); got != "1795964936153756252" {
		t.Errorf("nanoseconds lost precision: %s", got)
	}
	if got := m["metrics"]["time_to_first_token"].(map[string]any)["value"].(json.Number).String(); got != "205.79404699999998" {
		t.Errorf("TTFT written as %s; AIPerf's ns × (1000/1e9) gives 205.79404699999998", got)
	}
	if !strings.Contains(s, `"inter_chunk_latency":{"value":[24.557095,1e-07],"unit":"ms"}`) {
		t.Errorf("inter_chunk_latency: %s", s)
	}
	if !strings.Contains(s, `"output_sequence_length":{"value":49,"unit":"tokens"}`) {
		t.Errorf("token counts must be integers: %s", s)
	}
}

func TestAppendJSONErrorAndEscaping(t *testing.T) {
	r := sampleRecord()
	r.TTFT, r.TTST, r.RequestLatency, r.InterChunkLatency = Opt[float64]{}, Opt[float64]{}, Opt[float64]{}, nil
	r.OutputSequenceLength, r.InputSequenceLength = Opt[int]{}, Opt[int]{}
	r.WasCancelled, r.CancellationTimeNs, r.ErrorISL = true, Some(int64(5)), Some(10)
	r.Error = &RecordError{Code: Some(CodeCancelled), Type: ErrTypeCancelled, Message: "<html>\"quoted\"\n\t\x01 bad:\xff ok: 한국어"}
	line := r.AppendJSON(nil)
	var m struct {
		Metrics map[string]any
		Error   struct {
			Code    int
			Type    string
			Message string
		}
	}
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, line)
	}
	if m.Error.Code != 499 || m.Error.Message != "<html>\"quoted\"\n\t\x01 bad:\ufffd ok: 한국어" || len(m.Metrics) != 1 {
		t.Fatalf("%+v", m)
	}
	r.Error = &RecordError{Type: ErrTypeInvalidResult, Message: "m"}
	if strings.Contains(string(r.AppendJSON(nil)), `"code"`) {
		t.Fatal("an absent code was written")
	}
}

func TestWriterIsAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile_export.jsonl")
	w, err := NewWriter[*Record](path, 4)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		w.Write(sampleRecord())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("the final name exists before Close")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if n := bytes.Count(data, []byte("\n")); n != 10 || w.Written() != 10 {
		t.Fatalf("%d lines, %d written", n, w.Written())
	}
	if err := WriteFileAtomic(filepath.Join(t.TempDir(), "no", "dir"), []byte("x")); err == nil {
		t.Fatal("writing into a missing folder succeeded")
	}
}

// TestAppendJSONAgentFields: model, tool_round, stream: false and structured_valid are written only
// where they apply; the tool-call metrics carry their units.
func TestAppendJSONAgentFields(t *testing.T) {
	plain := string(sampleRecord().AppendJSON(nil))
	for _, absent := range []string{`"model"`, `"tool_round"`, `"stream"`, `"structured_valid"`, `tool_call`} {
		if strings.Contains(plain, absent) {
			t.Errorf("%s written on a plain record: %s", absent, plain)
		}
	}
	r := sampleRecord()
	r.Model, r.ToolRound, r.NotStreamed, r.StructuredValid = "m2", Some(0), true, Some(true)
	r.ToolCalls, r.ToolCallsInvalid, r.TTFToolCall = Some(2), Some(0), Some(12.5)
	s := string(r.AppendJSON(nil))
	for _, want := range []string{`"model":"m2"`, `"tool_round":0`, `"stream":false`, `"structured_valid":true`,
		`"tool_call_count":{"value":2,"unit":"calls"}`, `"tool_call_invalid_arguments":{"value":0,"unit":"calls"}`,
		`"time_to_first_tool_call":{"value":12.5,"unit":"ms"}`} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %s: %s", want, s)
		}
	}
	if strings.Index(s, `"tool_round"`) > strings.Index(s, `"metrics"`) {
		t.Errorf("tool_round is metadata: %s", s)
	}
}
