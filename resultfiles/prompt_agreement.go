package resultfiles

import (
	"fmt"
	"math"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// promptAgreementWarning says when the server counts the prompts more than 10 % apart from the
// client once the chat template's overhead is out: the scenario's lengths are not the model's.
func promptAgreementWarning(tokenizer string, a *metrics.PromptAgreement) string {
	miss, ok := a.Mismatch()
	if !ok || miss <= metrics.TokenizerMismatch {
		return ""
	}
	line := fmt.Sprintf("the server counts the prompts %.2f× plload's %s count of the same messages (%d requests, %s): the scenario's lengths are not the model's",
		promptRatio(a), tokenizer, a.Requests, TemplateOverhead(a))
	if tokenizer == workload.DefaultTokenizerName {
		return line + "; pass the model's tokenizer: --tokenizer org/name (or target.tokenizer: a Hugging Face id, or the path of its tokenizer.json)"
	}
	return line + "; check that target.tokenizer is the served model's"
}

// promptRatio is the server's tokens per client token: the fitted slope, or without one (every
// prompt one length) the mean ratio, the template inside it.
func promptRatio(a *metrics.PromptAgreement) float64 {
	if a.Slope.OK {
		return a.Slope.V
	}
	return a.Ratio.Mean
}

// TemplateOverhead says what the chat template added to the prompts as the fit found it: "the chat
// template's 3 tokens per request and 5 per message aside", its tokens per request alone where the
// message count did not vary, or that the ratio holds it where no line could be fitted.
func TemplateOverhead(a *metrics.PromptAgreement) string {
	switch {
	case a.Slope.OK && a.PerMessage.OK:
		return fmt.Sprintf("the chat template's %s per request and %s per message aside", tokensText(a.Overhead.V), tokensText(a.PerMessage.V))
	case a.Slope.OK:
		return fmt.Sprintf("the chat template's %s per request aside", tokensText(a.Overhead.V))
	default:
		return "every prompt one length, so the chat template's tokens are inside the ratio"
	}
}

// tokensText writes a fitted token count: whole where the fit is exact (llama.cpp's template is), one
// decimal otherwise.
func tokensText(v float64) string {
	if r := math.Round(v); math.Abs(v-r) < 0.05 {
		if r == 0 {
			r = 0 // a fit's -5.9e-13 rounds to -0, which %.0f prints as "-0"
		}
		if r == 1 {
			return "1 token"
		}
		return fmt.Sprintf("%.0f tokens", r)
	}
	return fmt.Sprintf("%.1f tokens", v)
}
