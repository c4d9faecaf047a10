package report

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/resultfiles"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./report -update creates it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Fatalf("%s differs (-want +got):\n%s", path, diff)
	}
}

func TestGoldenReport(t *testing.T) {
	sc, r := goldenReport(t)
	stages := r.Stages
	md := Markdown(r, sc)
	golden(t, "report.md", []byte(md))
	if strings.Contains(md, "sk-SECRET") {
		t.Fatal("a secret reached report.md")
	}
	if r.HeadlineStage == nil || *r.HeadlineStage != 1 || !strings.HasPrefix(md, "# plload report: golden\n\n**Headline**: stage 01:") {
		t.Fatalf("headline: stage %v\n%s", r.HeadlineStage, md[:200])
	}
	data, _ := json.MarshalIndent(stages[1], "", "  ")
	golden(t, "stage_02.json", data)
	data, _ = json.MarshalIndent(r, "", "  ")
	golden(t, "report.json", data)
}

func TestComparisonAndHandoff(t *testing.T) {
	_, a := goldenStages(t)
	_, b := goldenStages(t)
	b[1].DatasetSHA256 = strings.Repeat("f", 64)
	runs := []Run{{Dir: "/r/before", Name: "before", Stages: a}, {Dir: "/r/after", Name: "after", Stages: b}}
	text := Comparison(runs)
	if !strings.Contains(text, "workload differs: stage 02 of before ran dataset bbbbbbbbbbbb…, of after ffffffffffff…") ||
		strings.Contains(text, "stage 01 of before") || strings.Count(text, "| before |") != 2*5 {
		t.Fatalf("comparison:\n%s", text)
	}
	h := Handoff(runs, "/abs/golden.yaml")
	for _, want := range []string{"stage 02 (load c=4): TTFT p95 over the SLO", "against a limit of 250 ms", "Done when: TTFT p95 ≤ 250 ms at stage 02",
		"plload run /abs/golden.yaml", "plload report /r/before /r/after"} {
		if !strings.Contains(h, want) {
			t.Errorf("handoff lacks %q:\n%s", want, h)
		}
	}
}

// TestWorkloadDiffersAcrossSources: two runs whose stage came from different sources (or one from a
// file, one synthetic) are said to differ, even before their datasets are compared.
func TestWorkloadDiffersAcrossSources(t *testing.T) {
	st := func(src *resultfiles.SourceInfo) *resultfiles.StageReport {
		return &resultfiles.StageReport{Stage: 1, DatasetSHA256: "same", Source: src}
	}
	a := &resultfiles.SourceInfo{Kind: "dataset", File: "a.jsonl", Format: "openai", SHA256: strings.Repeat("a", 64)}
	b := &resultfiles.SourceInfo{Kind: "dataset", File: "a.jsonl", Format: "openai", SHA256: strings.Repeat("b", 64)}
	for _, tc := range []struct {
		x, y *resultfiles.SourceInfo
		want string
	}{
		{a, a, ""},
		{a, b, "stage 01 of x came from dataset a.jsonl (openai, sha256 aaaaaaaaaaaa…), of y from dataset a.jsonl (openai, sha256 bbbbbbbbbbbb…)"},
		{nil, a, "of x came from the synthetic workload"},
	} {
		got := strings.Join(WorkloadWarnings([]Run{{Name: "x", Stages: []*resultfiles.StageReport{st(tc.x)}}, {Name: "y", Stages: []*resultfiles.StageReport{st(tc.y)}}}), "\n")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%v vs %v: %q, want %q", tc.x, tc.y, got, tc.want)
		}
	}
}
