package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// aiperfSummaryOf writes AIPerf's summary statistics of layoutRequests (computed here, numpy-style),
// in the current layout or the early {"records": ...} one, with early tag names there.
func aiperfSummaryOf(t *testing.T, early bool, change func(map[string]map[string]any)) string {
	t.Helper()
	var ttft, ttst, lat, itl, gaps, osl []float64
	totalOSL, lastEnd := 0, int64(0)
	for _, q := range layoutRequests {
		ttft, ttst, lat, itl = append(ttft, q.ttftMs), append(ttst, q.gapsMs[0]), append(lat, q.latencyMs()), append(itl, q.itlMs())
		gaps, osl = append(gaps, q.gapsMs...), append(osl, float64(q.osl))
		totalOSL += q.osl
		lastEnd = max(lastEnd, q.endNs())
	}
	secs := float64(lastEnd-layoutRequests[0].startNs) / 1e9
	metric := func(unit string, v []float64) map[string]any {
		s := refStats(v)
		return map[string]any{"unit": unit, "avg": s["mean"], "p50": s["p50"], "p90": s["p90"], "p95": s["p95"], "p99": s["p99"], "std": s["std"],
			"p1": refPercentile(v, 1), "min": refPercentile(v, 0), "max": refPercentile(v, 100)}
	}
	m := map[string]map[string]any{
		"time_to_first_token": metric("ms", ttft), "time_to_second_token": metric("ms", ttst), "request_latency": metric("ms", lat),
		"inter_token_latency": metric("ms", itl), "inter_chunk_latency": metric("ms", gaps), "output_sequence_length": metric("tokens", osl),
		"request_throughput": {"unit": "requests/sec", "avg": 4 / secs}, "output_token_throughput": {"unit": "tokens/sec", "avg": float64(totalOSL) / secs},
		"request_count": {"unit": "requests", "avg": 4.0},
	}
	if change != nil {
		change(m)
	}
	top := map[string]any{"input_config": map[string]any{"loadgen": map[string]any{"concurrency": 4}}, "was_cancelled": false,
		"error_summary": []any{map[string]any{"error_details": map[string]any{"code": 499}, "count": 1}}, "start_time": "2025-10-09T10:00:00", "goodput": nil}
	if early {
		recs := map[string]any{}
		for tag, v := range m {
			name := tag
			if e, ok := map[string]string{"time_to_first_token": "ttft", "time_to_second_token": "ttst"}[tag]; ok {
				name = e
			}
			v["tag"], v["count"], v["p5"] = name, 4, nil // the early layout writes null for a stat it lacks
			recs[name] = v
		}
		top["records"] = recs
	} else {
		for tag, v := range m {
			top[tag] = v
		}
	}
	data, err := json.Marshal(top)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "profile_export_aiperf.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAIPerfSummaryAgrees: AIPerf's summary (either layout) of the early layout test file agrees with
// plload's recomputation from its records; a number changed by more than 1e-6 is named, with both
// values, and only it.
func TestAIPerfSummaryAgrees(t *testing.T) {
	records := filepath.Join(t.TempDir(), "profile_export.jsonl")
	var lines []byte
	for i, q := range layoutRequests {
		lines = append(lines, earlyLine(i, q)+"\n"...)
	}
	lines = append(lines, earlyCancelled+"\n"...)
	if err := os.WriteFile(records, lines, 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := SummarizeRecords(records, StageInput{NeverStarted: -1}, false)
	if err != nil {
		t.Fatal(err)
	}
	off := func(m map[string]map[string]any) {
		m["time_to_second_token"]["p95"] = m["time_to_second_token"]["p95"].(float64) * (1 + 1e-5)
	}
	for _, early := range []bool{false, true} {
		a, err := ReadAIPerfSummary(aiperfSummaryOf(t, early, nil))
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{false: SummaryLayoutCurrent, true: SummaryLayoutRecords}[early]; a.Layout != want || len(a.Metrics) != 9 {
			t.Errorf("early %v: layout %q with %d metrics, want %q with 9", early, a.Layout, len(a.Metrics), want)
		}
		if d := a.Disagreements(sum.StageSummary); len(d) != 0 {
			t.Errorf("early %v: disagreements %q, want none", early, d)
		}
		a, err = ReadAIPerfSummary(aiperfSummaryOf(t, early, off))
		if err != nil {
			t.Fatal(err)
		}
		got := a.Disagreements(sum.StageSummary)
		if len(got) != 1 || !strings.HasPrefix(got[0], "time_to_second_token p95") {
			t.Errorf("early %v: disagreements %q, want time_to_second_token p95 only", early, got)
		}
		// A summary of more requests than the file holds (a cut file) says so first.
		a, err = ReadAIPerfSummary(aiperfSummaryOf(t, early, func(m map[string]map[string]any) { m["request_count"]["avg"] = 64.0 }))
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Disagreements(sum.StageSummary); len(got) != 1 || !strings.Contains(got[0], "counts 64 successful requests, the records file 4") {
			t.Errorf("early %v: disagreements %q, want the request count's", early, got)
		}
	}
	if _, err := ReadAIPerfSummary(records); err == nil {
		t.Errorf("a records file read as a summary: %v", err)
	}
}

// TestReadAIPerfSummaryRejectsOtherJSON: a profile_export_aiperf.json that is not AIPerf's summary
// (no metric in either layout: some other JSON, a stage.json, an empty object) or is cut short is an
// error naming the file and what the summary holds; it was read as "the current layout" with no
// metric to check, so the run said it had AIPerf's summary when it had none.
func TestReadAIPerfSummaryRejectsOtherJSON(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"other JSON", `{"foo": 1, "bar": [1, 2]}`, []string{"not AIPerf's summary", "time_to_first_token", `"records"`}},
		{"empty object", `{}`, []string{"not AIPerf's summary"}},
		{"a stage.json", `{"schema_version": 1, "summary": {"ttft_ms": {"n": 1, "mean": 2}}}`, []string{"not AIPerf's summary"}},
		{"records of nothing", `{"records": {}}`, []string{"not AIPerf's summary"}},
		{"cut short", `{"time_to_first_token": {"unit": "ms", "avg": 1`, []string{"not valid JSON", "cut short"}},
		{"an array", `[1, 2, 3]`, []string{"not a JSON object", "an array"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "profile_export_aiperf.json")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := ReadAIPerfSummary(path)
			if err == nil {
				t.Fatalf("read as AIPerf's summary (%+v)", s)
			}
			for _, w := range append(tc.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "Go value") {
				t.Errorf("error %q names Go types", err)
			}
		})
	}
}
