package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
)

// The layouts of AIPerf's summary file, profile_export_aiperf.json (docs/interop.md): one top-level
// key per metric tag (current), or every metric under "records" (early).
const (
	SummaryLayoutCurrent = "current"
	SummaryLayoutRecords = "records"
)

// AIPerfStat is one metric of AIPerf's summary; a statistic AIPerf did not write (or wrote null) is
// absent.
type AIPerfStat struct {
	Unit                                             string
	Avg, Min, Max, Std                               Opt[float64]
	P1, P5, P10, P25, P50, P75, P90, P95, P99, Count Opt[float64]
}

// AIPerfSummary is AIPerf's summary of a run, read (this is a reader; report writes the file
// plload produces, with its own code). Metrics are keyed by the current tag names.
type AIPerfSummary struct {
	Layout  string
	Metrics map[string]AIPerfStat
}

// earlyTags renames the early summary's tags to the current ones.
var earlyTags = map[string]string{"ttft": "time_to_first_token", "ttst": "time_to_second_token"}

// ReadAIPerfSummary reads a profile_export_aiperf.json in either layout. Keys that are not metrics
// (input_config, error_summary, telemetry_data, times) and metrics written as null are left out.
func ReadAIPerfSummary(path string) (*AIPerfSummary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		if !json.Valid(data) {
			return nil, fmt.Errorf("%s: not valid JSON (cut short, or not a summary?): %v", path, err)
		}
		return nil, fmt.Errorf("%s: not a JSON object (AIPerf's summary is one): %s", path, jsonProblem(bytes.TrimSpace(data), err))
	}
	out := &AIPerfSummary{Layout: SummaryLayoutCurrent, Metrics: map[string]AIPerfStat{}}
	if recs, ok := top["records"]; ok {
		out.Layout = SummaryLayoutRecords
		top = nil
		if err := json.Unmarshal(recs, &top); err != nil {
			return nil, fmt.Errorf("%s: records: not an object of metrics: %v", path, err)
		}
	}
	for tag, raw := range top {
		var m struct {
			Unit                                             *string
			Avg, Min, Max, Std                               Opt[float64]
			P1, P5, P10, P25, P50, P75, P90, P95, P99, Count Opt[float64]
		}
		// A metric is an object with a unit; anything else (config, lists, strings, null) is not.
		if json.Unmarshal(raw, &m) != nil || m.Unit == nil {
			continue
		}
		if t, ok := earlyTags[tag]; ok {
			tag = t
		}
		out.Metrics[tag] = AIPerfStat{Unit: *m.Unit, Avg: m.Avg, Min: m.Min, Max: m.Max, Std: m.Std, P1: m.P1, P5: m.P5, P10: m.P10,
			P25: m.P25, P50: m.P50, P75: m.P75, P90: m.P90, P95: m.P95, P99: m.P99, Count: m.Count}
	}
	// Some other JSON under AIPerf's name has no metric: read as a summary, it would check nothing
	// and the run would say it had AIPerf's summary.
	if len(out.Metrics) == 0 {
		return nil, fmt.Errorf(`%s: not AIPerf's summary: no metric in it (AIPerf's has one key per metric tag, such as `+
			`time_to_first_token or request_throughput, each {"unit", "avg", ...}, or in older files all of them under "records")`, path)
	}
	return out, nil
}

// SummaryAgreeTolerance is the relative difference under which plload's number and AIPerf's are
// the same (float noise from summing in another order).
const SummaryAgreeTolerance = 1e-6

// Disagreements compares AIPerf's summary with plload's recomputation from the records: TTFT, time
// to second token, request latency, per-request ITL and OSL (mean, p50, p90, p95, p99, std), pooled
// inter-chunk latency percentiles, and request and output token throughput. Each line names the
// metric, the statistic and both numbers; a metric either side lacks is not compared.
func (a *AIPerfSummary) Disagreements(sum *StageSummary) []string {
	stats := []string{"mean", "p50", "p90", "p95", "p99", "std"}
	itl := sum.ITLPerRequest
	if !itl.Known() {
		itl = sum.TPOT
	}
	dists := []struct {
		tag   string
		d     Dist
		stats []string
	}{
		{"time_to_first_token", sum.TTFT, stats}, {"time_to_second_token", sum.TTST, stats}, {"request_latency", sum.E2E, stats},
		{"inter_token_latency", itl, stats}, {"output_sequence_length", sum.OSL, stats},
		{"inter_chunk_latency", sum.ITL, []string{"p50", "p90", "p95", "p99"}},
	}
	var out []string
	for _, x := range dists {
		m, ok := a.Metrics[x.tag]
		if !ok || !x.d.Known() {
			continue
		}
		for _, st := range x.stats {
			theirs := m.stat(st)
			ours, _ := x.d.Stat(st)
			if theirs.OK && !agree(ours, theirs.V) {
				out = append(out, fmt.Sprintf("%s %s: AIPerf's summary %.6g %s, plload's from the records %.6g", x.tag, st, theirs.V, m.Unit, ours))
			}
		}
	}
	for _, x := range []struct {
		tag  string
		ours float64
	}{{"request_throughput", sum.Throughput.ReqPerSec}, {"output_token_throughput", sum.Throughput.OutTokPerSec}} {
		if m, ok := a.Metrics[x.tag]; ok && m.Avg.OK && !agree(x.ours, m.Avg.V) {
			out = append(out, fmt.Sprintf("%s: AIPerf's summary %.6g %s, plload's from the records %.6g", x.tag, m.Avg.V, m.Unit, x.ours))
		}
	}
	sort.Strings(out)
	// A summary of other requests than the file's (a cut file) disagrees everywhere: say that first.
	if m, ok := a.Metrics["request_count"]; ok && m.Avg.OK && int(math.Round(m.Avg.V)) != sum.Throughput.Requests {
		out = append([]string{fmt.Sprintf("request_count: AIPerf's summary counts %.0f successful requests, the records file %d: the summary is not of these records", m.Avg.V, sum.Throughput.Requests)}, out...)
	}
	return out
}

func (m AIPerfStat) stat(name string) Opt[float64] {
	return map[string]Opt[float64]{"mean": m.Avg, "p50": m.P50, "p90": m.P90, "p95": m.P95, "p99": m.P99, "std": m.Std}[name]
}

func agree(ours, theirs float64) bool {
	d := math.Abs(ours - theirs)
	return d <= SummaryAgreeTolerance*max(math.Abs(ours), math.Abs(theirs)) || d <= 1e-12 // a std of 0 and float noise

}
