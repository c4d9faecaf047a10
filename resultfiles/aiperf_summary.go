package resultfiles

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// AIPerf's summary files, written beside stage.json so dashboards and scripts that read AIPerf's
// output read plload's (docs/interop.md, "profile_export_aiperf.json": the current, GenAI-Perf
// compatible layout).
const (
	AIPerfSummaryJSON = "profile_export_aiperf.json"
	AIPerfSummaryCSV  = "profile_export_aiperf.csv"
)

// AIPerfStatKeys are the statistics of a metric that has a distribution, in the order of AIPerf's
// CSV columns (its STAT_KEYS).
var AIPerfStatKeys = []string{"avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std"}

// aiperfMetric is one metric of the summary. Every number is read from the stage's summary, so the
// file can never disagree with stage.json; Dist is nil for a single-value metric (unit and avg only).
type aiperfMetric struct {
	Tag, Header, Unit string
	Dist              *metrics.Dist
	Value             float64
}

// stat is the statistic by AIPerf's key (avg is plload's mean).
func (m aiperfMetric) stat(key string) float64 {
	if key == "avg" {
		key = "mean"
	}
	v, _ := m.Dist.Stat(key)
	return v
}

// MarshalJSON writes {unit, avg, p1 … p99, min, max, std} in AIPerf's key order, or {unit, avg}.
func (m aiperfMetric) MarshalJSON() ([]byte, error) {
	if m.Dist == nil {
		return json.Marshal(ordered{{"unit", m.Unit}, {"avg", m.Value}})
	}
	o := ordered{{"unit", m.Unit}}
	for _, k := range []string{"avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std"} {
		o = append(o, kv{k, m.stat(k)})
	}
	return json.Marshal(o)
}

// aiperfMetrics lists the stage's metrics as AIPerf names them. A distribution with no values is
// left out, as AIPerf leaves out a metric it could not compute.
//
// Which requests each counts is plload's (stage.json's): latencies and lengths over the successful
// requests that started in the window; request_count over the successful requests that ended in it,
// so that request_throughput = request_count ÷ benchmark_duration holds as in AIPerf;
// error_request_count over the errors and cancellations that started in it.
func aiperfMetrics(s *metrics.StageSummary) []aiperfMetric {
	chunks := &s.ITL // the same as the per-token ITL unless some chunk carried several tokens
	if s.InterChunk != nil {
		chunks = s.InterChunk
	}
	dists := []aiperfMetric{
		{"time_to_first_token", "Time to First Token", "ms", &s.TTFT, 0},
		{"time_to_second_token", "Time to Second Token", "ms", &s.TTST, 0},
		{"time_to_first_output_token", "Time to First Output Token", "ms", &s.TTFO, 0},
		{"request_latency", "Request Latency", "ms", &s.E2E, 0},
		// AIPerf's inter_token_latency is (latency − TTFT) ÷ (OSL − 1) per request: plload's TPOT.
		{"inter_token_latency", "Inter Token Latency", "ms", &s.TPOT, 0},
		{"inter_chunk_latency", "Inter Chunk Latency", "ms", chunks, 0},
		{"output_sequence_length", "Output Sequence Length", "tokens", &s.OSL, 0},
		{"input_sequence_length", "Input Sequence Length", "tokens", &s.ISL, 0},
		{"output_token_throughput_per_user", "Output Token Throughput Per User", "tokens/sec/user", &s.PerUser, 0},
	}
	var out []aiperfMetric
	for _, m := range dists {
		if m.Dist.Known() {
			out = append(out, m)
		}
	}
	t := s.Throughput
	return append(out,
		aiperfMetric{"request_throughput", "Request Throughput", "requests/sec", nil, t.ReqPerSec},
		aiperfMetric{"output_token_throughput", "Output Token Throughput", "tokens/sec", nil, t.OutTokPerSec},
		aiperfMetric{"request_count", "Request Count", "requests", nil, float64(t.Requests)},
		aiperfMetric{"error_request_count", "Error Request Count", "requests", nil, float64(s.Requests.Errors + s.Requests.Cancelled)},
		aiperfMetric{"benchmark_duration", "Benchmark Duration", "sec", nil, s.Window.Seconds},
	)
}

// AIPerfSummary is the stage's profile_export_aiperf.json, as JSON.
func (r *StageReport) AIPerfSummary() ([]byte, error) { return r.aiperfSummaryWith(nil) }

// aiperfSummaryWith is AIPerfSummary with AIPerf's telemetry_data section where the stage read its
// GPUs (nil: none).
func (r *StageReport) aiperfSummaryWith(telemetry *metrics.AIPerfTelemetryData) ([]byte, error) {
	s := r.Summary
	var o ordered
	for _, m := range aiperfMetrics(s) {
		o = append(o, kv{m.Tag, m})
	}
	o = append(o,
		kv{"input_config", r.aiperfInputConfig()},
		kv{"was_cancelled", r.Partial},
		kv{"error_summary", aiperfErrors(s.ErrorKinds)},
		kv{"start_time", isoTime(s.Window.WNs)},
		kv{"end_time", isoTime(s.Window.EEffNs)},
	)
	if telemetry != nil {
		o = append(o, kv{"telemetry_data", telemetry})
	}
	return json.MarshalIndent(o, "", "  ")
}

// isoTime is an epoch-ns time in ISO 8601, UTC, to the microsecond (AIPerf writes microseconds).
func isoTime(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000+00:00")
}

// aiperfInputConfig is what plload ran, under AIPerf's input_config keys where AIPerf has one
// (endpoint, loadgen) and under "plload" for the rest.
func (r *StageReport) aiperfInputConfig() ordered {
	loadgen := ordered{}
	switch {
	case r.Concurrency > 0:
		loadgen = append(loadgen, kv{"concurrency", r.Concurrency})
	case r.Rate != nil && !r.Rate.IsRamp():
		loadgen = append(loadgen, kv{"request_rate", r.Rate.To})
	}
	loadgen = append(loadgen, kv{"warmup_duration", r.Warmup}, kv{"benchmark_duration", r.Duration})
	return ordered{
		{"endpoint", ordered{{"model_names", []string{r.Target.Model}}, {"custom_endpoint", workload.EndpointPath(r.Target.Endpoint)},
			{"type", r.Target.Endpoint}, {"streaming", !workload.IsRetrieval(r.Target.Endpoint)}, {"url", r.Target.BaseURL}}},
		{"loadgen", loadgen},
		{"plload", ordered{{"tool", r.Tool}, {"run", r.Run}, {"stage", r.Stage}, {"stages", r.Stages}, {"mode", r.Mode},
			{"name", r.Name}, {"dataset_sha256", r.DatasetSHA256}}},
	}
}

// aiperfErrors turns the stage's error kinds ("429 Too Many Requests", "TransportError") into
// AIPerf's error_summary, most frequent first. The summary keeps no messages, so message is "".
func aiperfErrors(kinds map[string]int) []ordered {
	out := []ordered{}
	keys := make([]string, 0, len(kinds))
	for k := range kinds {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if kinds[keys[i]] != kinds[keys[j]] {
			return kinds[keys[i]] > kinds[keys[j]]
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		var code any // null when the kind has no code
		typ := k
		if head, rest, ok := strings.Cut(k, " "); ok {
			if c, err := strconv.Atoi(head); err == nil {
				code, typ = c, rest
			}
		}
		out = append(out, ordered{{"error_details", ordered{{"code", code}, {"type", typ}, {"message", ""}}}, {"count", kinds[k]}})
	}
	return out
}

// AIPerfSummaryCSV is the stage's profile_export_aiperf.csv in AIPerf's two sections: the metrics
// with percentiles (sorted by tag), a blank line, then the single-value metrics (sorted by tag).
// Numbers have two decimals and lines end in CRLF, as AIPerf's Python csv writer writes them.
func (r *StageReport) AIPerfSummaryCSV() []byte {
	var dists, singles []aiperfMetric
	for _, m := range aiperfMetrics(r.Summary) {
		if m.Dist != nil {
			dists = append(dists, m)
		} else {
			singles = append(singles, m)
		}
	}
	byTag := func(ms []aiperfMetric) {
		sort.Slice(ms, func(i, j int) bool { return ms[i].Tag < ms[j].Tag })
	}
	byTag(dists)
	byTag(singles)
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.UseCRLF = true
	w.Write(append([]string{"Metric"}, AIPerfStatKeys...))
	for _, m := range dists {
		row := []string{m.csvName()}
		for _, k := range AIPerfStatKeys {
			row = append(row, fmt.Sprintf("%.2f", m.stat(k)))
		}
		w.Write(row)
	}
	w.Write(nil) // the blank line between the sections
	w.Write([]string{"Metric", "Value"})
	for _, m := range singles {
		w.Write([]string{m.csvName(), fmt.Sprintf("%.2f", m.Value)})
	}
	w.Flush()
	return buf.Bytes()
}

// csvName is "Header (unit)", without a unit for counts, as AIPerf names CSV rows.
func (m aiperfMetric) csvName() string {
	if u := strings.ToLower(m.Unit); u == "count" || u == "requests" {
		return m.Header
	}
	return m.Header + " (" + m.Unit + ")"
}

// writeAIPerfSummary writes both AIPerf summary files into dir (atomically).
func (r *StageReport) writeAIPerfSummary(dir string) error {
	telemetry, err := r.writeAIPerfGPU(dir)
	if err != nil {
		return err
	}
	data, err := r.aiperfSummaryWith(telemetry)
	if err != nil {
		return err
	}
	if err := metrics.WriteFileAtomic(filepath.Join(dir, AIPerfSummaryJSON), append(data, '\n')); err != nil {
		return err
	}
	return metrics.WriteFileAtomic(filepath.Join(dir, AIPerfSummaryCSV), r.AIPerfSummaryCSV())
}

// kv and ordered write a JSON object with its keys in the order given, as the tools whose files
// plload writes order theirs (encoding/json sorts a map's keys).
type kv struct {
	k string
	v any
}

type ordered []kv

func (o ordered) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.k, err)
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// writeAIPerfGPU writes the stage's GPU readings (gpu_metrics.jsonl) in AIPerf's layout,
// gpu_telemetry_export.jsonl, and returns their telemetry_data section over the window; nil, and no
// file, where the stage read no GPU. AIPerf renamed the layout's fields in its main branch; plload
// writes the released one (docs/interop.md).
func (r *StageReport) writeAIPerfGPU(dir string) (*metrics.AIPerfTelemetryData, error) {
	if r.GPU == nil || r.Summary == nil {
		return nil, nil
	}
	samples, err := metrics.ReadJSONLines[metrics.GPUSample](filepath.Join(dir, "gpu_metrics.jsonl"))
	if err != nil || len(samples) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	if err := metrics.WriteAIPerfGPUTelemetry(&b, samples, metrics.AIPerfGPULayoutPlain); err != nil {
		return nil, nil // a GPU whose index is not a number, which AIPerf's layout cannot hold: plload's own file has it
	}
	if err := metrics.WriteFileAtomic(filepath.Join(dir, metrics.AIPerfGPUTelemetryFile), b.Bytes()); err != nil {
		return nil, err
	}
	telemetry, err := metrics.SummarizeAIPerfGPU(samples, metrics.AIPerfGPUWindow{StartNs: r.Summary.Window.WNs, EndNs: r.Summary.Window.EEffNs}, metrics.AIPerfGPULayoutPlain)
	if err != nil {
		return nil, nil // the per-sample file is written; a summary AIPerf's layout cannot hold is left out
	}
	return telemetry, nil
}
