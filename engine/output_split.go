package engine

import (
	"math"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/sse"
)

// setOutputCounts fills rec's reasoning_token_count and output_token_count from its osl output
// tokens, the same way for a streamed answer and a non-streamed one (docs/records.md):
// reasoning_token_count is there when the answer carried reasoning text or the server counted
// reasoning tokens (an o-series model streams none of its reasoning yet counts it), and the two
// always add up to osl. sawReasoning says the answer carried reasoning text; clientReasoning and
// clientAnswer are the client's counts of the two parts, used only where the server gives no
// reasoning count.
func setOutputCounts(rec *metrics.Record, osl int, usage *sse.Usage, sawReasoning bool, clientReasoning, clientAnswer int) {
	serverReasoning, hasServerReasoning := 0, usage != nil && usage.HasReasoning
	if hasServerReasoning {
		serverReasoning = usage.ReasoningTokens
	}
	// A server's reasoning_tokens of 0 beside an answer without reasoning (the usual usage of a
	// model that does not reason) says there was none, and the field stays absent.
	if !sawReasoning && serverReasoning <= 0 {
		rec.OutputTokenCount = metrics.Some(max(osl, 0))
		return
	}
	reasoning, answer := splitOutput(osl, serverReasoning, hasServerReasoning, clientReasoning, clientAnswer)
	rec.ReasoningTokenCount = metrics.Some(reasoning)
	rec.OutputTokenCount = metrics.Some(answer)
}

// splitOutput divides an answer's osl output tokens into reasoning and answer tokens, each within
// [0, osl] and adding up to osl (docs/records.md, output_token_count).
//
// The server's own reasoning count (usage.completion_tokens_details.reasoning_tokens) is taken as
// sent when it gives one, but never above osl: a server that counts more reasoning than output is
// wrong in one of the two, and the parts must add up to the total the rest of the record uses.
// Without it, the client knows only its own counts of the two parts — the scenario's tokenizer's,
// or token events in a stream — and the server's total is often not in the same tokenizer
// (llama.cpp sends no reasoning count, and a re-count of its reasoning text could exceed its
// completion_tokens, giving a negative answer count). So the total is split in the proportion of
// the client's counts: exact when the client counts as the server does.
func splitOutput(osl int, serverReasoning int, hasServerReasoning bool, clientReasoning, clientAnswer int) (reasoning, answer int) {
	osl = max(osl, 0)
	switch {
	case hasServerReasoning:
		reasoning = min(max(serverReasoning, 0), osl)
	case clientReasoning <= 0:
		reasoning = 0
	case clientAnswer <= 0:
		reasoning = osl
	default:
		share := float64(clientReasoning) / float64(clientReasoning+clientAnswer)
		reasoning = int(math.Round(float64(osl) * share))
	}
	return reasoning, osl - reasoning
}
