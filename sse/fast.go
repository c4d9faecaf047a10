package sse

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/plload/plload/jsonstr"
)

// fastDecode decodes the common chunk — choices with a delta (or completions text) and a finish
// reason, no usage, no error — without reflection. It returns false for anything else, and the
// caller falls back to encoding/json; a differential fuzz test holds the two to the same answers.
func fastDecode(data []byte, ev *Event) bool {
	s := scanner{b: data}
	var out Event
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "choices":
			return s.array(func() bool { return s.object(func(k []byte) bool { return s.choice(k, &out) }) })
		case "usage", "error":
			return s.null() // OpenAI sends "usage":null in every chunk; a real value takes the slow path
		default:
			return s.skip()
		}
	})
	if !ok || !s.end() {
		return false
	}
	ev.Content, ev.Reasoning, ev.ToolCall, ev.Role, ev.FinishReason = out.Content, out.Reasoning, out.ToolCall, out.Role, out.FinishReason
	ev.ToolCalls = out.ToolCalls
	return true
}

func (s *scanner) choice(key []byte, out *Event) bool {
	switch string(key) {
	case "delta":
		if s.null() {
			return true
		}
		return s.object(func(k []byte) bool {
			switch string(k) {
			case "content":
				return s.text(&out.Content)
			case "reasoning_content", "reasoning":
				return s.text(&out.Reasoning)
			case "role":
				var role string
				ok := s.text(&role)
				if role != "" {
					out.Role = role
				}
				return ok
			case "tool_calls":
				if s.null() {
					return true
				}
				return s.array(func() bool { return s.toolCall(out) })
			default:
				return s.skip()
			}
		})
	case "text":
		return s.text(&out.Content)
	case "finish_reason":
		if s.null() {
			return true
		}
		var reason string
		ok := s.text(&reason)
		out.FinishReason = reason
		return ok
	default:
		return s.skip()
	}
}

// toolCall reads one entry of delta.tool_calls: a JSON object (anything else, a null included, is
// left to encoding/json).
func (s *scanner) toolCall(out *Event) bool {
	var d ToolCallDelta
	ok := s.object(func(k []byte) bool {
		switch string(k) {
		case "index":
			return s.index(&d.Index)
		case "id":
			return s.text(&d.ID)
		case "type":
			return s.text(&d.Type)
		case "function":
			if s.null() {
				return true
			}
			return s.object(func(k []byte) bool {
				switch string(k) {
				case "name":
					return s.text(&d.Name)
				case "arguments":
					return s.text(&d.Arguments)
				default:
					return s.skip()
				}
			})
		default:
			return s.skip()
		}
	})
	if !ok {
		return false
	}
	out.ToolCall += d.Name + d.Arguments
	out.ToolCalls = append(out.ToolCalls, d)
	return true
}

// index reads a tool call's index: null (0) or a plain integer of at most 9 digits, what servers
// send; any other number goes to encoding/json.
func (s *scanner) index(dst *int) bool {
	if s.null() {
		*dst = 0
		return true
	}
	start := s.i
	if !s.number() {
		return false
	}
	digits := s.b[start:s.i]
	if len(digits) > 9 {
		return false
	}
	n := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	*dst = n
	return true
}

func repeated(seen [][]byte, key []byte) bool {
	for _, k := range seen {
		if bytes.Equal(k, key) {
			return true
		}
	}
	return false
}

// knownKeys are the keys the decoders read. encoding/json matches keys without regard to case, so a
// key equal to one of them only up to case (rare and odd) goes to the slow path.
var knownKeys = []string{"choices", "usage", "error", "delta", "text", "finish_reason", "content",
	"reasoning_content", "reasoning", "role", "tool_calls", "index", "id", "type", "function", "name", "arguments"}

func caseVariant(key []byte) bool {
	// Only an upper-case ASCII letter or a non-ASCII byte (Unicode folds 'ſ' to 's' and the Kelvin
	// sign to 'k') can make a key fold to another; most keys have neither.
	plain := true
	for _, c := range key {
		if 'A' <= c && c <= 'Z' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return false
	}
	for _, k := range knownKeys {
		if s := string(key); s != k && strings.EqualFold(s, k) {
			return true
		}
	}
	return false
}

// scanner walks JSON bytes; every method returns false on anything it does not fully understand.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scanner) end() bool { s.ws(); return s.i == len(s.b) }

func (s *scanner) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) null() bool {
	s.ws()
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

func (s *scanner) object(field func(key []byte) bool) bool {
	if !s.eat('{') {
		return false
	}
	if s.eat('}') {
		return true
	}
	var seenBuf [8][]byte
	seen := seenBuf[:0]
	for {
		key, ok := s.rawString()
		if !ok || bytes.IndexByte(key, '\\') >= 0 || repeated(seen, key) || caseVariant(key) || !s.eat(':') {
			return false // escaped, repeated or case-folded keys: leave them to encoding/json's rules
		}
		seen = append(seen, key)
		if !field(key) {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat('}')
	}
}

func (s *scanner) array(item func() bool) bool {
	if !s.eat('[') {
		return false
	}
	if s.eat(']') {
		return true
	}
	for {
		if !item() {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat(']')
	}
}

// rawString returns a string's bytes without its quotes (escapes left as written).
func (s *scanner) rawString() ([]byte, bool) {
	s.ws()
	raw, end, ok := jsonstr.Raw(s.b, s.i)
	if !ok {
		return nil, false
	}
	s.i = end
	return raw, true
}

// text reads a string (or null, leaving dst alone) and appends it to dst, as the slow path does.
func (s *scanner) text(dst *string) bool {
	if s.null() {
		return true
	}
	raw, ok := s.rawString()
	if !ok {
		return false
	}
	if !utf8.Valid(raw) {
		return false // encoding/json's replacement of bad bytes is left to it
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		*dst += string(raw)
		return true
	}
	// Escapes (every tool-call argument piece has some): unescape here rather than through
	// encoding/json, which allocates several times per string.
	var stack [128]byte
	v, ok := jsonstr.AppendUnescaped(stack[:0], raw)
	if !ok {
		return false
	}
	*dst += string(v)
	return true
}

// skip passes over any value: a string, a number or literal, or a nested object or array.
func (s *scanner) skip() bool {
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; c {
	case '"':
		_, ok := s.rawString()
		return ok
	case '{':
		return s.object(func([]byte) bool { return s.skip() })
	case '[':
		return s.array(s.skip)
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.null()
	default:
		return s.number()
	}
}

func (s *scanner) literal(word string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return false
	}
	s.i += len(word)
	return true
}

// number passes over a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?. Its value is
// never needed (only skipped fields are numbers here), so magnitude does not matter, as it does not
// to encoding/json for a field the struct lacks.
func (s *scanner) number() bool {
	digits := func() int {
		n := 0
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case digits() == 0:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
