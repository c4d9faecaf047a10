package metrics

// PromptAgreement compares the server's prompt tokens (usage.prompt_tokens) with the client's count
// of the same messages in the scenario's tokenizer (client_prompt_tokens), over the successful
// in-window requests that have both (docs/tokenizers.md). A ratio near 1 after the chat template's overhead
// means the scenario's lengths are the server's; a ratio off by 10 % means the lengths were counted
// in another tokenizer than the model's.
type PromptAgreement struct {
	Requests int `json:"requests"`
	// Ratio is usage.prompt_tokens ÷ the client's count, per request.
	Ratio Dist `json:"ratio"`
	// MeanDifference is the mean of usage.prompt_tokens − the client's count: the chat template's
	// tokens (role markers, a default system prompt) when the tokenizers agree.
	MeanDifference float64 `json:"mean_difference_tokens"`
	// Slope and Overhead fit usage = Slope × client + Overhead by least squares: the slope is the
	// ratio once the template's fixed overhead is taken out (null with fewer than two distinct
	// client counts, where no line can be fitted).
	Slope    Opt[float64] `json:"slope"`
	Overhead Opt[float64] `json:"overhead_tokens"`
}

// promptPairs gathers (client, server) prompt counts.
type promptPairs struct {
	client, server []float64
}

func (p *promptPairs) add(r *Record) {
	if !r.UsagePromptTokens.OK || !r.ClientPromptTokens.OK || r.ClientPromptTokens.V <= 0 {
		return
	}
	p.client = append(p.client, float64(r.ClientPromptTokens.V))
	p.server = append(p.server, float64(r.UsagePromptTokens.V))
}

// result is nil when no request had both counts.
func (p *promptPairs) result() *PromptAgreement {
	n := len(p.client)
	if n == 0 {
		return nil
	}
	ratios := make([]float64, n)
	var sumX, sumY, diff float64
	for i, x := range p.client {
		y := p.server[i]
		ratios[i] = y / x
		sumX, sumY, diff = sumX+x, sumY+y, diff+(y-x)
	}
	out := &PromptAgreement{Requests: n, Ratio: summarize(ratios), MeanDifference: diff / float64(n)}
	mx, my := sumX/float64(n), sumY/float64(n)
	var sxx, sxy float64
	for i, x := range p.client {
		sxx += (x - mx) * (x - mx)
		sxy += (x - mx) * (p.server[i] - my)
	}
	if sxx > 0 {
		slope := sxy / sxx
		out.Slope, out.Overhead = Some(slope), Some(my-slope*mx)
	}
	return out
}

// TokenizerMismatch is the relative miss past which the client's lengths are called another
// tokenizer's than the server's.
const TokenizerMismatch = 0.10

// Mismatch is how far the client's counts are from the server's once the template's overhead is
// taken out: |slope − 1| when a line could be fitted, else |mean ratio − 1| (the overhead then
// inside it). ok is false when nothing was compared.
func (a *PromptAgreement) Mismatch() (miss float64, ok bool) {
	if a == nil || a.Requests == 0 {
		return 0, false
	}
	r := a.Ratio.Mean
	if a.Slope.OK {
		r = a.Slope.V
	}
	if r < 1 {
		return 1 - r, true
	}
	return r - 1, true
}
