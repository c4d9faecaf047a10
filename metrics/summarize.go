package metrics

import (
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
		if err := eachRecord(path, func(r *Record) error { f.Add(r); return nil }); err != nil {
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
	if err := eachRecord(path, func(r *Record) error { s.Add(r); return nil }); err != nil {
		return nil, err
	}
	return s.Summary(), nil
}

func eachRecord(path string, fn func(*Record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := ReadRecords(f, fn); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
