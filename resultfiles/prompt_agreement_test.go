package resultfiles

import (
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
)

// TestPromptAgreementWarning: past 10 % after the template's overhead, o200k_base names the flag to
// pass and another tokenizer is called into question; within it, or with nothing compared, silence.
func TestPromptAgreementWarning(t *testing.T) {
	off := &metrics.PromptAgreement{Requests: 40, Ratio: metrics.Dist{Mean: 1.25}, Slope: metrics.Some(1.19), Overhead: metrics.Some(12.0)}
	if w := promptAgreementWarning("o200k_base", off); !strings.Contains(w, "1.19× plload's o200k_base count") || !strings.Contains(w, "--tokenizer org/name") {
		t.Errorf("o200k_base, 19 %% off: %q", w)
	}
	if w := promptAgreementWarning("Qwen/Qwen3-8B@abc", off); !strings.Contains(w, "check that target.tokenizer is the served model's") {
		t.Errorf("a chosen tokenizer, 19 %% off: %q", w)
	}
	near := &metrics.PromptAgreement{Requests: 40, Ratio: metrics.Dist{Mean: 1.3}, Slope: metrics.Some(1.04), Overhead: metrics.Some(30.0)}
	if w := promptAgreementWarning("o200k_base", near); w != "" {
		t.Errorf("4 %% off once the template's 30 tokens are out: %q", w)
	}
	if w := promptAgreementWarning("o200k_base", nil); w != "" {
		t.Errorf("nothing compared: %q", w)
	}
}
