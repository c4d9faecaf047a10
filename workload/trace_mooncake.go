package workload

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Bounds on what a trace row may say. A prompt past maxTraceTokens is not a length any server
// takes, and its text alone would be tens of MB; times past maxTraceMs (about 30,000 years) are not
// times at all, and would overflow when turned into durations.
const (
	maxTraceTokens = 10_000_000
	maxTraceMs     = 1e15
	maxTraceLine   = 64 << 20 // one JSONL line: a Mooncake row with a million hash ids fits
)

// mooncakeLine is one row of a Mooncake / FAST'25 trace. NaN marks a key the line did not give
// (JSON has no NaN), so a missing key is told apart from a 0 without a pointer per field.
type mooncakeLine struct {
	Timestamp    float64 `json:"timestamp"`
	InputLength  float64 `json:"input_length"`
	OutputLength float64 `json:"output_length"`
	HashIDs      []int64 `json:"hash_ids"`
}

const mooncakeAccepted = `{"timestamp": ms, "input_length": tokens, "output_length": tokens, "hash_ids": [ids]}`

// readMooncake reads a Mooncake JSONL trace: timestamps in ms from the trace's start, hash ids of
// block_tokens-token blocks (missing or empty: the request's text is its own).
func readMooncake(tf *traceFile, in *bufio.Reader) error {
	var l mooncakeLine
	return eachJSONLine(tf, in, func(line int, b []byte) error {
		l = mooncakeLine{Timestamp: math.NaN(), InputLength: math.NaN(), OutputLength: math.NaN(), HashIDs: l.HashIDs[:0]}
		if err := json.Unmarshal(b, &l); err != nil {
			return jsonLineError(tf.path, line, err, mooncakeAccepted)
		}
		return tf.addRow(traceRow{line: line}, l.Timestamp, 1, "a number of ms from the trace's start", l.InputLength, l.OutputLength, l.HashIDs)
	})
}

// addRow checks a JSONL row's time (in units of unitMs milliseconds) and lengths, and keeps it with
// its hash ids.
func (tf *traceFile) addRow(r traceRow, ts, unitMs float64, what string, in, out float64, ids []int64) error {
	var err error
	if r.ms, err = traceTime(tf.path, r.line, "timestamp", ts, unitMs, what); err != nil {
		return err
	}
	if r.in, err = traceTokens(tf.path, r.line, "input_length", in); err != nil {
		return err
	}
	if r.out, err = traceTokens(tf.path, r.line, "output_length", out); err != nil {
		return err
	}
	r.idsAt, r.idsN = len(tf.ids), len(ids)
	tf.ids = append(tf.ids, ids...)
	tf.rows = append(tf.rows, r)
	return nil
}

// eachJSONLine calls fn with every non-blank line and its 1-based number, and counts the lines.
func eachJSONLine(tf *traceFile, in *bufio.Reader, fn func(line int, b []byte) error) error {
	_, err := EachJSONLine(tf.path, in, maxTraceLine, func(line int, b []byte) error {
		tf.lines++
		return fn(line, b)
	})
	return err
}

// traceKeyAccepted says, per key, what a JSONL trace row may hold there.
var traceKeyAccepted = map[string]string{
	"timestamp":      "a number",
	"input_length":   "a whole number of tokens ≥ 0",
	"output_length":  "a whole number of tokens ≥ 0",
	"hash_ids":       "a list of whole numbers",
	"chat_id":        "a whole number",
	"parent_chat_id": "a whole number (-1 on a first turn)",
	"turn":           "a whole number",
	"type":           "text",
}

// jsonLineError names the line and, for a value of the wrong type, its key and what it accepts.
func jsonLineError(path string, line int, err error, accepted string) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		key, _, _ := strings.Cut(te.Field, ".")
		what := traceKeyAccepted[key]
		if what == "" {
			what = accepted
		}
		return fmt.Errorf("%s line %d: key %q: found %s; accepted: %s", path, line, key, te.Value, what)
	}
	return fmt.Errorf("%s line %d: not a JSON object (%v); accepted: %s", path, line, err, accepted)
}

// traceTokens checks a length: given, whole, ≥ 0 and within maxTraceTokens.
func traceTokens(path string, line int, key string, v float64) (int, error) {
	switch {
	case math.IsNaN(v):
		return 0, fmt.Errorf("%s line %d: key %q is missing or null; accepted: %s", path, line, key, traceKeyAccepted[key])
	case v < 0 || v != math.Trunc(v) || v > maxTraceTokens:
		return 0, fmt.Errorf("%s line %d: key %q: found %v; accepted: a whole number of tokens from 0 to %d", path, line, key, v, maxTraceTokens)
	}
	return int(v), nil
}

// traceTime checks a time given in units of unitMs ms and returns it in ms.
func traceTime(path string, line int, key string, v, unitMs float64, what string) (float64, error) {
	ms := v * unitMs
	switch {
	case math.IsNaN(v):
		return 0, fmt.Errorf("%s line %d: key %q is missing or null; accepted: %s", path, line, key, what)
	case math.Abs(ms) > maxTraceMs:
		return 0, fmt.Errorf("%s line %d: key %q: found %v; accepted: %s (at most %g ms)", path, line, key, v, what, maxTraceMs)
	}
	return ms, nil
}
