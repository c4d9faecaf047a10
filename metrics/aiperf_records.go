package metrics

import (
	"fmt"
	"math"
	"os"
	"time"
)

// RecordsSummary is a stage computed from any records file: stage.json's summary and the layout the
// file was read in.
type RecordsSummary struct {
	*StageSummary
	Layout string `json:"layout"`
}

// recordsScan is the first pass over a file: plload's t0 and AIPerf's window.
type recordsScan struct {
	t0     T0Finder
	okSeen bool
	okFrom int64 // earliest start of a successful request
	okTo   int64 // latest response of a successful request
}

func (sc *recordsScan) add(r *Record) {
	sc.t0.Add(r)
	// AIPerf's window is over profiled requests with a latency: its summary leaves warmup out.
	if !r.OK() || !r.RequestLatency.OK || r.BenchmarkPhase == PhaseWarmup {
		return
	}
	// AIPerf's last response is start + request latency (max_response_timestamp); request_end_ns,
	// where a file has it, is the [DONE] after it, and the stage counts a request as ended by that.
	end := r.RequestStartNs + int64(math.Round(r.RequestLatency.V*1e6))
	if r.RequestEndNs.OK {
		end = max(end, r.RequestEndNs.V)
	}
	if !sc.okSeen || r.RequestStartNs < sc.okFrom {
		sc.okFrom, sc.okSeen = r.RequestStartNs, true
	}
	sc.okTo = max(sc.okTo, end)
}

// SummarizeRecords computes a stage from a records file in any layout (DetectFileLayout). Without a
// window from the caller (in.T0Ns, in.Warmup and in.Duration all unset), an AIPerf file (early or
// 0.3) is measured over AIPerf's window, the first successful request's start to the last response,
// so that its numbers equal AIPerf's own summary; a file in the current layout is SummarizeFile's.
func SummarizeRecords(path string, in StageInput, arrivalRate bool) (*RecordsSummary, error) {
	layout, err := DetectFileLayout(path)
	if err != nil {
		return nil, err
	}
	if layout == LayoutCurrent { // plload's own: its cheap first pass reads t0 from a few keys
		sum, err := SummarizeFile(path, in, arrivalRate)
		if err != nil {
			return nil, err
		}
		return &RecordsSummary{StageSummary: sum, Layout: layout}, nil
	}
	// AIPerf's: its keys vary by layout, so the first pass parses every record.
	sc := recordsScan{t0: T0Finder{ArrivalRate: arrivalRate}}
	if err := readRecordsFile(path, sc.add); err != nil {
		return nil, err
	}
	aiperfWindow := !in.T0Ns.OK && in.Warmup == 0 && in.Duration == 0 && sc.okSeen
	switch {
	case aiperfWindow:
		in.T0Ns = Some(sc.okFrom)
		in.Duration = time.Duration(sc.okTo + 1 - sc.okFrom) // the window is [W, E): the last response in it
	case !in.T0Ns.OK:
		in.T0Ns = sc.t0.T0()
	}
	if in.Duration == 0 {
		in.Duration = time.Duration(max(0, sc.t0.maxEnd+1-in.T0Ns.V-int64(in.Warmup)))
	}
	s := NewStage(in)
	err = readRecordsFile(path, func(r *Record) {
		switch {
		case aiperfWindow && r.BenchmarkPhase == PhaseWarmup:
			s.countWarmupPhase()
		case aiperfWindow && !r.OK():
			s.Add(r)
			s.countFailureOutside(r)
		default:
			s.Add(r)
		}
	})
	if err != nil {
		return nil, err
	}
	return &RecordsSummary{StageSummary: s.Summary(), Layout: layout}, nil
}

// countWarmupPhase counts a request AIPerf marked as warmup (credit_phase or benchmark_phase) as
// the stage's warmup and nothing else, wherever it started: AIPerf's summary leaves it out, and
// over AIPerf's window plload's must equal AIPerf's.
func (s *Stage) countWarmupPhase() {
	s.s.Requests.Total++
	s.s.Requests.Warmup++
}

// countFailureOutside counts a failed request of an AIPerf run that started outside AIPerf's window
// (before the first successful start, or after the last response) as the run's, not as warmup or
// late: AIPerf's window is drawn around the successes, but every request in its file was measured,
// and its error count has them all.
func (s *Stage) countFailureOutside(r *Record) {
	req := &s.s.Requests
	switch {
	case r.RequestStartNs < s.w:
		req.Warmup--
	case r.RequestStartNs >= s.s.Window.EEffNs:
		req.Late--
	default:
		return // counted in the window already
	}
	req.InWindow++
	s.outcome(r)
}

func readRecordsFile(path string, fn func(*Record)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := readRecordsParallel(f, fn); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
