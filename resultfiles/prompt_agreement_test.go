package resultfiles

import (
	"math"
	"strings"
	"testing"
	"time"

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

// TestPromptAgreementFromRecords goes from records to the stage's warning. A templated server
// (llama.cpp with Qwen3's template counts exactly client + 3 + 5 per message) over a multi-turn
// chat is slope 1, 3 tokens per request and 5 per message, and no warning: before the fit took
// the messages out, the same records warned "1.11×" with a negative overhead. A tokenizer that
// counts 1.2× the client's, under the same template, warns and names the template it set aside.
func TestPromptAgreementFromRecords(t *testing.T) {
	// (client tokens, messages) of a chat's requests: a system prompt, then turns of uneven length.
	turns := [][2]int{{120, 2}, {310, 4}, {402, 6}, {655, 8}, {90, 2}, {188, 4}, {512, 6}, {530, 8}, {760, 10}, {240, 2}}
	summary := func(slope float64) *metrics.StageSummary {
		const t0 = int64(1_800_000_000_000_000_000)
		s := metrics.NewStage(metrics.StageInput{T0Ns: metrics.Some(t0), Duration: time.Minute, NeverStarted: -1})
		for i, c := range turns {
			start := t0 + int64(i+1)*int64(time.Second)
			s.Add(&metrics.Record{
				XRequestID: "r", ConversationID: "c", TurnIndex: i, BenchmarkPhase: metrics.PhaseProfiling,
				CreditIssuedNs: start, RequestStartNs: start, RequestEndNs: metrics.Some(start + int64(time.Second/2)),
				RequestLatency: metrics.Some(500.0), OutputSequenceLength: metrics.Some(20),
				ClientPromptTokens: metrics.Some(c[0]), ClientPromptMessages: metrics.Some(c[1]),
				UsagePromptTokens: metrics.Some(int(math.Round(slope*float64(c[0]))) + 3 + 5*c[1]),
			})
		}
		return s.Summary()
	}

	a := summary(1).PromptTokensAgreement
	near := func(got metrics.Opt[float64], want float64) bool { return got.OK && math.Abs(got.V-want) < 1e-6 }
	if a == nil || a.Requests != len(turns) || !near(a.Slope, 1) || !near(a.Overhead, 3) || !near(a.PerMessage, 5) {
		t.Fatalf("llama.cpp's template: %+v; want slope 1, 3 per request, 5 per message", a)
	}
	if w := promptAgreementWarning("Qwen/Qwen3-8B@abc", a); w != "" {
		t.Errorf("the model's own tokenizer under a template: %q", w)
	}
	if got, want := TemplateOverhead(a), "the chat template's 3 tokens per request and 5 tokens per message aside"; got != want {
		t.Errorf("template %q, want %q", got, want)
	}

	off := summary(1.2).PromptTokensAgreement
	w := promptAgreementWarning("o200k_base", off)
	if !strings.Contains(w, "1.20× plload's o200k_base count") || !strings.Contains(w, "3 tokens per request and 5.1 tokens per message aside") {
		t.Errorf("another tokenizer under the template: %q", w)
	}
}

// TestTemplateOverheadText: a fitted count prints whole where the fit is exact and with one decimal
// otherwise; a fit's rounding residue just below 0 prints 0, never "-0".
func TestTemplateOverheadText(t *testing.T) {
	for _, tc := range []struct {
		overhead, perMessage float64
		want                 string
	}{
		{-5.86e-13, 2, "the chat template's 0 tokens per request and 2 tokens per message aside"},
		{3, 5, "the chat template's 3 tokens per request and 5 tokens per message aside"},
		{1.0000001, 13.24, "the chat template's 1 token per request and 13.2 tokens per message aside"},
		{-2.4, 1, "the chat template's -2.4 tokens per request and 1 token per message aside"},
	} {
		a := &metrics.PromptAgreement{Slope: metrics.Some(1.0), Overhead: metrics.Some(tc.overhead), PerMessage: metrics.Some(tc.perMessage)}
		if got := TemplateOverhead(a); got != tc.want {
			t.Errorf("overhead %v, per message %v:\n got %q\nwant %q", tc.overhead, tc.perMessage, got, tc.want)
		}
	}
}
