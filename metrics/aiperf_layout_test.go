package metrics

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// layoutRequest is one successful request of the layout tests, from which each layout's line is
// written and the expected statistics computed.
type layoutRequest struct {
	startNs   int64
	ttftMs    float64
	gapsMs    []float64
	osl       int
	reasoning int
}

func (q layoutRequest) latencyMs() float64 {
	lat := q.ttftMs
	for _, g := range q.gapsMs {
		lat += g
	}
	return lat
}

func (q layoutRequest) endNs() int64 { return q.startNs + int64(math.Round(q.latencyMs()*1e6)) }

func (q layoutRequest) itlMs() float64 { return (q.latencyMs() - q.ttftMs) / float64(q.osl-1) }

const layoutBaseNs = int64(1_760_000_000_000_000_000)

// layoutRequests: four successes (one all reasoning); a cancelled request started before all of them
// (at layoutBaseNs), so AIPerf's window (first successful start) differs from plload's (first start).
var layoutRequests = []layoutRequest{
	{layoutBaseNs + 3_000_000, 50, []float64{10, 12, 11}, 4, 2},
	{layoutBaseNs + 13_000_000, 70, []float64{20, 5}, 3, 0},
	{layoutBaseNs + 23_000_000, 40, []float64{8, 9, 10, 11}, 5, 0},
	{layoutBaseNs + 33_000_000, 90, []float64{30}, 2, 2},
}

func floats(v []float64) string {
	s := make([]string, len(v))
	for i, f := range v {
		s[i] = fmt.Sprint(f)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// earlyLine writes a request as AIPerf's early (2025) layout does (docs/interop.md's early layout).
func earlyLine(i int, q layoutRequest) string {
	out := ""
	if q.osl > q.reasoning {
		out = fmt.Sprintf(`, "output_token_count": {"value": %d, "unit": "tokens"}`, q.osl-q.reasoning)
	}
	return fmt.Sprintf(`{"metadata": {"session_num": %d, "x_request_id": "r%d", "timestamp_ns": %d, "credit_phase": "profiling", "worker_id": "worker_1"}, `+
		`"metrics": {"ttft": {"value": %v, "unit": "ms"}, "ttst": {"value": %v, "unit": "ms"}, "request_latency": {"value": %v, "unit": "ms"}, `+
		`"inter_chunk_latency": {"value": %s, "unit": "ms"}, "inter_token_latency": {"value": %v, "unit": "ms"}, "input_sequence_length": {"value": 100, "unit": "tokens"}, `+
		`"output_sequence_length": {"value": %d, "unit": "tokens"}, "reasoning_token_count": {"value": %d, "unit": "tokens"}%s, `+
		`"min_request_timestamp": {"value": %d, "unit": "ns"}, "max_response_timestamp": {"value": %d, "unit": "ns"}, "request_count": {"value": 1, "unit": "requests"}}, "error": null}`,
		i, i, q.startNs, q.ttftMs, q.gapsMs[0], q.latencyMs(), floats(q.gapsMs), q.itlMs(), q.osl, q.reasoning, out, q.startNs, q.endNs())
}

const earlyCancelled = `{"metadata": {"session_num": 4, "x_request_id": "r4", "timestamp_ns": 1760000000000000000, "credit_phase": "profiling"}, ` +
	`"metrics": {"error_request_count": {"value": 1, "unit": "requests"}}, "error": {"code": 499, "type": "RequestCancellationError", "message": "Request was cancelled"}}`

// line03 writes a request as AIPerf 0.3 does: null-valued keys written, floats for integers, the
// [DONE] (request_end_ns) 2 µs after the last token, prefill_throughput.
func line03(i int, q layoutRequest) string {
	return fmt.Sprintf(`{"metadata": {"session_num": %d, "x_request_id": "r%d", "conversation_id": null, "turn_index": 0, "request_start_ns": %d, "request_ack_ns": %d, `+
		`"request_end_ns": %d, "worker_id": "worker_1", "benchmark_phase": "profiling", "was_cancelled": false, "cancellation_time_ns": null}, `+
		`"metrics": {"time_to_first_token": {"value": %v, "unit": "ms"}, "time_to_second_token": {"value": %v, "unit": "ms"}, "request_latency": {"value": %v, "unit": "ms"}, `+
		`"inter_chunk_latency": {"value": %s, "unit": "ms"}, "inter_token_latency": {"value": %v, "unit": "ms"}, "input_sequence_length": {"value": 100.0, "unit": "tokens"}, `+
		`"output_sequence_length": {"value": %d.0, "unit": "tokens"}, "prefill_throughput": {"value": 2000.5, "unit": "tokens/sec"}}, "error": null}`,
		i, i, q.startNs, q.startNs+1000, q.endNs()+2000, q.ttftMs, q.gapsMs[0], q.latencyMs(), floats(q.gapsMs), q.itlMs(), q.osl)
}

const cancelled03 = `{"metadata": {"session_num": 4, "x_request_id": "r4", "conversation_id": null, "turn_index": 0, "request_start_ns": 1760000000000000000, "request_ack_ns": null, ` +
	`"request_end_ns": 1760000000000500000, "benchmark_phase": "profiling", "was_cancelled": true, "cancellation_time_ns": 1760000000000500000}, ` +
	`"metrics": {"error_isl": {"value": 100, "unit": "tokens"}}, "error": {"code": 499, "type": "RequestCancellationError", "message": "Request was cancelled"}}`

// currentLine writes a request in the current (≥ 0.4, plload's) layout: compact, nulls left out.
func currentLine(i int, q layoutRequest) string {
	return string((&Record{SessionNum: i, XRequestID: fmt.Sprint("r", i), RequestStartNs: q.startNs, CreditIssuedNs: q.startNs, RequestEndNs: Some(q.endNs()),
		BenchmarkPhase: PhaseProfiling, TTFT: Some(q.ttftMs), TTST: Some(q.gapsMs[0]), RequestLatency: Some(q.latencyMs()),
		InterChunkLatency: q.gapsMs, InterTokenLatency: Some(q.itlMs()), InputSequenceLength: Some(100), OutputSequenceLength: Some(q.osl)}).AppendJSON(nil))
}

func currentCancelled() string {
	return string((&Record{SessionNum: 4, RequestStartNs: layoutBaseNs, CreditIssuedNs: layoutBaseNs, RequestEndNs: Some(layoutBaseNs + 500_000),
		BenchmarkPhase: PhaseProfiling, WasCancelled: true, CancellationTimeNs: Some(layoutBaseNs + 500_000),
		Error: &RecordError{Code: Some(499), Type: ErrTypeCancelled, Message: "cancelled"}}).AppendJSON(nil))
}

// refPercentile is numpy's default (linear) percentile, written apart from Dist's code.
func refPercentile(v []float64, p float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	h := float64(len(s)-1) * p / 100
	lo := math.Floor(h)
	if int(lo)+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[int(lo)] + (h-lo)*(s[int(lo)+1]-s[int(lo)])
}

// refStats is mean, p50, p90, p95, p99 and the population std (numpy's np.std, as AIPerf computes).
func refStats(v []float64) map[string]float64 {
	mean := 0.0
	for _, x := range v {
		mean += x / float64(len(v))
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return map[string]float64{"mean": mean, "p50": refPercentile(v, 50), "p90": refPercentile(v, 90), "p95": refPercentile(v, 95),
		"p99": refPercentile(v, 99), "std": math.Sqrt(ss / float64(len(v)))}
}

func closeTo(got, want float64) bool {
	return got == want || math.Abs(got-want) <= 1e-6*math.Max(math.Abs(want), 1e-9)
}

// TestSummarizeEveryLayout: a small file of each AIPerf layout reads, names its layout, and gives
// AIPerf's own statistics (computed here from the requests, numpy-style): TTFT, TTST, latency,
// per-request ITL, pooled chunk gaps, OSL, and the request and token throughput over the window from
// the first successful start to the last response (the early layout exactly as AIPerf; 0.3's window
// ends at the last [DONE]; the current layout keeps plload's window, from the first request).
func TestSummarizeEveryLayout(t *testing.T) {
	lastEnd := int64(0)
	for _, q := range layoutRequests {
		lastEnd = max(lastEnd, q.endNs())
	}
	firstOK := layoutRequests[0].startNs
	cases := []struct {
		layout  string
		line    func(int, layoutRequest) string
		cancel  string
		seconds float64 // the expected window
	}{
		{LayoutEarly, earlyLine, earlyCancelled, float64(lastEnd-firstOK) / 1e9},
		{Layout03, line03, cancelled03, float64(lastEnd+2000-firstOK) / 1e9},
		{LayoutCurrent, currentLine, currentCancelled(), float64(lastEnd-layoutBaseNs) / 1e9},
	}
	var ttft, ttst, lat, itl, gaps, osl []float64
	totalOSL := 0
	for _, q := range layoutRequests {
		ttft, ttst, lat, itl = append(ttft, q.ttftMs), append(ttst, q.gapsMs[0]), append(lat, q.latencyMs()), append(itl, q.itlMs())
		gaps, osl = append(gaps, q.gapsMs...), append(osl, float64(q.osl))
		totalOSL += q.osl
	}
	for _, tc := range cases {
		t.Run(tc.layout, func(t *testing.T) {
			var b strings.Builder
			for i, q := range layoutRequests[:2] {
				b.WriteString(tc.line(i, q) + "\n")
			}
			b.WriteString(tc.cancel + "\n") // records come in completion order
			for i, q := range layoutRequests[2:] {
				b.WriteString(tc.line(i+2, q) + "\n")
			}
			path := filepath.Join(t.TempDir(), "profile_export.jsonl")
			if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := SummarizeRecords(path, StageInput{NeverStarted: -1}, false)
			if err != nil {
				t.Fatal(err)
			}
			if got.Layout != tc.layout {
				t.Errorf("layout %q, want %q", got.Layout, tc.layout)
			}
			if got.Requests.Succeeded != 4 || got.Requests.Cancelled != 1 || got.Requests.InWindow != 5 {
				t.Errorf("requests %+v, want 4 succeeded and 1 cancelled", got.Requests)
			}
			for name, d := range map[string]struct {
				got  Dist
				want []float64
			}{"ttft": {got.TTFT, ttft}, "ttst": {got.TTST, ttst}, "latency": {got.E2E, lat}, "itl per request": {got.ITLPerRequest, itl},
				"tpot": {got.TPOT, itl}, "pooled chunk gaps": {got.ITL, gaps}, "osl": {got.OSL, osl}} {
				for stat, want := range refStats(d.want) {
					if v, _ := d.got.Stat(stat); !closeTo(v, want) || d.got.N != len(d.want) {
						t.Errorf("%s %s = %v (n %d), want %v (n %d)", name, stat, v, d.got.N, want, len(d.want))
					}
				}
			}
			if want := 4 / tc.seconds; !closeTo(got.Throughput.ReqPerSec, want) {
				t.Errorf("request throughput %v, want %v", got.Throughput.ReqPerSec, want)
			}
			if want := float64(totalOSL) / tc.seconds; !closeTo(got.Throughput.OutTokPerSec, want) {
				t.Errorf("output token throughput %v, want %v", got.Throughput.OutTokPerSec, want)
			}
		})
	}
}

// TestEarlyLayoutMapping: each early key lands on the record field of the current layout.
func TestEarlyLayoutMapping(t *testing.T) {
	q := layoutRequests[3] // all reasoning: no output_token_count
	r, err := ParseRecord([]byte(earlyLine(3, q)))
	if err != nil {
		t.Fatal(err)
	}
	if r.RequestStartNs != q.startNs || r.RequestEndNs != Some(q.endNs()) || r.BenchmarkPhase != PhaseProfiling ||
		r.TTFT != Some(q.ttftMs) || r.TTST != Some(q.gapsMs[0]) || r.OutputTokenCount != Some(0) || r.OutputSequenceLength != Some(2) || !r.OK() {
		t.Errorf("early record read as %+v", r)
	}
	c, err := ParseRecord([]byte(earlyCancelled))
	if err != nil {
		t.Fatal(err)
	}
	if !c.WasCancelled || c.RequestStartNs != layoutBaseNs || c.RequestEndNs.OK {
		t.Errorf("early cancelled record read as %+v", c)
	}
}

// TestRecordsFileRejected: a file that holds no records, or whose first line is not a record, is an
// error that names the file, the line and what --records takes, in words a user reads (no Go types):
// an empty file summarized as a stage of nothing looked like a run that measured nothing.
func TestRecordsFileRejected(t *testing.T) {
	const accepted = "one JSON record per line"
	cases := []struct {
		name, text string
		want       []string
	}{
		{"empty", "", []string{"no records", accepted}},
		{"blank lines only", "\n  \n\n", []string{"no records", accepted}},
		{"array line", "[1, 2]\n", []string{"line 1", "not a JSON record", "an array", accepted}},
		{"garbage", "this is garbage\n", []string{"line 1", "not a JSON record", accepted}},
		{"object without metadata", `{"a": 1}` + "\n", []string{"line 1", "no metadata", accepted}},
		{"null line", "null\n", []string{"line 1", accepted}},
		{"pretty-printed summary", "{\n  \"request_count\": {\"unit\": \"requests\", \"avg\": 4}\n}\n",
			[]string{"one JSON document", "not a records file", "plload report DIR"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "profile_export.jsonl")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := SummarizeRecords(path, StageInput{NeverStarted: -1}, false)
			if err == nil {
				t.Fatalf("no error for %q", tc.text)
			}
			for _, w := range append(tc.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "metrics.") || strings.Contains(err.Error(), "Go value") {
				t.Errorf("error %q names Go types", err)
			}
		})
	}
}

// TestAIPerfWarmupPhaseLeftOut: an AIPerf file's warmup-phase records (credit_phase or
// benchmark_phase "warmup") are not in AIPerf's summary, so they are not in plload's over AIPerf's
// window either: with two warmup successes added (one before the first profiled start, one among
// them) every statistic, the throughput and the window are those of the profiled records alone, and
// the two count as warmup. They were measured: TTFT n 6, and the window widened to the first one.
func TestAIPerfWarmupPhaseLeftOut(t *testing.T) {
	warm := []layoutRequest{
		{layoutBaseNs + 1_000_000, 500, []float64{100, 100}, 3, 0},
		{layoutBaseNs + 18_000_000, 400, []float64{200}, 2, 0},
	}
	cases := []struct {
		layout string
		line   func(int, layoutRequest) string
		phase  string // the key and value that mark a profiled record
	}{
		{LayoutEarly, earlyLine, `"credit_phase": "profiling"`},
		{Layout03, line03, `"benchmark_phase": "profiling"`},
	}
	for _, tc := range cases {
		t.Run(tc.layout, func(t *testing.T) {
			var profiled, with strings.Builder
			for i, q := range layoutRequests {
				profiled.WriteString(tc.line(i, q) + "\n")
				with.WriteString(tc.line(i, q) + "\n")
			}
			for i, q := range warm {
				with.WriteString(strings.Replace(tc.line(10+i, q), tc.phase, strings.Replace(tc.phase, "profiling", "warmup", 1), 1) + "\n")
			}
			sum := func(text string) *RecordsSummary {
				path := filepath.Join(t.TempDir(), "profile_export.jsonl")
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				s, err := SummarizeRecords(path, StageInput{NeverStarted: -1}, false)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			want, got := sum(profiled.String()), sum(with.String())
			if got.Requests.Warmup != 2 || got.Requests.Succeeded != want.Requests.Succeeded {
				t.Errorf("requests %+v, want %+v with 2 warmup", got.Requests, want.Requests)
			}
			for name, d := range map[string][2]Dist{"ttft": {got.TTFT, want.TTFT}, "e2e": {got.E2E, want.E2E}, "itl": {got.ITL, want.ITL}, "osl": {got.OSL, want.OSL}} {
				if diff := cmp.Diff(d[1], d[0]); diff != "" {
					t.Errorf("%s with warmup records (-without +with):\n%s", name, diff)
				}
			}
			if diff := cmp.Diff(want.Throughput, got.Throughput); diff != "" {
				t.Errorf("throughput (-without +with):\n%s", diff)
			}
			if got.Window.Seconds != want.Window.Seconds {
				t.Errorf("window %v s, want %v s", got.Window.Seconds, want.Window.Seconds)
			}
		})
	}
}
