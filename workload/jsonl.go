package workload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// EachJSONLine calls fn with every non-blank line of r (trimmed) and its 1-based number, and
// returns how many lines r had. Lines longer than maxLine bytes are an error naming the file (name)
// and the line; fn's own errors come back unchanged. Datasets, traces and `plload fit` read their
// JSONL with it.
func EachJSONLine(name string, r io.Reader, maxLine int, fn func(line int, b []byte) error) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if err := fn(line, b); err != nil {
			return line, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return line, fmt.Errorf("%s line %d: longer than %d MiB; accepted: one JSON object per line", name, line+1, maxLine>>20)
		}
		return line, fmt.Errorf("%s line %d: %v", name, line+1, err)
	}
	return line, nil
}
