package metrics

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
)

// readRecordsParallel parses records on every core and calls fn for each from one goroutine, in no
// particular order (a stage's numbers do not depend on it). The first bad line stops it with its
// line number.
func readRecordsParallel(r io.Reader, fn func(*Record)) error {
	type batch struct {
		first int // line number of lines[0]
		lines [][]byte
		recs  []*Record
		err   error
	}
	const batchLines = 512
	work := make(chan *batch, 8)
	done := make(chan *batch, 8)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				for i, line := range b.lines {
					if len(line) == 0 {
						continue
					}
					rec, err := ParseRecord(line)
					if err != nil {
						b.err = fmt.Errorf("line %d: %w", b.first+i, err)
						break
					}
					b.recs = append(b.recs, rec)
				}
				done <- b
			}
		}()
	}
	readErr := make(chan error, 1)
	go func() {
		defer close(work)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 256<<10), maxRecordLine)
		line := 0
		b := &batch{first: 1}
		for sc.Scan() {
			line++
			b.lines = append(b.lines, bytes.Clone(bytes.TrimSpace(sc.Bytes())))
			if len(b.lines) == batchLines {
				work <- b
				b = &batch{first: line + 1}
			}
		}
		if len(b.lines) > 0 {
			work <- b
		}
		err := sc.Err()
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("line %d: longer than %d bytes", line+1, maxRecordLine)
		}
		readErr <- err
	}()
	go func() { wg.Wait(); close(done) }()
	var first error
	for b := range done {
		if b.err != nil && first == nil {
			first = b.err
		}
		if first == nil {
			for _, rec := range b.recs {
				fn(rec)
			}
		}
	}
	if err := <-readErr; err != nil && first == nil {
		first = err
	}
	return first
}

// scanTimes reads the few metadata fields t0 needs straight from a record's bytes, without parsing
// the rest (the gaps are most of a line). A JSON string value can hold `"key":` only as `\"key\":`,
// so a match is always the real key.
func scanTimes(line []byte) (r Record, ok bool) {
	start, ok := scanNumber(line, `"request_start_ns":`)
	if !ok {
		return r, false
	}
	r.RequestStartNs = start
	r.CreditIssuedNs, _ = scanNumber(line, `"credit_issued_ns":`)
	if end, ok := scanNumber(line, `"request_end_ns":`); ok {
		r.RequestEndNs = Some(end)
	}
	if v, ok := scanNumber(line, `"intended_start_ns":`); ok {
		r.IntendedStartNs = Some(v)
	}
	turn, _ := scanNumber(line, `"turn_index":`)
	r.TurnIndex = int(turn)
	return r, true
}

func scanNumber(line []byte, key string) (int64, bool) {
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := bytes.TrimLeft(line[i+len(key):], " ")
	end := 0
	for end < len(rest) && bytes.IndexByte([]byte("+-.0123456789eE"), rest[end]) >= 0 {
		end++
	}
	if end == 0 {
		return 0, false // null
	}
	if v, err := strconv.ParseInt(string(rest[:end]), 10, 64); err == nil {
		return v, true
	}
	v, err := parseInt(string(rest[:end]))
	return v, err == nil
}
