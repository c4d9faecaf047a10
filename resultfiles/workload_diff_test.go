package resultfiles

import (
	"strings"
	"testing"
)

// TestSourceNameWithoutADatasetHash: an AIPerf run has no dataset sha256; its source is named
// without an empty "sha256 …".
func TestSourceNameWithoutADatasetHash(t *testing.T) {
	got := sourceName(&SourceInfo{Kind: "AIPerf run", File: "profile_export.jsonl", Format: "records layout early"})
	if strings.Contains(got, "sha256") || !strings.Contains(got, "profile_export.jsonl (records layout early)") {
		t.Fatalf("%q", got)
	}
	if got := sourceName(&SourceInfo{Kind: "dataset", File: "a.jsonl", Format: "openai", SHA256: "0123456789abcdef"}); !strings.Contains(got, "sha256 0123456789ab…") {
		t.Fatalf("%q", got)
	}
}
