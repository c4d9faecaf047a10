package engine

import "math"

// splitOutput divides an answer's osl output tokens into reasoning and answer tokens, never either
// below 0 (docs/records.md, output_token_count).
//
// The server's own reasoning count (usage.completion_tokens_details.reasoning_tokens) is taken as
// sent when it gives one. Without it, the client knows only its own counts of the two parts — the
// scenario's tokenizer's, or token events in a stream — and the server's total is often not in the
// same tokenizer (llama.cpp sends no reasoning count, and a re-count of its reasoning text could
// exceed its completion_tokens, giving a negative answer count). So the total is split in the
// proportion of the client's counts: exact when the client counts as the server does, and the two
// parts always add up to osl.
func splitOutput(osl int, serverReasoning int, hasServerReasoning bool, clientReasoning, clientAnswer int) (reasoning, answer int) {
	switch {
	case hasServerReasoning:
		reasoning = max(serverReasoning, 0)
	case clientReasoning <= 0:
		reasoning = 0
	case clientAnswer <= 0:
		reasoning = max(osl, 0)
	default:
		share := float64(clientReasoning) / float64(clientReasoning+clientAnswer)
		reasoning = int(math.Round(float64(max(osl, 0)) * share))
	}
	return reasoning, max(osl-reasoning, 0)
}
