package metrics

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

// SummarizeFile computes a stage from a records file (plload's or AIPerf's). When in.T0Ns is unset,
// t0 is read from the records first (a second pass), with arrival_rate's rule when arrivalRate is set;
// a zero in.Duration means the window runs to the end of the last request. Warmup rows are kept: the
// window, not benchmark_phase, decides what counts.
func SummarizeFile(path string, in StageInput, arrivalRate bool) (*StageSummary, error) {
	if !in.T0Ns.OK || in.Duration == 0 {
		f := T0Finder{ArrivalRate: arrivalRate}
		if err := scanFile(path, &f); err != nil {
			return nil, err
		}
		if !in.T0Ns.OK {
			in.T0Ns = f.T0()
		}
		if in.Duration == 0 {
			in.Duration = time.Duration(max(0, f.maxEnd+1-in.T0Ns.V-int64(in.Warmup)))
		}
	}
	s := NewStage(in)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	add := s.Add
	if keep := in.Keep; keep != nil {
		add = func(r *Record) {
			if keep(r) {
				s.Add(r)
			}
		}
	}
	if err := readRecordsParallel(f, add); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s.Summary(), nil
}

// scanFile is the cheap first pass: t0 and the last end time, from a few fields of each line. A line
// it cannot read is left to the full pass, which names it.
func scanFile(path string, f *T0Finder) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 0, 256<<10), maxRecordLine)
	for sc.Scan() {
		if r, ok := scanTimes(sc.Bytes()); ok {
			f.Add(&r)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
