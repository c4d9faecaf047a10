package mock

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// This file holds the request features beyond plain chat: tool calls (Config.ToolCallRate),
// structured output (Config.JSONValidRate) and the served model list (Config.Models).

// tool is one entry of a request's `tools`.
type tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// responseFormat is a request's `response_format`.
type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

// toolCall is one call the mock decided to make.
type toolCall struct {
	id, name, arguments string
	pieces              []string // arguments, cut into the pieces that are streamed
}

// featureSalt seeds the draws of this file apart from the plan's main stream, so a request without
// tools or response_format is answered exactly as before these features existed.
const featureSalt = 0x7f4a7c159e3779b9

// servesModel says whether a request may name model: any model when Config.Models is empty, else
// one of Models or Config.Model.
func (c Config) servesModel(model string) bool {
	return len(c.Models) == 0 || model == c.Model || slices.Contains(c.Models, model)
}

// listedModels is what /v1/models lists: Config.Model (if set), then Models, without repeats.
func (c Config) listedModels() []string {
	var out []string
	if c.Model != "" {
		out = append(out, c.Model)
	}
	for _, m := range c.Models {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// toolChoice reads `tool_choice`: "auto" (or absent), "none", "required", or the name of the
// function a {"type": "function", "function": {"name": ...}} object forces.
func (r *request) toolChoice() (mode, name string, err error) {
	if len(r.ToolChoice) == 0 || string(r.ToolChoice) == "null" {
		return "auto", "", nil
	}
	var s string
	if json.Unmarshal(r.ToolChoice, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return s, "", nil
		}
		return "", "", fmt.Errorf("tool_choice %q: accepted: auto, none, required or {\"type\": \"function\", \"function\": {\"name\": ...}}", s)
	}
	var named struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(r.ToolChoice, &named); err != nil || named.Function.Name == "" {
		return "", "", fmt.Errorf("tool_choice: accepted: auto, none, required or {\"type\": \"function\", \"function\": {\"name\": ...}}")
	}
	return "named", named.Function.Name, nil
}

// planFeatures decides, for a chat request, whether it is answered with tool calls or with a JSON
// document, and fixes their text and chunks. It replaces the plan's content chunks accordingly.
func (s *Server) planFeatures(p *plan, req *request, maxTokens int) error {
	mode, forced, err := req.toolChoice()
	if err != nil {
		return err
	}
	var funcs []tool
	for _, t := range req.Tools {
		if (t.Type == "" || t.Type == "function") && t.Function.Name != "" {
			funcs = append(funcs, t)
		}
	}
	if forced != "" && !slices.ContainsFunc(funcs, func(t tool) bool { return t.Function.Name == forced }) {
		return fmt.Errorf("tool_choice names the function %q, which is not in tools", forced)
	}
	rng := rand.New(rand.NewPCG(s.cfg.Seed^featureSalt, p.sum))
	u := rng.Float64() // drawn always, so the draws after it do not depend on the rate
	if len(funcs) > 0 && mode != "none" && (mode == "required" || mode == "named" || u < s.cfg.ToolCallRate) {
		p.toolCalls = makeToolCalls(rng, funcs, forced)
		p.toolDeltas = toolChunks(p.toolCalls)
		p.content = 0
		for _, c := range p.toolCalls {
			p.content += 1 + len(c.pieces) // the header chunk (id and name), then the argument pieces
		}
		p.faultAt = (p.reasoning + p.content) / 2
		return nil
	}
	rf := req.ResponseFormat
	if rf == nil || (rf.Type != "json_object" && rf.Type != "json_schema") {
		return nil
	}
	var schema map[string]any
	if rf.Type == "json_schema" && rf.JSONSchema != nil && len(rf.JSONSchema.Schema) > 0 {
		if err := json.Unmarshal(rf.JSONSchema.Schema, &schema); err != nil {
			return fmt.Errorf("response_format.json_schema.schema: %v", err)
		}
	}
	valid := rng.Float64() < s.cfg.JSONValidRate
	doc := jsonDocument(rng, schema, p.content, s.tokens)
	if !valid { // truncated: the closing brace (bracket, quote) is missing
		if strings.HasSuffix(doc, "}") || strings.HasSuffix(doc, "]") || strings.HasSuffix(doc, `"`) {
			doc = doc[:len(doc)-1]
		} else {
			doc += ","
		}
	}
	_, pieces, err := s.tokens.codec.Encode(doc)
	if err != nil || len(pieces) == 0 {
		pieces = []string{doc}
	}
	if budget := max(1, maxTokens-p.reasoning); len(pieces) > budget {
		pieces, p.cut = pieces[:budget], true // cut at max_tokens: invalid, as a real server's would be
	}
	p.jsonPieces = pieces
	p.content = len(pieces)
	p.faultAt = (p.reasoning + p.content) / 2
	return nil
}

// makeToolCalls picks 1–2 of the request's functions (the forced one alone, if any) and writes each
// call's id and arguments, cut into 3–6 pieces.
func makeToolCalls(rng *rand.Rand, funcs []tool, forced string) []toolCall {
	var picked []tool
	if forced != "" {
		for _, f := range funcs {
			if f.Function.Name == forced {
				picked = []tool{f}
				break
			}
		}
	} else {
		n := min(len(funcs), 1+rng.IntN(2))
		for _, i := range rng.Perm(len(funcs))[:n] {
			picked = append(picked, funcs[i])
		}
	}
	calls := make([]toolCall, len(picked))
	for i, f := range picked {
		var schema map[string]any
		_ = json.Unmarshal(f.Function.Parameters, &schema)
		args := argumentsFor(rng, schema)
		calls[i] = toolCall{id: fmt.Sprintf("call_%016x", rng.Uint64()), name: f.Function.Name, arguments: args,
			pieces: splitPieces(rng, args, 3+rng.IntN(4))}
	}
	return calls
}

// argumentsFor writes a small JSON object for a function's parameters: its required properties (or
// its first two, when none is required), or {"query": ..., "limit": N} when it declares none.
func argumentsFor(rng *rand.Rand, schema map[string]any) string {
	props, _ := schema["properties"].(map[string]any)
	if len(props) == 0 {
		return fmt.Sprintf(`{"query":%s,"limit":%d}`, jsonString(words(rng, 1+rng.IntN(4))), 1+rng.IntN(10))
	}
	keys := requiredKeys(schema)
	if len(keys) == 0 {
		keys = sortedKeys(props)[:min(2, len(props))]
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		sub, _ := props[k].(map[string]any)
		b.WriteString(jsonString(k) + ":" + jsonValue(rng, sub, 1))
	}
	b.WriteByte('}')
	return b.String()
}

// splitPieces cuts s at n−1 distinct random places (fewer when s is short).
func splitPieces(rng *rand.Rand, s string, n int) []string {
	n = max(1, min(n, len(s)))
	cuts := rng.Perm(len(s) - 1)[:n-1]
	for i := range cuts {
		cuts[i]++
	}
	sort.Ints(cuts)
	pieces := make([]string, 0, n)
	prev := 0
	for _, c := range cuts {
		pieces = append(pieces, s[prev:c])
		prev = c
	}
	return append(pieces, s[prev:])
}

// jsonDocument writes the structured answer: for a schema, an object with every required property of
// its top level (all its properties when none is required) holding a value of the declared type; for
// json_object, {"answer": ...}. The first free-text string is padded so the document is about target
// tokens long, as a model's answer fills its drawn length.
func jsonDocument(rng *rand.Rand, schema map[string]any, target int, tc *tokenCache) string {
	props, _ := schema["properties"].(map[string]any)
	keys := requiredKeys(schema)
	if len(keys) == 0 {
		keys = sortedKeys(props)
	}
	if schema == nil || (len(keys) == 0 && len(props) == 0 && schemaType(schema) != "object") {
		if schema != nil { // a schema whose top level is not an object: a value of its type
			return jsonValue(rng, schema, 0)
		}
		keys, props = []string{"answer"}, map[string]any{"answer": map[string]any{"type": "string"}}
	}
	values := make([]string, len(keys))
	pad := -1
	for i, k := range keys {
		sub, _ := props[k].(map[string]any)
		values[i] = jsonValue(rng, sub, 1)
		if _, enum := sub["enum"]; pad < 0 && schemaType(sub) == "string" && !enum && sub["format"] == nil && sub["pattern"] == nil {
			pad = i
		}
	}
	build := func() string {
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(jsonString(k) + ": " + values[i])
		}
		b.WriteByte('}')
		return b.String()
	}
	doc := build()
	if pad < 0 {
		return doc
	}
	var base string
	_ = json.Unmarshal([]byte(values[pad]), &base)
	n, err := tc.codec.Count(doc)
	if err != nil || n >= target {
		return doc
	}
	padding := strings.Fields(words(rng, target-n))
	// A word inside a JSON string is not always one token: trim until the document fits the target.
	for {
		values[pad] = jsonString(strings.TrimSpace(base + " " + strings.Join(padding, " ")))
		doc = build()
		if n, err = tc.codec.Count(doc); err != nil || n <= target || len(padding) == 0 {
			break
		}
		padding = padding[:max(0, len(padding)-(n-target))]
	}
	return doc
}

// jsonValue writes a value of the schema's type; depth bounds nesting.
func jsonValue(rng *rand.Rand, schema map[string]any, depth int) string {
	if c, ok := schema["const"]; ok {
		b, _ := json.Marshal(c)
		return string(b)
	}
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		b, _ := json.Marshal(enum[rng.IntN(len(enum))])
		return string(b)
	}
	for _, alt := range []string{"anyOf", "oneOf", "allOf"} {
		if subs, ok := schema[alt].([]any); ok && len(subs) > 0 {
			if sub, ok := subs[0].(map[string]any); ok {
				return jsonValue(rng, sub, depth)
			}
		}
	}
	bound := func(key string, def float64) float64 {
		if v, ok := schema[key].(float64); ok {
			return v
		}
		return def
	}
	switch schemaType(schema) {
	case "integer":
		lo, hi := int(bound("minimum", 0)), int(bound("maximum", 100))
		return strconv.Itoa(lo + rng.IntN(max(1, hi-lo+1)))
	case "number":
		lo, hi := bound("minimum", 0), bound("maximum", 100)
		return strconv.FormatFloat(lo+float64(rng.IntN(100))/100*(hi-lo), 'f', 2, 64)
	case "boolean":
		return strconv.FormatBool(rng.IntN(2) == 1)
	case "null":
		return "null"
	case "array":
		items, _ := schema["items"].(map[string]any)
		n := max(int(bound("minItems", 1)), 1+rng.IntN(2))
		if depth >= 4 {
			return "[]"
		}
		parts := make([]string, n)
		for i := range parts {
			parts[i] = jsonValue(rng, items, depth+1)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case "object":
		props, _ := schema["properties"].(map[string]any)
		keys := requiredKeys(schema)
		if depth >= 4 {
			keys = nil
		}
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			sub, _ := props[k].(map[string]any)
			parts = append(parts, jsonString(k)+": "+jsonValue(rng, sub, depth+1))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	default:
		return jsonString(words(rng, 1+rng.IntN(4)))
	}
}

// schemaType is the schema's declared type: the first non-null of a list; inferred from
// properties or items when absent; "string" when nothing says.
func schemaType(schema map[string]any) string {
	switch t := schema["type"].(type) {
	case string:
		return t
	case []any:
		for _, v := range t {
			if s, ok := v.(string); ok && s != "null" {
				return s
			}
		}
		if len(t) > 0 {
			return "null"
		}
	}
	if _, ok := schema["properties"]; ok {
		return "object"
	}
	if _, ok := schema["items"]; ok {
		return "array"
	}
	return "string"
}

func requiredKeys(schema map[string]any) []string {
	req, _ := schema["required"].([]any)
	var keys []string
	for _, k := range req {
		if s, ok := k.(string); ok && !slices.Contains(keys, s) {
			keys = append(keys, s)
		}
	}
	return keys
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// words is n of the mock's output words, without the leading space.
func words(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(outputWords[rng.IntN(len(outputWords))])
	}
	return strings.TrimPrefix(b.String(), " ")
}

// toolCallsJSON is the full tool_calls array of a non-streamed answer.
func toolCallsJSON(calls []toolCall) string {
	parts := make([]string, len(calls))
	for i, c := range calls {
		parts[i] = `{"id":` + jsonString(c.id) + `,"type":"function","function":{"name":` + jsonString(c.name) + `,"arguments":` + jsonString(c.arguments) + `}}`
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// toolChunks are the streamed deltas of the calls, as vLLM's tool parsers send them: per call a
// header with index, id, type, name and empty arguments, then one delta per argument piece.
func toolChunks(calls []toolCall) []string {
	var out []string
	for i, c := range calls {
		idx := strconv.Itoa(i)
		out = append(out, `{"tool_calls":[{"index":`+idx+`,"id":`+jsonString(c.id)+`,"type":"function","function":{"name":`+jsonString(c.name)+`,"arguments":""}}]}`)
		for _, piece := range c.pieces {
			out = append(out, `{"tool_calls":[{"index":`+idx+`,"function":{"arguments":`+jsonString(piece)+`}}]}`)
		}
	}
	return out
}
