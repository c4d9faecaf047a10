package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// TestPromptAgreementLines: the Method section shows each stage's fit — the slope and the
// template's tokens per request and per message — and nothing for a stage that compared none.
func TestPromptAgreementLines(t *testing.T) {
	templated := &metrics.StageSummary{PromptTokensAgreement: &metrics.PromptAgreement{Requests: 74,
		Ratio: metrics.Dist{Mean: 1.11}, Slope: metrics.Some(1.0), Overhead: metrics.Some(3.0), PerMessage: metrics.Some(5.0)}}
	single := &metrics.StageSummary{PromptTokensAgreement: &metrics.PromptAgreement{Requests: 9,
		Ratio: metrics.Dist{Mean: 1.04}, Slope: metrics.Some(0.998), Overhead: metrics.Some(13.2)}}
	got := promptAgreementLines([]*resultfiles.StageReport{
		{Stage: 1, Summary: templated}, {Stage: 2, Summary: &metrics.StageSummary{}}, {Stage: 3, Summary: single}})
	want := "  - stage 01: the server counts the prompts 1.00× the client's (74 requests), the chat template's 3 tokens per request and 5 tokens per message aside\n" +
		"  - stage 03: the server counts the prompts 1.00× the client's (9 requests), the chat template's 13.2 tokens per request aside\n"
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("lines (-want +got):\n%s", d)
	}
}
