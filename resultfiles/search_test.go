package resultfiles

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
)

// TestSearchFile: search.json lists its keys in the order readers know, writes a search without
// probes as [] (never null) and unknowns as null, and reads back as it was written.
func TestSearchFile(t *testing.T) {
	dir := t.TempDir()
	if err := (Search{Knob: "concurrency", SLO: metrics.SLOLimits{ErrorRateUnset: true}}).Write(dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "search.json"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if !strings.HasPrefix(text, "{\n  \"knob\": \"concurrency\",\n  \"slo\": {") || !strings.HasSuffix(text, "\"best\": null,\n  \"undecided\": null,\n  \"probes\": [],\n  \"stop\": \"\",\n  \"complete\": false\n}\n") {
		t.Fatalf("search.json of an empty search:\n%s", text)
	}
	best := 12.0
	want := Search{Knob: "rate", Best: &best, Undecided: &[2]float64{13, 14},
		Probes: []SearchProbe{{Value: 8, Verdict: "pass", Reason: "met", Stage: 1}, {Value: 16, Verdict: "fail", Reason: "ttft", Stage: 2}}}
	if err := want.Write(dir); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(filepath.Join(dir, "search.json"))
	if !strings.Contains(string(data), `{
      "value": 8,
      "verdict": "pass",
      "reason": "met",
      "stage": 1
    }`) {
		t.Errorf("a probe's keys:\n%s", data)
	}
	var back Search
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, back); diff != "" {
		t.Errorf("search.json round trip (-wrote +read):\n%s", diff)
	}
}
