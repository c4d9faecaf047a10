package resultfiles

import (
	"encoding/json"
	"path/filepath"

	"github.com/plload/plload/metrics"
)

// AB is ab.json, the comparison of two targets on the same workload in the same window (plload ab;
// docs/measurement.md): targets (the first is A), metrics (B − A, its interval, B's verdict), and
// beside them the request counts with 429s apart, and notes a reader must see. Package ab makes it.
type AB struct {
	Targets  []ABTarget      `json:"targets"`
	Metrics  []ABMetric      `json:"metrics"`
	Requests []ABStageCounts `json:"requests"`
	// SameDataset: every stage sent both targets the same dataset (its sha256).
	SameDataset bool `json:"same_dataset"`
	// Confidence is the level at which each stage's intervals hold together (IntervalMethod says how).
	Confidence     float64  `json:"confidence"`
	Resamples      int      `json:"resamples"`
	IntervalMethod string   `json:"interval_method"`
	Notes          []string `json:"notes"`
}

// ABTarget is one side of the comparison.
type ABTarget struct {
	Name  string `json:"name"`
	URL   string `json:"url"`
	Model string `json:"model"`
	Dir   string `json:"dir"` // its results directory, relative to ab.json's
}

// ABMetric is one row of ab.json: Diff = B − A, CI its interval (the stage's rows hold together at
// 95 %), Verdict B's relative to A (better, worse, same, n/a).
type ABMetric struct {
	Name    string               `json:"name"`
	A       metrics.Opt[float64] `json:"a"`
	B       metrics.Opt[float64] `json:"b"`
	Diff    metrics.Opt[float64] `json:"diff"`
	CI      *[2]float64          `json:"ci"` // null when a side has no value
	Verdict string               `json:"verdict"`
	// BetterWhen is "lower" (latencies, error rate) or "higher" (throughputs).
	BetterWhen string `json:"better_when"`
	Stage      int    `json:"stage"`
}

// ABStageCounts are one target's in-window requests of one stage, and the dataset it was sent.
type ABStageCounts struct {
	Stage  int    `json:"stage"`
	Target string `json:"target"`
	ABCounts
	DatasetSHA256 string `json:"dataset_sha256"`
}

// ABCounts are one target's requests that started in a stage's window, by outcome. RateLimited (HTTP
// 429) is a part of Errors, counted apart because a rate-limited API is refusing work, not slow.
type ABCounts struct {
	InWindow    int `json:"in_window"`
	Succeeded   int `json:"succeeded"`
	Errors      int `json:"errors"` // cancelled requests not included
	RateLimited int `json:"rate_limited"`
	Cancelled   int `json:"cancelled"`
}

// Write writes ab.json into dir (atomically).
func (r AB) Write(dir string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return metrics.WriteFileAtomic(filepath.Join(dir, "ab.json"), append(data, '\n'))
}
