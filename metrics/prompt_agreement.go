package metrics

import "math"

// PromptAgreement compares the server's prompt tokens (usage.prompt_tokens) with the client's count
// of the same messages in the scenario's tokenizer (client_prompt_tokens), over the successful
// in-window requests that have both (docs/tokenizers.md).
//
// A server counts what the chat template made of the messages: the client's tokens, plus a few
// tokens per message (role markers) and a few per request (the assistant header, a default system
// prompt). llama.cpp serving Qwen3, for one, counts exactly client + 3 + 5 per message. So the
// counts are fitted as server = Slope × client + PerRequest + PerMessage × messages: the template's
// two overheads come out, and the slope alone says whether the client counted in the model's
// tokenizer (1 when it did; 1.2 when its tokenizer needs a fifth fewer tokens for the same text).
type PromptAgreement struct {
	Requests int `json:"requests"`
	// Ratio is usage.prompt_tokens ÷ the client's count, per request (the template inside it).
	Ratio Dist `json:"ratio"`
	// MeanDifference is the mean of usage.prompt_tokens − the client's count: the chat template's
	// tokens (role markers, a default system prompt) when the tokenizers agree.
	MeanDifference float64 `json:"mean_difference_tokens"`
	// Slope is the server's tokens per client token once the template's are out; null where the
	// client counts were all the same (no line can be fitted).
	Slope Opt[float64] `json:"slope"`
	// Overhead is the template's tokens per request: the fit's constant. Where PerMessage is null,
	// it holds the per-message tokens too (the messages' count did not vary, or was not recorded).
	Overhead Opt[float64] `json:"overhead_tokens"`
	// PerMessage is the template's tokens per message (role markers and separators); null where
	// the records carry no message count, the count never varied (single-turn chats), or it
	// varied in step with the client's tokens so that the two cannot be told apart.
	PerMessage Opt[float64] `json:"per_message_tokens"`
}

// promptPairs gathers (client tokens, messages, server tokens) per request.
type promptPairs struct {
	client, server, messages []float64
	// allMessages: every pair had its message count (plload's records since it was recorded).
	allMessages bool
}

func (p *promptPairs) add(r *Record) {
	if !r.UsagePromptTokens.OK || !r.ClientPromptTokens.OK || r.ClientPromptTokens.V <= 0 {
		return
	}
	if r.ImageCount.OK && r.ImageCount.V > 0 {
		return // the server's count holds the images' tokens too: summary.images compares those
	}
	if len(p.client) == 0 {
		p.allMessages = true
	}
	p.client = append(p.client, float64(r.ClientPromptTokens.V))
	p.server = append(p.server, float64(r.UsagePromptTokens.V))
	p.messages = append(p.messages, float64(r.ClientPromptMessages.V))
	p.allMessages = p.allMessages && r.ClientPromptMessages.OK
}

// collinear is how close to 1 the squared correlation of client tokens and messages may come
// before the two are called one variable (a chat whose every message has the same length).
const collinear = 1e-9

// result is nil when no request had both counts.
func (p *promptPairs) result() *PromptAgreement {
	n := len(p.client)
	if n == 0 {
		return nil
	}
	ratios := make([]float64, n)
	var diff float64
	for i, x := range p.client {
		ratios[i] = p.server[i] / x
		diff += p.server[i] - x
	}
	out := &PromptAgreement{Requests: n, Ratio: summarize(ratios), MeanDifference: diff / float64(n)}
	mx, mk, my := meanOf(p.client), meanOf(p.messages), meanOf(p.server)
	// Least squares on the centred values: the constant drops out and the normal equations are
	// two by two, in the slope s and the per-message tokens m.
	var sxx, skk, sxk, sxy, sky float64
	for i, x := range p.client {
		dx, dk, dy := x-mx, p.messages[i]-mk, p.server[i]-my
		sxx, skk, sxk = sxx+dx*dx, skk+dk*dk, sxk+dx*dk
		sxy, sky = sxy+dx*dy, sky+dk*dy
	}
	if sxx <= 0 {
		return out
	}
	det := sxx*skk - sxk*sxk
	if !p.allMessages || skk <= 0 || det <= collinear*sxx*skk {
		slope := sxy / sxx
		out.Slope, out.Overhead = Some(slope), Some(my-slope*mx)
		return out
	}
	slope := (sxy*skk - sky*sxk) / det
	perMessage := (sky*sxx - sxy*sxk) / det
	out.Slope, out.PerMessage = Some(slope), Some(perMessage)
	out.Overhead = Some(my - slope*mx - perMessage*mk)
	return out
}

func meanOf(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// TokenizerMismatch is the relative miss past which the client's lengths are called another
// tokenizer's than the server's.
const TokenizerMismatch = 0.10

// Mismatch is how far the client's counts are from the server's once the template's overhead is
// taken out: |slope − 1| when a line could be fitted. Without one (every prompt the same length)
// the template's tokens and a tokenizer's miss cannot be told apart, so the mean ratio is judged
// with the most a chat template adds (templateAllowance) taken out of the server's side: a server
// count below the client's is always a miss (a template only adds). ok is false when nothing was
// compared.
func (a *PromptAgreement) Mismatch() (miss float64, ok bool) {
	if a == nil || a.Requests == 0 {
		return 0, false
	}
	if a.Slope.OK {
		return math.Abs(a.Slope.V - 1), true
	}
	r := a.Ratio.Mean
	if r <= 1 {
		return 1 - r, true
	}
	// The client's counts are all one value c here, so the mean ratio is 1 + mean difference ÷ c.
	client := a.MeanDifference / (r - 1)
	if client <= 0 {
		return r - 1, true
	}
	return max(0, (a.MeanDifference-templateAllowance)/client), true
}

// templateAllowance is the most tokens a chat template is taken to add to a request whose client
// counts do not vary: a default system prompt with a date (Llama 3's, some 25 tokens) and the role
// markers of a few messages.
const templateAllowance = 64
