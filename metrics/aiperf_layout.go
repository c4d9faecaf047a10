package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// The layouts a records file comes in (docs/interop.md, "Reading AIPerf runs"), told apart by its keys.
const (
	// LayoutEarly is AIPerf as published in its own examples (2025): metadata.timestamp_ns and
	// credit_phase, metric tags ttft, ttst, min_request_timestamp, max_response_timestamp, and a
	// cancelled request known only by its error (499, RequestCancellationError).
	LayoutEarly = "early"
	// Layout03 is AIPerf ≤ 0.3: the current keys, with null-valued keys written and the metric
	// prefill_throughput.
	Layout03 = "0.3"
	// LayoutCurrent is AIPerf ≥ 0.4, the layout plload writes: null-valued keys left out.
	LayoutCurrent = "current"
)

// layoutProbe holds only the keys that tell the layouts apart.
type layoutProbe struct {
	Metadata map[string]json.RawMessage `json:"metadata"`
	Metrics  map[string]json.RawMessage `json:"metrics"`
	Error    json.RawMessage            `json:"error"`
}

// recordsAccepted says what a records file is, for the errors of a file that is not one.
const recordsAccepted = "a records file (profile_export.jsonl, plload's or AIPerf's) has one JSON record per line, each with metadata and metrics"

// DetectLayout names the layout of one record line: early when it has the early layout's keys,
// 0.3 when it writes null-valued keys or carries 0.3's prefill_throughput, current otherwise.
func DetectLayout(line []byte) (string, error) {
	var p layoutProbe
	if err := json.Unmarshal(line, &p); err != nil {
		return "", fmt.Errorf("not a JSON record: %s; %s", jsonProblem(line, err), recordsAccepted)
	}
	// Every record of every layout has metadata (its start time is there): a line without is some
	// other JSON (a summary, a vLLM result), and its missing start time would be a puzzling error.
	if p.Metadata == nil {
		return "", fmt.Errorf("not a record: no metadata object; %s", recordsAccepted)
	}
	_, hasStart := p.Metadata["request_start_ns"]
	_, hasTimestamp := p.Metadata["timestamp_ns"]
	_, hasCreditPhase := p.Metadata["credit_phase"]
	if !hasStart && (hasTimestamp || hasCreditPhase) {
		return LayoutEarly, nil
	}
	for _, tag := range []string{"ttft", "ttst", "min_request_timestamp", "max_response_timestamp"} {
		if _, ok := p.Metrics[tag]; ok {
			return LayoutEarly, nil
		}
	}
	if _, ok := p.Metrics["prefill_throughput"]; ok {
		return Layout03, nil
	}
	// encoding/json leaves Error nil when the key is absent and sets it to "null" when written null.
	if string(p.Error) == "null" {
		return Layout03, nil
	}
	for _, v := range p.Metadata {
		if string(v) == "null" {
			return Layout03, nil
		}
	}
	return LayoutCurrent, nil
}

// DetectFileLayout names the layout of a records file from its first record line.
func DetectFileLayout(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	layout := ""
	var bad error // the first record line's problem
	err = eachRecordLine(f, func(line int, text []byte) error {
		l, err := DetectLayout(text)
		switch {
		case err != nil && line == 1 && !json.Valid(text) && isJSONDocument(path): // a line that is JSON is a record or not, by itself
			bad = fmt.Errorf("%s is one JSON document, not a records file (%s): a summary such as stage.json, "+
				"profile_export_aiperf.json or vllm_bench_result.json? To compare a run, give its directory: plload report DIR", path, recordsAccepted)
		case err != nil:
			bad = fmt.Errorf("%s: line %d: %w", path, line, err)
		}
		layout = l
		return errStopLines // the first record decides
	})
	switch {
	case bad != nil:
		return "", bad
	case err != nil:
		return "", fmt.Errorf("%s: %w", path, err)
	case layout != "":
		return layout, nil
	}
	// Summarized, a file of no records is a stage that measured nothing, as if the server had failed.
	return "", fmt.Errorf("%s: no records (the file is empty): %s", path, recordsAccepted)
}

// jsonProblem says in words why a line is not a JSON object (encoding/json's message for a JSON
// value of another kind names Go types).
func jsonProblem(line []byte, err error) string {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) || !json.Valid(line) {
		return err.Error()
	}
	switch line[0] {
	case '[':
		return "an array, not an object"
	case '"':
		return "a string, not an object"
	}
	return "a " + string(line[:min(len(line), 16)]) + ", not an object"
}

// isJSONDocument reports whether the whole file is one JSON value (a pretty-printed summary), which
// a line-by-line reader sees as a broken first line.
func isJSONDocument(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var v any
	dec := json.NewDecoder(io.LimitReader(f, maxRecordLine))
	return dec.Decode(&v) == nil && !dec.More()
}

// applyEarly maps the early layout's keys onto rec where the current ones were absent (a record in
// the current layout has none of them, so it is left as it was).
func (raw *rawRecord) applyEarly(rec *Record) error {
	md, m := &raw.Metadata, &raw.Metrics
	if rec.BenchmarkPhase == "" && md.CreditPhase != nil {
		rec.BenchmarkPhase = *md.CreditPhase
	}
	var ttft, ttst Opt[float64]
	err := setMetrics([]metricTarget[float64]{{"ttft", &m.EarlyTTFT.Value, &ttft}, {"ttst", &m.EarlyTTST.Value, &ttst}},
		func(v float64) float64 { return v })
	if err != nil {
		return err
	}
	if !rec.TTFT.OK {
		rec.TTFT = ttft
	}
	if !rec.TTST.OK {
		rec.TTST = ttst
	}
	if end := m.MaxResponseNs.Value; end != "" && !rec.RequestEndNs.OK {
		v, err := parseInt(string(end))
		if err != nil {
			return fmt.Errorf("metrics.max_response_timestamp: %v", err)
		}
		rec.RequestEndNs = Some(v)
	}
	// The early layout has no was_cancelled: a cancelled request is known by its error alone.
	if md.WasCancelled == nil && rec.Error != nil &&
		(rec.Error.Type == ErrTypeCancelled || (rec.Error.Code.OK && rec.Error.Code.V == CodeCancelled)) {
		rec.WasCancelled = true
	}
	// output_token_count is left out when the whole answer was reasoning.
	if !rec.OutputTokenCount.OK && rec.OutputSequenceLength.OK && rec.ReasoningTokenCount.OK {
		rec.OutputTokenCount = Some(rec.OutputSequenceLength.V - rec.ReasoningTokenCount.V)
	}
	if !rec.OutputSequenceLength.OK && (rec.OutputTokenCount.OK || rec.ReasoningTokenCount.OK) {
		rec.OutputSequenceLength = Some(rec.OutputTokenCount.V + rec.ReasoningTokenCount.V)
	}
	return nil
}
