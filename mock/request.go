package mock

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
)

// request is the part of an OpenAI chat or completions request the mock reads.
type request struct {
	Model         string    `json:"model"`
	Messages      []message `json:"messages"`
	Prompt        any       `json:"prompt"`
	Stream        bool      `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           int             `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Tools               []tool          `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ResponseFormat      *responseFormat `json:"response_format"`
}

type message struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls json.RawMessage `json:"tool_calls"` // an assistant's calls, counted as prompt tokens
	// parts is the content read already, its texts and images in order: set where a Messages or
	// Responses request's content holds images (Content then holds its text alone).
	parts []segment
}

// text returns a message's content: a string, or the text parts of a content array.
func (m message) text() (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", fmt.Errorf("content must be a string or an array of {type, text} parts")
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// maxTokens is the request's output limit: max_completion_tokens, else max_tokens, else the default.
func (r *request) maxTokens(def, limit int) (int, error) {
	n := def
	if r.MaxTokens != nil {
		n = *r.MaxTokens
	}
	if r.MaxCompletionTokens != nil {
		n = *r.MaxCompletionTokens
	}
	if n < 1 || n > limit {
		return 0, fmt.Errorf("max_tokens must be from 1 to %d, got %d", limit, n)
	}
	return n, nil
}

// outcome is what the mock decided to do with a request.
type outcome string

const (
	outcomeOK          outcome = "ok"
	outcomeError       outcome = "error"
	outcomeRateLimited outcome = "rate_limited"
)

func faultOutcome(k FaultKind) outcome { return outcome(k) }

// plan is the whole response, fixed before the first byte: the same seed and body give the same plan.
type plan struct {
	outcome   outcome
	reasoning int    // reasoning chunks before the content
	content   int    // content chunks
	faultAt   int    // chunk index at which a mid-stream fault strikes
	sum       uint64 // the body's hash, with the seed the source of every draw

	toolCalls  []toolCall // an answer with tool calls (chat with tools): its content chunks are theirs
	toolDeltas []string   // the streamed deltas of toolCalls, one per content chunk
	jsonPieces []string   // structured output: the JSON document's token pieces, one per content chunk
	cut        bool       // the JSON document was cut at max_tokens
	rng        *rand.Rand // outcome, length and words
	jit        *rand.Rand // jitter: its own stream, so the text does not depend on the timing draws
}

// newPlan draws the plan from (seed, body). Draws happen in a fixed order, so each is reproducible.
func (s *Server) newPlan(body []byte, req *request, maxTokens int) plan {
	h := fnv.New64a()
	h.Write(body)
	sum := h.Sum64()
	rng := rand.New(rand.NewPCG(s.cfg.Seed, sum))
	p := plan{outcome: outcomeOK, rng: rng, sum: sum, jit: rand.New(rand.NewPCG(^s.cfg.Seed, sum))}
	u := rng.Float64()
	edge := s.cfg.ErrorRate
	switch {
	case u < edge:
		p.outcome = outcomeError
	case u < edge+s.cfg.RateLimitRate:
		p.outcome = outcomeRateLimited
	default:
		edge += s.cfg.RateLimitRate
		for _, k := range FaultKinds {
			edge += s.cfg.Faults[k]
			if u < edge {
				p.outcome = faultOutcome(k)
				break
			}
		}
	}
	n := maxTokens
	if !req.IgnoreEOS && s.cfg.EOSMinFraction < 1 {
		lo := max(1, int(math.Ceil(s.cfg.EOSMinFraction*float64(maxTokens))))
		n = lo + rng.IntN(maxTokens-lo+1)
	}
	n = min(max(n, req.MinTokens), maxTokens)
	p.reasoning = min(s.cfg.ReasoningTokens, n)
	p.content = n - p.reasoning
	p.faultAt = n / 2
	return p
}

// jittered scales d by (1 + jitter·u), u uniform in [−1, 1].
func (p *plan) jittered(d float64, jitter float64) float64 {
	if jitter == 0 {
		return d
	}
	return d * (1 + jitter*(2*p.jit.Float64()-1))
}

func (p *plan) word() string { return outputWords[p.rng.IntN(len(outputWords))] }

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
