package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// TestReportRecordsWithoutLimits: `plload report --records FILE` judges only the limits it is given
// and prices only with a price: without the flags the SLO and the cost are N/A, never FAIL (against
// a limit of 0) nor $0.000 (as if the GPUs were free).
func TestReportRecordsWithoutLimits(t *testing.T) {
	const file = "metrics/testdata/aiperf_profile_export.jsonl"
	cases := []struct {
		name     string
		flags    []string
		want     []string
		not      []string
		exitCode int
	}{
		{"no flags", nil, []string{"**Headline**: no SLO was set", "| 01 |", "N/A (not set)", "N/A (no price)"}, []string{"FAIL", "PASS", "$0.0"}, 0},
		{"SLO without price", []string{"--ttft-p95", "100ms", "--itl-p95", "30ms"},
			[]string{"**Headline**: stage 01: out tok/s", "no GPU price was given", "N/A (no price)", "PASS"}, []string{"$0.0", "not set"}, 0},
		{"price without SLO", []string{"--gpu-hourly-usd", "2"}, []string{"N/A (not set)", "$"}, []string{"FAIL", "no price"}, 0},
		{"error rate 0 is a limit", []string{"--error-rate-max", "0", "--gpu-hourly-usd", "0"}, []string{"$0.0"}, []string{"not set", "no price"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := plload(t, append([]string{"report", "--records", file}, tc.flags...)...)
			if code != tc.exitCode {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("output has %q:\n%s", n, out)
				}
			}
		})
	}
}

// TestRunOutputsMatchSchema: a real run's report.json and stage.json (the in-process mock) validate
// against resultfiles/schema, and its report.html is rendered HTML with the sections report.md has.
func TestRunOutputsMatchSchema(t *testing.T) {
	t.Setenv("PLLOAD_TINY_KEY", "k")
	t.Setenv("PLLOAD_TINY_SECRET", "s")
	out := t.TempDir()
	if code, stdout, stderr := plload(t, "run", "cli/testdata/tiny.yaml", "--out", out); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "tiny-*"))
	if len(dirs) != 1 {
		t.Fatalf("results dirs: %v", dirs)
	}
	checkRunMatchesSchema(t, dirs[0])
	page, err := os.ReadFile(filepath.Join(dirs[0], "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h2>Injector health</h2>", "<h2>Method</h2>", "<h2>Configuration</h2>", "<th>$/1M out</th>", "<li>Tool: "} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// checkRunMatchesSchema validates a results directory's report.json and stage_01/stage.json against
// the committed schemas. The schemas are read from resultfiles/schema, relative to the repository root.
func checkRunMatchesSchema(t *testing.T, dir string) {
	t.Helper()
	const base = "https://github.com/plload/plload/resultfiles/schema/"
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for _, name := range []string{"report.schema.json", "stage.schema.json"} {
		data, err := os.ReadFile(filepath.Join("resultfiles", "schema", name))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(base+name, doc); err != nil {
			t.Fatal(err)
		}
	}
	for file, schema := range map[string]string{"report.json": "report.schema.json", "stage_01/stage.json": "stage.schema.json"} {
		sch, err := c.Compile(base + schema)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(doc); err != nil {
			t.Errorf("%s does not match resultfiles/schema/%s: %v", file, schema, err)
		}
	}
}

// TestReportRecordsJSONNamesLayout: `plload report --records FILE --json` reads each AIPerf record
// layout, says which it read, and prints stage.json's summary of it.
func TestReportRecordsJSONNamesLayout(t *testing.T) {
	const ok = `"ttft": {"value": 40.0, "unit": "ms"}, "request_latency": {"value": 100.0, "unit": "ms"}, "output_sequence_length": {"value": 5, "unit": "tokens"}`
	cases := []struct{ layout, lines string }{
		{"early", `{"metadata": {"timestamp_ns": 1760000000000000000, "credit_phase": "profiling"}, "metrics": {` + ok +
			`, "max_response_timestamp": {"value": 1760000000100000000, "unit": "ns"}}, "error": null}` + "\n" +
			`{"metadata": {"timestamp_ns": 1760000000000000000, "credit_phase": "profiling"}, "metrics": {"error_request_count": {"value": 1}}, "error": {"code": 499, "type": "RequestCancellationError", "message": "x"}}`},
		{"0.3", `{"metadata": {"request_start_ns": 1760000000000000000, "request_end_ns": 1760000000100000000, "benchmark_phase": "profiling", "was_cancelled": false, "cancellation_time_ns": null}, ` +
			`"metrics": {"time_to_first_token": {"value": 40.0, "unit": "ms"}, "request_latency": {"value": 100.0, "unit": "ms"}, "output_sequence_length": {"value": 5.0, "unit": "tokens"}}, "error": null}`},
		{"current", `{"metadata":{"request_start_ns":1760000000000000000,"request_end_ns":1760000000100000000,"benchmark_phase":"profiling","was_cancelled":false},` +
			`"metrics":{"time_to_first_token":{"value":40,"unit":"ms"},"request_latency":{"value":100,"unit":"ms"},"output_sequence_length":{"value":5,"unit":"tokens"}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.layout, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "profile_export.jsonl")
			if err := os.WriteFile(file, []byte(tc.lines+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := plload(t, "report", "--records", file, "--json")
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			var got struct {
				Layout   string `json:"layout"`
				Requests struct {
					Succeeded int `json:"succeeded"`
				} `json:"requests"`
				TTFT struct {
					Mean float64 `json:"mean"`
				} `json:"ttft_ms"`
				Throughput struct {
					OutTokPerSec float64 `json:"out_tok_per_sec"`
				} `json:"throughput"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			// One request of 5 tokens in a window of its 100 ms: 50 tokens per second.
			if got.Layout != tc.layout || got.Requests.Succeeded != 1 || got.TTFT.Mean != 40 || math.Abs(got.Throughput.OutTokPerSec-50) > 1e-4 {
				t.Errorf("got %+v, want layout %s, 1 success, TTFT 40 ms, 50 out tok/s", got, tc.layout)
			}
		})
	}
}

// TestReportRecordsRoundTrip: `plload report --records` on plload's own records, with the run's
// scenario, gives exactly the summary stage.json has (the same code computes both), in the current
// layout; only the engine's warnings, which no record carries, are stage.json's alone.
func TestReportRecordsRoundTrip(t *testing.T) {
	t.Setenv("PLLOAD_TINY_KEY", "k")
	t.Setenv("PLLOAD_TINY_SECRET", "s")
	out := t.TempDir()
	if code, stdout, stderr := plload(t, "run", "cli/testdata/tiny.yaml", "--out", out, "--quiet"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	dir := onlyRun(t, out)
	data, err := os.ReadFile(filepath.Join(dir, "stage_01", "stage.json"))
	if err != nil {
		t.Fatal(err)
	}
	var stage struct {
		Summary map[string]any `json:"summary"`
	}
	if err := json.Unmarshal(data, &stage); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := plload(t, "report", "--records", filepath.Join(dir, "stage_01", "profile_export.jsonl"),
		"--scenario", "cli/testdata/tiny.yaml", "--stage", "1", "--json")
	if code != 0 {
		t.Fatalf("report --records: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if got["layout"] != "current" {
		t.Errorf("layout %v, want current", got["layout"])
	}
	delete(got, "layout")
	// The engine's own warnings (dataset reuse, injector load) are not in the records; every warning
	// from the records is.
	for _, w := range got["warnings"].([]any) {
		if !strings.Contains(fmt.Sprint(stage.Summary["warnings"]), w.(string)) {
			t.Errorf("report --records warns %q, stage.json does not", w)
		}
	}
	delete(got, "warnings")
	delete(stage.Summary, "warnings")
	if diff := cmp.Diff(stage.Summary, got); diff != "" {
		t.Errorf("report --records --json vs stage.json's summary (-stage.json +report):\n%s", diff)
	}
	// The AIPerf summary plload wrote beside the records, read back by plload's reader of AIPerf's
	// summaries, agrees with the records.
	summary, err := metrics.ReadAIPerfSummary(filepath.Join(dir, "stage_01", "profile_export_aiperf.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := resultfiles.ReadStage(filepath.Join(dir, "stage_01", "stage.json"))
	if err != nil {
		t.Fatal(err)
	}
	if d := summary.Disagreements(st.Summary); len(d) > 0 || summary.Layout != metrics.SummaryLayoutCurrent {
		t.Errorf("plload's profile_export_aiperf.json (%s layout) disagrees with its stage.json: %q", summary.Layout, d)
	}
}

// TestReportComparesAIPerfDir: `plload report AIPERF_DIR PLLOAD_DIR` reads an AIPerf artifact
// directory (early-layout records, with or without AIPerf's summary in either layout) as a run beside
// a plload run, says which layouts it read, and warns when AIPerf's summary disagrees with plload's
// recomputation from the records.
func TestReportComparesAIPerfDir(t *testing.T) {
	t.Setenv("PLLOAD_TINY_KEY", "k")
	t.Setenv("PLLOAD_TINY_SECRET", "s")
	out := t.TempDir()
	if code, stdout, stderr := plload(t, "run", "cli/testdata/tiny.yaml", "--out", out, "--quiet"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	plloadRun := onlyRun(t, out)
	// Two successes, S → S+100 ms (TTFT 40, 5 tokens) and S+50 ms → S+200 ms (TTFT 60, 3 tokens), and
	// a request cancelled before them: AIPerf's window is 0.2 s, so 10 req/s and 40 output tok/s.
	const records = `{"metadata": {"timestamp_ns": 1760000000000000000, "credit_phase": "profiling"}, "metrics": {"ttft": {"value": 40.0, "unit": "ms"}, "ttst": {"value": 20.0, "unit": "ms"}, "request_latency": {"value": 100.0, "unit": "ms"}, "inter_chunk_latency": {"value": [20.0, 20.0, 20.0], "unit": "ms"}, "output_sequence_length": {"value": 5, "unit": "tokens"}, "max_response_timestamp": {"value": 1760000000100000000, "unit": "ns"}}, "error": null}
{"metadata": {"timestamp_ns": 1759999999990000000, "credit_phase": "profiling"}, "metrics": {"error_request_count": {"value": 1, "unit": "requests"}}, "error": {"code": 499, "type": "RequestCancellationError", "message": "cancelled"}}
{"metadata": {"timestamp_ns": 1760000000050000000, "credit_phase": "profiling"}, "metrics": {"ttft": {"value": 60.0, "unit": "ms"}, "ttst": {"value": 45.0, "unit": "ms"}, "request_latency": {"value": 150.0, "unit": "ms"}, "inter_chunk_latency": {"value": [45.0, 45.0], "unit": "ms"}, "output_sequence_length": {"value": 3, "unit": "tokens"}, "max_response_timestamp": {"value": 1760000000200000000, "unit": "ns"}}, "error": null}
`
	const agrees = `{"request_throughput": {"unit": "requests/sec", "avg": 10.0}, "output_token_throughput": {"unit": "tokens/sec", "avg": 40.0}, ` +
		`"time_to_first_token": {"unit": "ms", "avg": 50.0, "p50": 50.0, "std": 10.0}, "request_count": {"unit": "requests", "avg": 2.0}, ` +
		`"input_config": {"loadgen": {"concurrency": 4}}, "was_cancelled": false, "error_summary": [], "start_time": "2025-10-09T10:00:00"}`
	const disagrees = `{"records": {"ttft": {"tag": "ttft", "unit": "ms", "header": "Time to First Token", "avg": 55.0, "p50": 50.0, "p5": null, "count": 2}}, "input_config": {}}`
	cases := []struct {
		name, summary string
		want, not     []string
	}{
		{"records only", "", []string{"aiperf-run: AIPerf run: profile_export.jsonl in the early layout\n"}, []string{"disagrees"}},
		{"summary agrees", agrees, []string{"profile_export_aiperf.json in the current layout", "| c=4 |"}, []string{"disagrees"}},
		{"summary disagrees", disagrees, []string{"profile_export_aiperf.json in the records layout",
			"warning: aiperf-run: AIPerf's profile_export_aiperf.json disagrees with plload's recomputation from profile_export.jsonl (by more than 1e-06 relative) in 1 number: time_to_first_token mean: AIPerf's summary 55 ms, plload's from the records 50"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "aiperf-run")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "profile_export.jsonl"), []byte(records), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.summary != "" {
				if err := os.WriteFile(filepath.Join(dir, "profile_export_aiperf.json"), []byte(tc.summary), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, stdout, stderr := plload(t, "report", dir, plloadRun)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			want := append([]string{"aiperf-run: **Headline**", filepath.Base(plloadRun) + ": **Headline**", "warning: workload differs: stage 01 of aiperf-run",
				"| 10.00 |", "| 40.0 |"}, tc.want...)
			for _, w := range want {
				if !strings.Contains(stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, stdout)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(stdout, n) {
					t.Errorf("output has %q:\n%s", n, stdout)
				}
			}
		})
	}
}

// TestReportAIPerfBrokenInputs: broken AIPerf files exit 2 with the file, the line and what is
// accepted (never a panic, never a stage of nothing); a profile_export_aiperf.json that is not
// AIPerf's summary is a warning beside the run read from its records, not "the current layout".
func TestReportAIPerfBrokenInputs(t *testing.T) {
	const record = `{"metadata": {"timestamp_ns": 1760000000000000000, "credit_phase": "profiling"}, "metrics": {"ttft": {"value": 40.0, "unit": "ms"}, "ttst": {"value": 20.0, "unit": "ms"}, "request_latency": {"value": 100.0, "unit": "ms"}, "inter_chunk_latency": {"value": [20.0, 20.0, 20.0], "unit": "ms"}, "output_sequence_length": {"value": 5, "unit": "tokens"}, "max_response_timestamp": {"value": 1760000000100000000, "unit": "ns"}}, "error": null}`
	cases := []struct {
		name             string
		records, summary string // "-": no such file
		recordsFlag      bool   // --records FILE instead of report DIR
		code             int
		want             []string
	}{
		{"empty records file", "", "-", true, 2, []string{"profile_export.jsonl: no records (the file is empty)", "one JSON record per line"}},
		{"garbage line", record + "\nthis is garbage\n", "-", true, 2, []string{"profile_export.jsonl: line 2: not a JSON record"}},
		{"truncated", record + "\n" + record[:120], "-", true, 2, []string{"profile_export.jsonl: line 2: not a JSON record"}},
		{"a summary given as records", "{\n  \"request_count\": {\"unit\": \"requests\", \"avg\": 1}\n}\n", "-", true, 2,
			[]string{"is one JSON document, not a records file", "plload report DIR"}},
		{"directory of an empty records file", "", "-", false, 2, []string{"profile_export.jsonl: no records"}},
		{"directory with only the summary", "-", `{"request_count": {"unit": "requests", "avg": 1}}`, false, 2,
			[]string{"not a plload results directory (an AIPerf artifact directory needs its profile_export.jsonl)"}},
		{"a stage directory of a plload run", record + "\n", "-", false, 2,
			[]string{"is one stage of a plload run (it has stage.json): give the run's directory, "}},
		{"summary not AIPerf's", record + "\n", `{"foo": 1, "bar": [1, 2]}`, false, 0,
			[]string{"aiperf-run: AIPerf run: profile_export.jsonl in the early layout\n",
				"warning: aiperf-run: profile_export_aiperf.json not read: ", "not AIPerf's summary"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "aiperf-run")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			files := map[string]string{"profile_export.jsonl": tc.records, "profile_export_aiperf.json": tc.summary}
			if strings.HasPrefix(tc.name, "a stage directory") { // as plload writes one: stage.json beside the AIPerf files
				files["stage.json"] = `{"schema_version": 1}`
			}
			for name, text := range files {
				if text != "-" {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			args := []string{"report", dir}
			if tc.recordsFlag {
				args = []string{"report", "--records", filepath.Join(dir, "profile_export.jsonl"), "--json"}
			}
			code, stdout, stderr := plload(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout+stderr, w) {
					t.Errorf("output lacks %q:\n%s\n%s", w, stdout, stderr)
				}
			}
			if strings.Contains(stdout+stderr, "in the current layout") {
				t.Errorf("a summary that is not AIPerf's is named a layout:\n%s", stdout)
			}
		})
	}
	// A path that is not there, or a file, is not "a directory without stage.json".
	missing := filepath.Join(t.TempDir(), "no-such-run")
	for p, what := range map[string]string{missing: "no such directory", "cli/report_cli_test.go": "a file, not a directory"} {
		code, _, stderr := plload(t, "report", p)
		if want := p + ": " + what + " (no stage_NN/stage.json to read): plload report takes plload results directories and AIPerf artifact directories"; code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("report %s: exit %d, %q; want 2 and %q", p, code, stderr, want)
		}
	}
}
