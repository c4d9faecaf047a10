package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/plload/plload/workload"
)

// Bytes a stage's files take, for the room check before any traffic. A record is about 1.1 KB of
// keys and times plus one inter-chunk gap (up to ~20 characters) per output token: 1200 + 20 a token
// is an answer at its max_output_tokens, rounded up. stageExtraBytes covers stage.json, the
// sessions, run.log and the AIPerf and vLLM files beside the records (tens of KB each at most).
const (
	recordBaseBytes  = 1200
	recordTokenBytes = 20
	stageExtraBytes  = 256 << 10
	refuseTokens     = 512
)

// CheckResultsDir makes the results base directory and checks, before any request is sent, that
// plload can write there and that the file system has room for the run's expected files (each
// stage's estimated requests × bytes a record, its dataset, its summaries). A refusal is bad input
// naming the directory: before this check, a read-only or full disk still got the preflight
// request sent and left an empty run directory, or lost the records mid-run.
func CheckResultsDir(base string, sc *workload.Scenario, w *workload.Workload) error {
	if err := os.MkdirAll(base, 0o755); err != nil {
		return badInput("results directory %s: %v%s; choose another with --out or output.dir; nothing was sent", base, pathCause(err), whoCannotWrite(err))
	}
	probe, err := os.CreateTemp(base, ".plload-write-check-*")
	if err == nil {
		_, err = probe.Write([]byte("x"))
		if cerr := probe.Close(); err == nil {
			err = cerr
		}
		os.Remove(probe.Name())
	}
	if err != nil {
		return badInput("results directory %s is not writable: %v%s; choose another with --out or output.dir; nothing was sent", base, pathCause(err), whoCannotWrite(err))
	}
	free, ok := freeBytes(base)
	if !ok {
		return nil // the platform cannot say: a full disk is then caught as records fail to write
	}
	need, requests, perRecord := expectedBytes(sc, w)
	if free < need {
		return badInput("results directory %s: %s free, and the run needs about %s (%.0f expected requests × %s a record, with the datasets and summaries); "+
			"free space, choose another directory with --out or output.dir, or shorten the stages; nothing was sent",
			base, sizeText(free), sizeText(need), requests, sizeText(perRecord))
	}
	return nil
}

// expectedBytes estimates what a run writes: its records (every stage's when output.record_requests
// keeps them, else the largest stage's, removed once summarized), datasets and summaries.
func expectedBytes(sc *workload.Scenario, w *workload.Workload) (need uint64, requests float64, perRecord uint64) {
	tokens := sc.Session.MaxOutputTokens.MeanInt()
	if !(tokens >= 0 && tokens <= 1<<20) { // a dataset or trace sets the lengths, not session (unset: no mean)
		tokens = workload.DefaultDatasetOutputTokens
	}
	// The refusal is for a disk that cannot hold the run: answers are counted at no more than
	// refuseTokens each, not at max_output_tokens, which open-loop runs seldom reach (a request_rate
	// hour at max 4096 tokens was refused on a disk with five times the room its ~300-token answers
	// took). A disk that fills after all stops the stage with the records kept.
	tokens = min(tokens, refuseTokens)
	perRecord = uint64(recordBaseBytes + recordTokenBytes*tokens)
	var records, largest uint64
	for _, st := range sc.Stats(w) {
		requests += st.Estimate.Requests
		b := uint64(st.Estimate.Requests) * perRecord
		records += b
		largest = max(largest, b)
		need += uint64(st.DatasetBytes) + stageExtraBytes
	}
	if !sc.Output.RecordRequests {
		records = largest
	}
	return need + records, requests, perRecord
}

// whoCannotWrite says, for a permission error, which user plload runs as and, in a pod, what holds
// the directory (workload.ResultsVolumeEnv): a claim mounted into a non-root pod is the common case,
// and fsGroup does not make every volume the pod's.
func whoCannotWrite(err error) string {
	if !errors.Is(err, fs.ErrPermission) {
		return ""
	}
	who := fmt.Sprintf(" (plload runs as uid %d, gid %d", os.Geteuid(), os.Getegid())
	if v := os.Getenv(workload.ResultsVolumeEnv); v != "" {
		who += "; the directory is on " + v + ", which must be writable by that uid: see docs/deployment.md"
	}
	return who + ")"
}

// pathCause is err without the path an *os.PathError repeats (the message names the directory).
func pathCause(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// sizeText is n bytes for people: 1.5 GiB, 200 MiB, 12 KiB.
func sizeText(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
