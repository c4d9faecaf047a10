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
// than one. Tokens that left no text (a reasoning parser's tags, a tool call's JSON scaffolding) so
// land with the long chunks they were generated among. Where no chunk holds more than one token in
// the client's count, the events are left at one token each.

// chunkTokens is the output tokens of each token event when total (the server's completion tokens)
// is more than the events and the client's count places the surplus; nil otherwise (one each).
func (st *streamRead) chunkTokens(total int, count func(string) int) []int {
	events := len(st.tokens)
	surplus := total - events
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
	k := apportion(surplus, more, evidence)
	for i := range k {
		k[i]++
	}
	return k
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
