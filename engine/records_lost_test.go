package engine

import (
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/plload/plload/metrics"
)

// TestRecordsLostWhileInterrupted: a stage that was interrupted and whose records file also refused
// a write returns an error that is both: the run exits 130 as interrupted, and says records were lost.
// Catches: only ErrRecordsLost returned, so the runner took the signal for one after the stages
// ("the report is whole") and never said the records were lost.
func TestRecordsLostWhileInterrupted(t *testing.T) {
	w, err := metrics.NewWriter[*metrics.Record](filepath.Join(t.TempDir(), "profile_export.jsonl"), 1)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	s := &stageRun{records: w, log: slog.New(slog.DiscardHandler), clock: newClock()}
	for _, interrupted := range []bool{false, true} {
		err := s.recordsLost(&StageResult{Stage: 1}, errors.New("no space left on device"), interrupted)
		if !errors.Is(err, ErrRecordsLost) || errors.Is(err, ErrInterrupted) != interrupted {
			t.Errorf("interrupted %v: %v; want records lost, and interrupted only when it was", interrupted, err)
		}
	}
}
