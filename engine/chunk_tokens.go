package engine

// How many output tokens each token event of a stream carried (the record's chunk_tokens), so that
// the pooled ITL counts a gap before a chunk of k tokens as k gaps (docs/measurement.md): a server
// that sends several tokens in one chunk — llama.cpp a tool call's name and then its arguments, or a
// token that is part of a multibyte character together with the next — otherwise shows one long
// "inter-token" gap where k short ones passed.
//
// The server's usage says how many tokens there were in all, not per chunk, so the client's own
// tokenizer says which chunks held more than one: the tokens the server counted beyond one per event
// go to the chunks whose text the client counts as several tokens, in proportion to how many more
// than one.
//
// Not all of the server's surplus was streamed, though. Reasoning the server counted but never sent
// (OpenAI's o-series, gateways that strip it: reasoning_tokens > 0 with no reasoning streamed) was
// generated before the first chunk, so its time is the TTFT's, not any chunk gap's; a stop token some
// servers count was never text at all. Spread over the chunks, hundreds of such tokens would cut one
// gap into hundreds of tiny ones and pull the ITL toward 0. So the unstreamed reasoning is taken out,
// and a chunk never gets more tokens than the client counts in its text: only the part of the
// surplus the client's own counts explain is placed, and the rest is left out of the ITL.

// chunkTokens is the output tokens of each token event when total (the server's completion tokens,
// less unstreamed, its reasoning tokens when none of the reasoning was streamed) is more than the
// events and the client's count places some of the surplus; nil otherwise (one each).
func (st *streamRead) chunkTokens(total, unstreamed int, count func(string) int) []int {
	events := len(st.tokens)
	surplus := total - max(unstreamed, 0) - events
	if surplus <= 0 || events < 2 || len(st.ends) != events {
		return nil
	}
	more := make([]int, events) // tokens beyond one, in the client's count
	evidence, start := 0, 0
	for i, end := range st.ends {
		if end-start > 1 { // a single byte is a single token in every tokenizer
			more[i] = max(count(string(st.text[start:end]))-1, 0)
			evidence += more[i]
		}
		start = end
	}
	if evidence == 0 {
		return nil
	}
	// At most what the client counts: with surplus ≤ evidence, no chunk's share passes its own more[i]
	// (apportion gives each at most the ceiling of a share below its weight).
	k := apportion(min(surplus, evidence), more, evidence)
	for i := range k {
		k[i]++
	}
	return k
}

// unstreamedReasoning is the reasoning tokens the server counted but did not stream: its whole
// reasoning count when no token event carried reasoning, 0 when some did (their count is then in
// the events' text, and the client's tokenizer places it), when the usage gives none, or when it
// has no completion count to take it from.
func (st *streamRead) unstreamedReasoning() int {
	if st.reasoning > 0 || st.usage == nil || !st.usage.HasReasoning || !st.usage.HasCompletion {
		return 0
	}
	return max(st.usage.ReasoningTokens, 0)
}

// apportion divides n among weights (summing to sum > 0) in proportion, in whole numbers that add up
// to n: each its floor, and what is left by the largest remainders (the earlier event on a tie).
func apportion(n int, weights []int, sum int) []int {
	out := make([]int, len(weights))
	rem := make([]int, len(weights)) // remainders in units of 1/sum
	left := n
	for i, w := range weights {
		out[i] = n * w / sum
		rem[i] = n * w % sum
		left -= out[i]
	}
	for ; left > 0; left-- {
		best := -1
		for i, r := range rem {
			if weights[i] > 0 && (best < 0 || r > rem[best]) {
				best = i
			}
		}
		out[best]++
		rem[best] = -1
	}
	return out
}
