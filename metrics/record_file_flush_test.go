package metrics

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWriterFlushesASlowStream: one record, then nothing: it reaches the file within a few
// flushEvery, long before Close, so a slow stage finds a full disk while it runs.
// Catches: lines held in memory until 256 KiB gathered, so a stage of a record every few seconds
// wrote nothing (and saw no full disk) until its end.
func TestWriterFlushesASlowStream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile_export.jsonl")
	w, err := NewWriter[*Record](path, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Write(sampleRecord())
	for deadline := time.Now().Add(30 * flushEvery); ; time.Sleep(20 * time.Millisecond) {
		if st, err := os.Stat(path + ".tmp"); err == nil && st.Size() > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the record was not on disk %v after it was written", 30*flushEvery)
		}
	}
}
