package workload

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Dataset formats (docs/data.md).
const (
	FormatPrompts  = "prompts"  // JSONL {"prompt"} (vLLM custom) or {"text"} (AIPerf single_turn)
	FormatOpenAI   = "openai"   // JSONL {"messages": [{"role", "content"}, ...]}
	FormatShareGPT = "sharegpt" // JSON [{"conversations": [{"from", "value"}, ...]}]
	FormatAIPerf   = "aiperf"   // AIPerf multi_turn JSONL {"session_id", "turns": [{"text", "delay", ...}]}
	// FormatVisionArena is VisionArena-Chat as JSONL {"conversation": [[{"role", "content"}, ...], ...], "images": [...]}.
	FormatVisionArena = "visionarena"
)

// maxDatasetLine bounds one line of a dataset file (a conversation of about 2M tokens).
const maxDatasetLine = 8 << 20

// maxOpenAILine bounds one line of an openai dataset, whose user messages may carry images as data
// URLs: the text's bound plus two images at the limit in base64 (more belong in files). The
// scanner's buffer grows only as far as the longest line, so the bound costs nothing until used.
func maxOpenAILine(maxImageBytes int) int {
	return maxDatasetLine + 2*base64.StdEncoding.EncodedLen(maxImageBytes)
}

// rawTurn is one message of a conversation as a file gives it, before filters and counting.
type rawTurn struct {
	role, text   string
	outputTokens int   // 0: none given
	delayMs      int64 // -1: none given
	// atMs is the file's own send time in ms (AIPerf's fixed-schedule timestamp); -1: none given.
	atMs float64
	// message is the whole message as the file has it (openai only): an assistant message with
	// tool_calls, or a tool result, is replayed verbatim by history: recorded.
	message json.RawMessage
	toolish bool // it carries tool_calls, or it is a tool result
	// images are a user message's images (openai's image_url parts), in its order: each the
	// dataset's one *Image of its content.
	images []*Image
}

// rawSession is one conversation read from a file.
type rawSession struct {
	id    string
	line  int
	turns []rawTurn
}

// readDataset is readDatasetWith with the default limit of an image's bytes.
func readDataset(path, format string) ([]rawSession, int, error) {
	return readDatasetWith(path, format, DefaultImageMaxBytes)
}

// readDatasetWith reads a dataset file of the given format into conversations, with an openai
// file's images (none over maxImageBytes: dataset_images.go). Every error names the file, the line
// (or the item, for a JSON array) and what is accepted; the text itself is never quoted, since it
// can be a customer's data.
func readDatasetWith(path, format string, maxImageBytes int) ([]rawSession, int, error) {
	if format == FormatShareGPT {
		return readShareGPT(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot read the dataset: %v", err)
	}
	defer f.Close()
	switch format {
	case FormatPrompts, FormatOpenAI, FormatAIPerf, FormatVisionArena:
	default:
		return nil, 0, fmt.Errorf("format %q; accepted: prompts, openai, sharegpt, aiperf, visionarena", format)
	}
	var out []rawSession
	images := newImageLoader(path, maxImageBytes)
	maxLine := maxDatasetLine
	if format == FormatOpenAI || format == FormatVisionArena {
		maxLine = maxOpenAILine(images.maxBytes)
	}
	lines, err := EachJSONLine(path, f, maxLine, func(line int, text []byte) error {
		var rs rawSession
		var err error
		switch format {
		case FormatPrompts:
			rs, err = promptLine(text)
		case FormatOpenAI:
			rs, err = openAILine(text, images)
		case FormatAIPerf:
			rs, err = aiperfLine(text)
		case FormatVisionArena:
			rs, err = visionArenaLine(text, images)
		}
		if err != nil {
			return fmt.Errorf("%s line %d: %v", path, line, err)
		}
		rs.line = line
		if rs.id == "" {
			rs.id = fmt.Sprintf("line-%d", line)
		}
		out = append(out, rs)
		return nil
	})
	if err != nil {
		return nil, lines, err
	}
	return out, lines, nil
}

const (
	acceptPrompts = `accepted: {"prompt": "..."} or {"text": "..."}, optional "output_tokens" or "output_length" (a whole number ≥ 1)`
	acceptOpenAI  = `accepted: {"messages": [{"role": "system"|"user"|"assistant", "content": "..." or [{"type": "text", "text": "..."}, {"type": "image_url", "image_url": {"url": "..."}}, ...]}, ...]} with at least one user message`
	acceptAIPerf  = `accepted: {"session_id": "...", "turns": [{"text": "...", "delay": ms, "output_length": n}, ...]}`
)

func promptLine(text []byte) (rawSession, error) {
	var raw struct {
		Prompt       *string     `json:"prompt"`
		Text         *string     `json:"text"`
		OutputTokens json.Number `json:"output_tokens"`
		OutputLength json.Number `json:"output_length"`
	}
	if err := json.Unmarshal(text, &raw); err != nil {
		return rawSession{}, fmt.Errorf("not a JSON object (%s); %s", jsonProblem(err), acceptPrompts)
	}
	prompt := raw.Prompt
	if prompt == nil {
		prompt = raw.Text
	}
	if prompt == nil || strings.TrimSpace(*prompt) == "" {
		return rawSession{}, fmt.Errorf(`"prompt" (or "text") is missing or empty; %s`, acceptPrompts)
	}
	n, err := wholeNumber(raw.OutputTokens, raw.OutputLength)
	if err != nil {
		return rawSession{}, fmt.Errorf("%v; %s", err, acceptPrompts)
	}
	return rawSession{turns: []rawTurn{{role: "user", text: *prompt, outputTokens: n, delayMs: -1, atMs: -1}}}, nil
}

// content reads a message's content: text, or OpenAI's list of parts (the text parts joined, and
// its image_url parts in their order).
func content(raw json.RawMessage) (string, []imagePart, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil, true
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		ImageURL json.RawMessage `json:"image_url"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", nil, false
	}
	var b strings.Builder
	var images []imagePart
	for i, p := range parts {
		switch p.Type {
		case "text":
			b.WriteString(p.Text)
		case "image_url":
			images = append(images, imagePart{index: i, url: readImagePart(p.ImageURL)})
		}
	}
	return b.String(), images, true
}

func openAILine(text []byte, loader *imageLoader) (rawSession, error) {
	var raw struct {
		ID       string            `json:"id"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(text, &raw); err != nil {
		return rawSession{}, fmt.Errorf("not a JSON object (%s); %s", jsonProblem(err), acceptOpenAI)
	}
	rs := rawSession{id: raw.ID}
	for i, whole := range raw.Messages {
		var m struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls json.RawMessage `json:"tool_calls"`
		}
		if err := json.Unmarshal(whole, &m); err != nil {
			return rawSession{}, fmt.Errorf("messages[%d] is not a message object (%s); %s", i, jsonProblem(err), acceptOpenAI)
		}
		c, parts, ok := content(m.Content)
		if !ok && len(m.Content) > 0 && string(m.Content) != "null" {
			return rawSession{}, fmt.Errorf("messages[%d].content is neither text nor a list of text parts; %s", i, acceptOpenAI)
		}
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return rawSession{}, fmt.Errorf("messages[%d].role %q; %s", i, m.Role, acceptOpenAI)
		}
		var images []*Image
		for _, part := range parts {
			at := fmt.Sprintf("messages[%d].content[%d]", i, part.index)
			switch {
			case m.Role != "user":
				return rawSession{}, fmt.Errorf("%s is an image_url part in a message of role %s (images go in user messages); %s", at, m.Role, acceptImage(loader.maxBytes))
			case strings.TrimSpace(part.url) == "":
				return rawSession{}, fmt.Errorf("%s is an image_url part without a url; %s", at, acceptImage(loader.maxBytes))
			}
			im, err := loader.load(part.url)
			if err != nil {
				return rawSession{}, fmt.Errorf("%s.image_url.url: %v; %s", at, err, acceptImage(loader.maxBytes))
			}
			images = append(images, im)
		}
		calls := len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" && string(m.ToolCalls) != "[]"
		rt := rawTurn{role: m.Role, text: c, delayMs: -1, atMs: -1, toolish: m.Role == "tool" || calls, images: images}
		if m.Role == "assistant" || m.Role == "tool" {
			// Only the recorded answers are replayed verbatim; a user message's own bytes (its
			// images' base64 with them) are not kept past its line.
			rt.message = whole
		}
		rs.turns = append(rs.turns, rt)
	}
	return rs, checkHasUser(rs, acceptOpenAI)
}

func aiperfLine(text []byte) (rawSession, error) {
	var raw struct {
		SessionID string `json:"session_id"`
		Turns     []struct {
			Role         string      `json:"role"`
			Text         *string     `json:"text"`
			Texts        []string    `json:"texts"`
			Delay        json.Number `json:"delay"`
			Timestamp    json.Number `json:"timestamp"`
			OutputLength json.Number `json:"output_length"`
			MaxTokens    json.Number `json:"max_tokens"`
		} `json:"turns"`
	}
	if err := json.Unmarshal(text, &raw); err != nil {
		return rawSession{}, fmt.Errorf("not a JSON object (%s); %s", jsonProblem(err), acceptAIPerf)
	}
	rs := rawSession{id: raw.SessionID}
	for i, t := range raw.Turns {
		var body string
		switch {
		case t.Text != nil:
			body = *t.Text
		case len(t.Texts) > 0:
			body = strings.Join(t.Texts, "\n")
		default:
			return rawSession{}, fmt.Errorf("turns[%d] has no \"text\"; %s", i, acceptAIPerf)
		}
		n, err := wholeNumber(t.OutputLength, t.MaxTokens)
		if err != nil {
			return rawSession{}, fmt.Errorf("turns[%d]: %v; %s", i, err, acceptAIPerf)
		}
		delay := int64(-1)
		if t.Delay != "" {
			d, err := t.Delay.Float64()
			if err != nil || d < 0 {
				return rawSession{}, fmt.Errorf("turns[%d].delay %q; accepted: milliseconds ≥ 0", i, t.Delay)
			}
			delay = int64(d)
		}
		at := -1.0
		if t.Timestamp != "" {
			if at, err = t.Timestamp.Float64(); err != nil || at < 0 {
				return rawSession{}, fmt.Errorf("turns[%d].timestamp %q; accepted: milliseconds ≥ 0 from the dataset's start", i, t.Timestamp)
			}
		}
		role := t.Role
		if role == "" {
			role = "user"
		}
		if role != "user" && role != "system" {
			return rawSession{}, fmt.Errorf("turns[%d].role %q; accepted: user (default) or system", i, t.Role)
		}
		rs.turns = append(rs.turns, rawTurn{role: role, text: body, outputTokens: n, delayMs: delay, atMs: at})
	}
	return rs, checkHasUser(rs, acceptAIPerf)
}

func readShareGPT(path string) ([]rawSession, int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot read the dataset: %v", err)
	}
	const accept = `accepted: a JSON array of {"conversations": [{"from": "human"|"gpt"|"system", "value": "..."}, ...]}`
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, 0, fmt.Errorf("%s: not a JSON array (%s); %s", path, jsonProblem(err), accept)
	}
	out := make([]rawSession, 0, len(raw))
	for i, item := range raw {
		var conv struct {
			ID            string `json:"id"`
			Conversations []struct {
				From  string `json:"from"`
				Value string `json:"value"`
			} `json:"conversations"`
		}
		if err := json.Unmarshal(item, &conv); err != nil {
			return nil, len(raw), fmt.Errorf("%s item %d: %s; %s", path, i+1, jsonProblem(err), accept)
		}
		rs := rawSession{id: conv.ID, line: i + 1}
		for j, m := range conv.Conversations {
			role, ok := map[string]string{"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
				"chatgpt": "assistant", "bing": "assistant", "bard": "assistant", "system": "system"}[m.From]
			if !ok {
				return nil, len(raw), fmt.Errorf("%s item %d: conversations[%d].from %q; %s", path, i+1, j, m.From, accept)
			}
			rs.turns = append(rs.turns, rawTurn{role: role, text: m.Value, delayMs: -1, atMs: -1})
		}
		if err := checkHasUser(rs, accept); err != nil {
			return nil, len(raw), fmt.Errorf("%s item %d: %v", path, i+1, err)
		}
		if rs.id == "" {
			rs.id = fmt.Sprintf("item-%d", i+1)
		}
		out = append(out, rs)
	}
	return out, len(raw), nil
}

func checkHasUser(rs rawSession, accept string) error {
	for _, t := range rs.turns {
		if t.role == "user" && (strings.TrimSpace(t.text) != "" || len(t.images) > 0) {
			return nil
		}
	}
	return fmt.Errorf("no user message with text or images; %s", accept)
}

// wholeNumber reads the first of the given numbers that is set: 0 when none is, an error when it is
// not a whole number ≥ 1.
func wholeNumber(values ...json.Number) (int, error) {
	for _, v := range values {
		if v == "" {
			continue
		}
		n, err := v.Int64()
		if err != nil || n < 1 || n > 1_000_000 {
			return 0, fmt.Errorf("output length %q is not a whole number from 1 to 1,000,000", v)
		}
		return int(n), nil
	}
	return 0, nil
}

// jsonProblem says what encoding/json found wrong, without quoting the text around it.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("%s is %s, not %s", typ.Field, typ.Value, typ.Type)
	}
	return "invalid JSON"
}
