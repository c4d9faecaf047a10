package metrics

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fileRecords is a stage's worth of records spread over several of the parallel reader's 512-line
// batches: successes, errors and a cancellation, 40 sessions, starts every 7 ms from 0.3 s.
func fileRecords() []*Record {
	var recs []*Record
	for i := range 1500 {
		startS := 0.3 + float64(i)*0.007
		var r *Record
		switch {
		case i%97 == 0:
			r = failed(startS, 500, "Internal Server Error")
		case i%211 == 0:
			r = failed(startS, CodeCancelled, ErrTypeCancelled)
		default:
			r = ok(startS, 80+float64(i%13), []float64{10 + float64(i%7), 12, 9}, 4)
			r.UsageCachedTokens = Some(i % 100)
		}
		r.XCorrelationID, r.TurnIndex = fmt.Sprintf("s%02d", i%40), i/40
		recs = append(recs, r)
	}
	return recs
}

func writeFile(t *testing.T, recs []*Record, extra map[int]string) string {
	t.Helper()
	var b bytes.Buffer
	for i, r := range recs {
		if line, ok := extra[i]; ok {
			b.WriteString(line + "\n")
		}
		b.Write(r.AppendJSON(nil))
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "profile_export.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSummarizeFileMatchesInMemory: a stage read from its file on every core is the stage computed
// from the same records in memory, whatever order the batches come back in; blank lines are skipped.
func TestSummarizeFileMatchesInMemory(t *testing.T) {
	recs := fileRecords()
	path := writeFile(t, recs, map[int]string{0: "", 700: "   ", 1499: ""})
	in := input()
	got, err := SummarizeFile(path, in, false)
	if err != nil {
		t.Fatal(err)
	}
	want := summary(in, recs...)
	if got.Requests.Total != len(recs) {
		t.Fatalf("%d records read of %d", got.Requests.Total, len(recs))
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("file vs memory (-memory +file):\n%s", diff)
	}
}

// TestSummarizeFileFindsT0AndEnd: without a known t0 the first issue time is t0 (read by the cheap
// first pass, integers written as floats included); with no duration the window runs to the last
// end, inclusive.
func TestSummarizeFileFindsT0AndEnd(t *testing.T) {
	a := ok(1, 100, []float64{50}, 2) // issued at 1 s, ends at 1.15 s
	b := ok(2, 100, []float64{50}, 2) // ends at 2.15 s
	b.CreditIssuedNs = sec(1.5)       // queued half a second: still not the first issue
	path := writeFile(t, []*Record{b, a}, nil)
	// The same file with the first issue time written as a float, as AIPerf may (1.800000001e+18 is
	// exact in a float64: it is a multiple of 256).
	text, _ := os.ReadFile(path)
	floats := strings.ReplaceAll(string(text), fmt.Sprintf(`"credit_issued_ns":%d`, sec(1)), fmt.Sprintf(`"credit_issued_ns":%.9e`, float64(sec(1))))
	if floats == string(text) {
		t.Fatal("the float rewrite did not apply")
	}
	floatPath := filepath.Join(t.TempDir(), "aiperf.jsonl")
	os.WriteFile(floatPath, []byte(floats), 0o644)
	for _, p := range []string{path, floatPath} {
		s, err := SummarizeFile(p, StageInput{NeverStarted: -1}, false)
		if err != nil {
			t.Fatal(err)
		}
		if d := s.Window.T0Ns - sec(1); d != 0 {
			t.Fatalf("%s: t0 %d ns from the first issue", filepath.Base(p), d)
		}
		if p == path {
			// E = last end + 1 ns, so the request ending last ends inside the window.
			if s.Window.ENs != sec(2)+int64(150*time.Millisecond)+1 || s.Throughput.Requests != 2 {
				t.Fatalf("window %+v, %d requests in it", s.Window, s.Throughput.Requests)
			}
		}
	}
}

// TestSummarizeFileNamesTheBadLine: a bad line in a later batch stops the read with its own line
// number and the file's name; a missing file is an error too.
func TestSummarizeFileNamesTheBadLine(t *testing.T) {
	recs := fileRecords()
	path := writeFile(t, recs, map[int]string{900: `{"metadata":{"request_start_ns":"soon"}}`})
	_, err := SummarizeFile(path, input(), false)
	if err == nil || !strings.Contains(err.Error(), "line 901:") || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v, want one naming %s line 901", err, path)
	}
	if _, err := SummarizeFile(filepath.Join(t.TempDir(), "none.jsonl"), StageInput{}, false); err == nil {
		t.Fatal("a missing file summarized")
	}
}

// TestScanTimes reads the fields t0 needs from a line's bytes: integers, integers written as floats,
// and null or absent values.
func TestScanTimes(t *testing.T) {
	cases := []struct {
		line string
		want Record
		ok   bool
	}{
		{`{"metadata":{"credit_issued_ns":5,"request_start_ns":7,"request_end_ns":9,"intended_start_ns":4,"turn_index":2}}`,
			Record{CreditIssuedNs: 5, RequestStartNs: 7, RequestEndNs: Some(int64(9)), IntendedStartNs: Some(int64(4)), TurnIndex: 2}, true},
		{`{"metadata":{"request_start_ns": 1.5e3,"request_end_ns":null}}`, Record{RequestStartNs: 1500}, true},
		{`{"metadata":{"request_start_ns":null}}`, Record{}, false},
		{`{"metadata":{}}`, Record{}, false},
		{`{"metadata":{"request_start_ns":1e400}}`, Record{}, false},
	}
	for _, tc := range cases {
		got, ok := scanTimes([]byte(tc.line))
		if ok != tc.ok || cmp.Diff(tc.want, got) != "" {
			t.Errorf("%s: %v %s", tc.line, ok, cmp.Diff(tc.want, got))
		}
	}
}
