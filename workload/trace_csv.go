package workload

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// csvTrace reads a trace CSV with a header row, finding its columns by name (case and surrounding
// spaces aside), so a file with its columns in another order, or with more of them, still reads.
type csvTrace struct {
	tf     *traceFile
	r      *csv.Reader
	header []string
	col    map[string]int // wanted column name → its index
	layout string         // the accepted header, for messages
}

func newCSVTrace(tf *traceFile, in *bufio.Reader, layout string, wanted ...string) (*csvTrace, error) {
	r := csv.NewReader(in)
	r.FieldsPerRecord = -1 // the count is checked here, with a message that says which row
	r.ReuseRecord = true
	c := &csvTrace{tf: tf, r: r, col: map[string]int{}, layout: layout}
	head, err := r.Read()
	switch {
	case err == io.EOF:
		return nil, fmt.Errorf("%s: empty; accepted: a CSV with the header %s", tf.path, layout)
	case err != nil:
		return nil, c.readError(err)
	}
	c.header = slices.Clone(head)
	for i, h := range c.header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		for _, w := range wanted {
			if strings.EqualFold(h, w) {
				c.col[w] = i
			}
		}
	}
	for _, w := range wanted {
		if _, ok := c.col[w]; !ok {
			return nil, fmt.Errorf("%s line 1: the header has no column %q; accepted: a CSV with the header %s", tf.path, w, layout)
		}
	}
	return c, nil
}

// next returns the next data row (nil at the end) and its first line.
func (c *csvTrace) next() ([]string, int, error) {
	rec, err := c.r.Read()
	if err == io.EOF {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, c.readError(err)
	}
	line, _ := c.r.FieldPos(0)
	if len(rec) != len(c.header) {
		return nil, 0, fmt.Errorf("%s line %d: %d columns, the header has %d; accepted: rows of the header %s", c.tf.path, line, len(rec), len(c.header), c.layout)
	}
	c.tf.lines++
	return rec, line, nil
}

func (c *csvTrace) readError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s line %d, column %d: %v; accepted: a CSV with the header %s", c.tf.path, pe.Line, pe.Column, pe.Err, c.layout)
	}
	return fmt.Errorf("cannot read the trace: %v", err)
}

// fieldError names the row's line and the column, by number and by the header's name for it.
func (c *csvTrace) fieldError(rec []string, line int, name, accepted string) error {
	i := c.col[name]
	return fmt.Errorf("%s line %d, column %d (%s): found %q; accepted: %s", c.tf.path, line, i+1, c.header[i], rec[i], accepted)
}

// tokens reads a length column: a whole number from 0 to maxTraceTokens ("12.0" too).
func (c *csvTrace) tokens(rec []string, line int, name string) (int, error) {
	s := strings.TrimSpace(rec[c.col[name]])
	n, err := strconv.Atoi(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) {
			return 0, c.fieldError(rec, line, name, "a whole number of tokens ≥ 0")
		}
		n = int(f)
	}
	if n < 0 || n > maxTraceTokens {
		return 0, c.fieldError(rec, line, name, fmt.Sprintf("a whole number of tokens from 0 to %d", maxTraceTokens))
	}
	return n, nil
}

const azureLayout = "TIMESTAMP,ContextTokens,GeneratedTokens"

// azureTimeLayouts are the Azure LLM inference traces' timestamps: 2023 "2023-11-16 18:15:46.1178430"
// (UTC, no zone), 2024 "2024-05-10 00:00:00.001291+00:00". time.Parse takes the fractional seconds
// of any length after the seconds field without the layout naming them.
var azureTimeLayouts = []string{"2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05", "2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05"}

// readAzure reads an Azure LLM inference trace (2023 or 2024 layout).
func readAzure(tf *traceFile, in *bufio.Reader) error {
	tf.inName, tf.outName = "ContextTokens", "GeneratedTokens"
	c, err := newCSVTrace(tf, in, azureLayout, "TIMESTAMP", "ContextTokens", "GeneratedTokens")
	if err != nil {
		return err
	}
	for {
		rec, line, err := c.next()
		if err != nil || rec == nil {
			return err
		}
		r := traceRow{line: line}
		ts := strings.TrimSpace(rec[c.col["TIMESTAMP"]])
		var t time.Time
		for _, l := range azureTimeLayouts {
			if t, err = time.Parse(l, ts); err == nil {
				break
			}
		}
		if err != nil {
			return c.fieldError(rec, line, "TIMESTAMP", `a time such as "2023-11-16 18:15:46.1178430" (2023, UTC) or "2024-05-10 00:00:00.001291+00:00" (2024)`)
		}
		r.ms = float64(t.Unix())*1000 + float64(t.Nanosecond())/1e6
		if r.in, err = c.tokens(rec, line, "ContextTokens"); err != nil {
			return err
		}
		if r.out, err = c.tokens(rec, line, "GeneratedTokens"); err != nil {
			return err
		}
		tf.rows = append(tf.rows, r)
	}
}

const burstLayout = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"

// readBurstGPT reads a BurstGPT trace (timestamps in seconds from its start), keeping the rows that
// match filter's model and log_type (exact values, as the file writes them).
func readBurstGPT(tf *traceFile, in *bufio.Reader, filter map[string]string) error {
	tf.inName, tf.outName = "Request tokens", "Response tokens"
	for k := range filter {
		if k != "model" && k != "log_type" {
			return fmt.Errorf("filter key %q; accepted: model, log_type", k)
		}
	}
	c, err := newCSVTrace(tf, in, burstLayout, "Timestamp", "Model", "Request tokens", "Response tokens", "Log Type")
	if err != nil {
		return err
	}
	model, byModel := filter["model"]
	logType, byType := filter["log_type"]
	// The values seen, so a filter that keeps nothing can say what it could have kept.
	seen := map[string]map[string]bool{"model": {}, "log_type": {}}
	filtered := 0
	for {
		rec, line, err := c.next()
		if err != nil {
			return err
		}
		if rec == nil {
			break
		}
		m, lt := strings.TrimSpace(rec[c.col["Model"]]), strings.TrimSpace(rec[c.col["Log Type"]])
		for k, v := range map[string]string{"model": m, "log_type": lt} {
			if len(seen[k]) < 20 {
				seen[k][v] = true
			}
		}
		r := traceRow{line: line}
		ts := strings.TrimSpace(rec[c.col["Timestamp"]])
		sec, perr := strconv.ParseFloat(ts, 64)
		if perr != nil || math.IsNaN(sec) || math.Abs(sec*1000) > maxTraceMs {
			return c.fieldError(rec, line, "Timestamp", "a number of seconds from the trace's start")
		}
		r.ms = sec * 1000
		if r.in, err = c.tokens(rec, line, "Request tokens"); err != nil {
			return err
		}
		if r.out, err = c.tokens(rec, line, "Response tokens"); err != nil {
			return err
		}
		if byModel && m != model || byType && lt != logType {
			filtered++
			continue
		}
		tf.rows = append(tf.rows, r)
	}
	if filtered > 0 && len(tf.rows) == 0 {
		return fmt.Errorf("%s: the filter %s keeps none of its %d rows; accepted values: model %s, log_type %s",
			tf.path, filterText(filter), tf.lines, setText(seen["model"]), setText(seen["log_type"]))
	}
	if filtered > 0 {
		tf.warnings = append(tf.warnings, fmt.Sprintf("%s: the filter %s leaves out %d of its %d rows", tf.path, filterText(filter), filtered, tf.lines))
	}
	return nil
}

func filterText(filter map[string]string) string {
	var parts []string
	for _, k := range []string{"model", "log_type"} {
		if v, ok := filter[k]; ok {
			parts = append(parts, fmt.Sprintf("%s=%q", k, v))
		}
	}
	return strings.Join(parts, " ")
}

func setText(set map[string]bool) string {
	var vals []string
	for v := range set {
		vals = append(vals, strconv.Quote(v))
	}
	slices.Sort(vals)
	return strings.Join(vals, ", ")
}
