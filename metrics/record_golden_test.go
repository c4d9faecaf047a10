package metrics

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// goldenRecords covers every field of a record, each present and absent: a full success, an error
// with a code, a cancelled one, a transport error without a code, and a bare minimum.
func goldenRecords() []*Record {
	full := sampleRecord()
	full.TTFO, full.InterTokenLatency, full.ThroughputPerUser = Some(210.5), Some(24.1), Some(41.49377593360996)
	full.OutputTokenCount, full.ReasoningTokenCount = Some(40), Some(9)
	full.UsagePromptTokens, full.UsageCompletionTokens, full.UsageTotalTokens, full.UsageCachedTokens = Some(560), Some(49), Some(609), Some(512)
	full.Retried, full.OutputChars = true, Some(187)
	full.InterChunkLatency = []float64{24.557095, 1e-7, 3e21, 0, 12.5}

	withCode := sampleRecord()
	withCode.TTFT, withCode.TTST, withCode.RequestLatency, withCode.InterChunkLatency = Opt[float64]{}, Opt[float64]{}, Opt[float64]{}, nil
	withCode.OutputSequenceLength, withCode.ErrorISL = Opt[int]{}, Some(562)
	withCode.Error = &RecordError{Code: Some(429), Type: "Too Many Requests", Message: `{"error":"slow down"}` + "\n"}

	cancelled := sampleRecord()
	cancelled.WasCancelled, cancelled.CancellationTimeNs = true, Some(int64(1795964935000000000))
	cancelled.Error = &RecordError{Code: Some(CodeCancelled), Type: ErrTypeCancelled, Message: "drain timeout \x01 \xff 한국어"}

	transport := sampleRecord()
	transport.RequestAckNs, transport.Persona, transport.IntendedStartNs = Opt[int64]{}, Opt[int]{}, Opt[int64]{}
	transport.Error = &RecordError{Type: ErrTypeTransport, Message: "stream cut after 3 chunks"}

	bare := &Record{RequestStartNs: 1}
	return []*Record{full, withCode, cancelled, transport, bare}
}

// TestAppendJSONGolden: the writer's bytes, line for line, against testdata/records_golden.jsonl
// (regenerate with -update and read the diff); and the reader gives every field back.
func TestAppendJSONGolden(t *testing.T) {
	var got []byte
	for _, r := range goldenRecords() {
		got = append(r.AppendJSON(got), '\n')
	}
	path := filepath.Join("testdata", "records_golden.jsonl")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := range min(len(gl), len(wl)) {
			if !bytes.Equal(gl[i], wl[i]) {
				t.Fatalf("line %d:\n got %s\nwant %s", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%d lines, want %d", len(gl), len(wl))
	}
	var back []*Record
	if err := ReadRecords(bytes.NewReader(got), func(r *Record) error { back = append(back, r); return nil }); err != nil {
		t.Fatal(err)
	}
	wantRecs := goldenRecords()
	wantRecs[2].Error.Message = "drain timeout \x01 \ufffd 한국어" // an invalid byte is written as U+FFFD
	if diff := cmp.Diff(wantRecs, back); diff != "" {
		t.Errorf("read back (-wrote +read):\n%s", diff)
	}
	buf, full := make([]byte, 0, 4096), goldenRecords()[0]
	if n := testing.AllocsPerRun(100, func() { buf = full.AppendJSON(buf[:0]) }); n > 0 {
		t.Errorf("AppendJSON allocates %.0f times per record (the writer goroutine runs it per request)", n)
	}
}
