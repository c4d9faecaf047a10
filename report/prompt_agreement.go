package report

import (
	"fmt"
	"strings"

	"github.com/plload/plload/resultfiles"
)

// promptAgreementLines are the Method section's sub-lines under the tokenizer: per stage, how the
// server's prompt counts relate to the client's once the chat template's tokens are fitted out
// (docs/tokenizers.md). Nothing when no stage compared them (no usage, or AIPerf's records).
func promptAgreementLines(stages []*resultfiles.StageReport) string {
	var b strings.Builder
	for _, s := range stages {
		if s.Summary == nil || s.Summary.PromptTokensAgreement == nil {
			continue
		}
		a := s.Summary.PromptTokensAgreement
		ratio := a.Ratio.Mean
		if a.Slope.OK {
			ratio = a.Slope.V
		}
		fmt.Fprintf(&b, "  - stage %02d: the server counts the prompts %.2f× the client's (%d requests), %s\n",
			s.Stage, ratio, a.Requests, resultfiles.TemplateOverhead(a))
	}
	return b.String()
}
