package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/plload/plload/tokenizer"
)

// The request features of docs/scenario.md: agent sessions with tools, structured output, a model mix,
// non-streamed requests. Batch stages live with the other load modes (mode_batch.go).

// ToolsSpec is session.tools: every request of the session carries tools, and the server's tool
// calls are answered with synthetic results, round after round, before the next user turn.
type ToolsSpec struct {
	// Count is the number of synthetic function schemas (default 4 when File is not set; with File,
	// the file's count).
	Count int `yaml:"count"`
	// File is a JSON array in OpenAI's "tools" layout (relative to the scenario file), sent as is.
	File string `yaml:"file,omitempty"`
	// SchemaTokens is the length of each synthetic schema's description, in the scenario's tokenizer.
	SchemaTokens Dist `yaml:"schema_tokens,flow" limit:"1000000"`
	// Choice is tool_choice: auto, required or none.
	Choice string `yaml:"choice"`
	// ResultTokens is the length of each synthetic tool result.
	ResultTokens Dist `yaml:"result_tokens,flow" limit:"1000000"`
	// MaxRounds is the most tool rounds per user turn (≥ 1).
	MaxRounds int `yaml:"max_rounds"`
}

// ResponseFormatSpec is session.response_format: structured output asked on every request.
type ResponseFormatSpec struct {
	// Type is json_schema or json_object.
	Type string `yaml:"type"`
	// Schema is the JSON schema inline (a mapping), or {file: path} (relative to the scenario
	// file); json_schema only.
	Schema any `yaml:"schema,omitempty"`
	// Name is json_schema.name (default "answer" with type json_schema).
	Name string `yaml:"name,omitempty"`
}

// Defaults of session.tools and session.response_format.
const (
	DefaultToolCount          = 4
	DefaultToolChoice         = "auto"
	DefaultToolMaxRounds      = 4
	DefaultResponseFormatName = "answer"
	// maxTools bounds count: each schema is sent with every request.
	maxTools = 1000
)

// Response format types.
const (
	ResponseJSONSchema = "json_schema"
	ResponseJSONObject = "json_object"
)

// Streamed reports whether requests are streamed: target.stream, true when not set.
func (s *Scenario) Streamed() bool { return s.Target.Stream == nil || *s.Target.Stream }

// ModelNames are the models the run asks for: target.models' names, or [target.model].
func (s *Scenario) ModelNames() []string {
	if len(s.Target.Models) == 0 {
		return []string{s.Target.Model}
	}
	out := make([]string, len(s.Target.Models))
	for i, m := range s.Target.Models {
		out[i] = m.Name
	}
	return out
}

// featureDefaults fills the keys of session.tools and session.response_format the file left out.
func (s *Scenario) featureDefaults() {
	if t := s.Session.Tools; t != nil {
		if !s.has("session.tools.count") && t.File == "" {
			t.Count = DefaultToolCount
		}
		if !s.has("session.tools.schema_tokens") {
			t.SchemaTokens = Uniform(100, 300)
			t.SchemaTokens.Limit = 1_000_000
		}
		if t.Choice == "" {
			t.Choice = DefaultToolChoice
		}
		if !s.has("session.tools.result_tokens") {
			t.ResultTokens = Uniform(200, 2000)
			t.ResultTokens.Limit = 1_000_000
		}
		if !s.has("session.tools.max_rounds") {
			t.MaxRounds = DefaultToolMaxRounds
		}
	}
	if rf := s.Session.ResponseFormat; rf != nil && rf.Name == "" && rf.Type == ResponseJSONSchema {
		rf.Name = DefaultResponseFormatName
	}
}

var schemaNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// featureRules checks session.tools, session.response_format, target.models, target.stream and the
// mock's feature rates.
func (c *checker) featureRules() {
	s := c.s
	if t := s.Session.Tools; t != nil {
		c.toolsRules(t)
	}
	if rf := s.Session.ResponseFormat; rf != nil {
		c.responseFormatRules(rf)
	}
	seen := map[string]int{}
	for i, m := range s.Target.Models {
		p := fmt.Sprintf("target.models[%d]", i)
		if strings.TrimSpace(m.Name) == "" {
			c.errorf(p+".name", "required but missing; accepted: the model or adapter name the server serves (see its /v1/models)")
		} else if j, dup := seen[m.Name]; dup {
			c.errorf(p+".name", "found %q, already target.models[%d]; accepted: each model once (give it the sum of the weights)", m.Name, j)
		} else {
			seen[m.Name] = i
		}
		if m.Weight <= 0 || math.IsInf(m.Weight, 0) || math.IsNaN(m.Weight) {
			c.errorf(p+".weight", "found %g; accepted: a weight > 0 (its share is weight ÷ the sum of the weights)", m.Weight)
		}
	}
	if s.has("target.models") && len(s.Target.Models) == 0 && !c.bad["target.models"] {
		c.errorf("target.models", "the list is empty; accepted: [{name: base-model, weight: 3}, {name: sql-lora, weight: 1}], or leave it out (target.model)")
	}
	if !s.Streamed() {
		c.nonStreamedSLO()
	}
	if m := s.Target.Mock; m != nil {
		if m.ToolCallRate != nil {
			c.fraction("target.mock.tool_call_rate", *m.ToolCallRate)
		}
		if m.JSONValidRate != nil {
			c.fraction("target.mock.json_valid_rate", *m.JSONValidRate)
		}
		for i, name := range m.Models {
			if strings.TrimSpace(name) == "" {
				c.errorf(fmt.Sprintf("target.mock.models[%d]", i), "found an empty name; accepted: the model names the mock serves")
			}
		}
	}
}

// streamOnlyMetrics are the latency metrics only a stream measures. TPOT is among them: it is
// (E2E − TTFT) ÷ (OSL − 1), and a whole answer has no TTFT, so a TPOT limit on a non-streamed run
// could never be judged (its verdict N/A on every stage) while goodput would count it as met.
var streamOnlyMetrics = []string{"ttft", "ttfo", "tpot", "itl"}

// nonStreamedSLO refuses an SLO (or gate rule) on what only a stream has.
func (c *checker) nonStreamedSLO() {
	s := c.s
	const why = "a non-streamed run has no TTFT, TTFO, TPOT or ITL (target.stream is false: E2E and tokens come from the whole response, with no first-token time); accepted: limits on e2e, an error rate, or target.stream: true"
	for _, key := range []string{"ttft_p95", "itl_p95"} {
		if s.has("slo." + key) {
			c.errorf("slo."+key, "%s", why)
		}
	}
	for _, metric := range streamOnlyMetrics {
		for _, stat := range SLOStats {
			if s.SLO.statLimit(metric, stat) != 0 {
				c.errorf("slo."+metric+"."+stat, "%s", why)
			}
		}
	}
	for i, rule := range s.Gate {
		r := strings.ToLower(strings.TrimSpace(rule))
		for _, metric := range streamOnlyMetrics {
			if strings.HasPrefix(r, metric+"_") || strings.HasPrefix(r, metric+" ") {
				c.errorf(fmt.Sprintf("gate[%d]", i), "found %q: %s", rule, why)
				break
			}
		}
	}
}

func (c *checker) toolsRules(t *ToolsSpec) {
	s := c.s
	const p = "session.tools"
	if t.File == "" {
		if t.Count < 1 || t.Count > maxTools {
			c.errorf(p+".count", "found %d; accepted: a whole number from 1 to %d (synthetic function schemas), or file: a tools.json", t.Count, maxTools)
		}
		c.dist(p+".schema_tokens", t.SchemaTokens)
	} else {
		tools, n, err := readToolsFile(s.resolvePath(t.File))
		if err != nil {
			c.errorf(p+".file", "%v", err)
		} else {
			s.toolsFile = tools
			if s.has(p+".count") && t.Count != 0 && t.Count != n {
				c.errorf(p+".count", "found %d, and %s has %d tools; accepted: no count with file (it is the file's), or the file's count", t.Count, t.File, n)
			}
			t.Count = n
		}
	}
	c.oneOf(p+".choice", t.Choice, "auto", "required", "none")
	c.dist(p+".result_tokens", t.ResultTokens)
	if t.MaxRounds < 1 {
		c.errorf(p+".max_rounds", "found %d; accepted: a whole number ≥ 1 (tool rounds per user turn, at most)", t.MaxRounds)
	}
}

const toolsLayout = `a JSON array in OpenAI's tools layout: [{"type": "function", "function": {"name": "get_weather", "description": "...", "parameters": {"type": "object", ...}}}]`

// readToolsFile reads a tools file and checks it is in OpenAI's layout; it returns the array as
// compact JSON and its number of tools.
func readToolsFile(path string) ([]byte, int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot read %q: %v; accepted: %s", path, err, toolsLayout)
	}
	bad := func(format string, args ...any) ([]byte, int, error) {
		return nil, 0, fmt.Errorf("%s: %s; accepted: %s", path, fmt.Sprintf(format, args...), toolsLayout)
	}
	var top any
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&top); err != nil {
		return bad("not JSON (%v)", err)
	}
	if dec.More() {
		return bad("more than one JSON value")
	}
	list, ok := top.([]any)
	if !ok {
		return bad("found %s at the top", jsonKind(top))
	}
	if len(list) == 0 {
		return bad("the array is empty")
	}
	names := map[string]int{}
	for i, item := range list {
		tool, ok := item.(map[string]any)
		if !ok {
			return bad("[%d] is %s, not an object", i, jsonKind(item))
		}
		if typ, ok := tool["type"].(string); !ok || typ != "function" {
			return bad("[%d].type is %s; it must be \"function\"", i, jsonDescribe(tool["type"]))
		}
		fn, ok := tool["function"].(map[string]any)
		if !ok {
			return bad("[%d].function is %s, not an object", i, jsonDescribe(tool["function"]))
		}
		name, ok := fn["name"].(string)
		if !ok || strings.TrimSpace(name) == "" {
			return bad("[%d].function.name is %s; it must be a non-empty string", i, jsonDescribe(fn["name"]))
		}
		if j, dup := names[name]; dup {
			return bad("[%d].function.name %q is also [%d]'s; each function once", i, name, j)
		}
		names[name] = i
		if _, ok := fn["parameters"].(map[string]any); !ok {
			return bad("[%d].function.parameters is %s; it must be a JSON schema object such as {\"type\": \"object\", \"properties\": {...}}", i, jsonDescribe(fn["parameters"]))
		}
		if d, set := fn["description"]; set {
			if _, ok := d.(string); !ok {
				return bad("[%d].function.description is %s; it must be a string", i, jsonDescribe(d))
			}
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return bad("not JSON (%v)", err)
	}
	return buf.Bytes(), len(list), nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "a value"
}

func jsonDescribe(v any) string {
	switch x := v.(type) {
	case nil:
		return "missing"
	case string:
		return fmt.Sprintf("%q", x)
	}
	return jsonKind(v)
}

func (c *checker) responseFormatRules(rf *ResponseFormatSpec) {
	s := c.s
	const p = "session.response_format"
	if !c.require(p+".type", "json_schema (with a schema) or json_object") {
		return
	}
	c.oneOf(p+".type", rf.Type, ResponseJSONSchema, ResponseJSONObject)
	if (rf.Type == ResponseJSONSchema || rf.Name != "") && !schemaNamePattern.MatchString(rf.Name) {
		c.errorf(p+".name", "found %q; accepted: 1 to 64 letters, digits, '_' or '-' (OpenAI's rule for json_schema.name)", rf.Name)
	}
	switch rf.Type {
	case ResponseJSONObject:
		if rf.Schema != nil {
			c.errorf(p+".schema", "a schema is sent only with type json_schema; accepted: type: json_schema, or no schema")
		}
	case ResponseJSONSchema:
		if !s.has(p+".schema") || rf.Schema == nil {
			if !c.bad[p+".schema"] {
				c.errorf(p+".schema", "required with type json_schema; accepted: a JSON schema inline (a mapping such as {type: object, properties: {...}}) or {file: answer.schema.json}")
			}
			return
		}
		doc, where, err := s.schemaDocument(rf.Schema)
		if err != nil {
			c.errorf(p+".schema", "%v", err)
			return
		}
		compiled, err := compileSchema(doc, where)
		if err != nil {
			c.errorf(p+".schema", "the schema does not compile: %v; accepted: a valid JSON schema (draft 2020-12 by default)", err)
			return
		}
		s.schemaDoc, s.schema = doc, compiled
	}
}

// schemaFile is the path of a {file: path} schema ("" for an inline schema).
func schemaFile(schema any) string {
	m, ok := schema.(map[string]any)
	if !ok || len(m) != 1 {
		return ""
	}
	f, _ := m["file"].(string)
	return f
}

// schemaDocument is the schema as JSON values (json.Number for numbers), read from its file or
// converted from the YAML, and a URL naming it for the compiler's messages.
func (s *Scenario) schemaDocument(schema any) (any, string, error) {
	if f := schemaFile(schema); f != "" {
		path := s.resolvePath(f)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, "", fmt.Errorf("cannot read %q: %v; accepted: a JSON schema file", f, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return nil, "", fmt.Errorf("%s: not JSON (%v); accepted: a JSON schema file", f, err)
		}
		if _, ok := doc.(map[string]any); !ok {
			return nil, "", fmt.Errorf("%s: found %s; accepted: a JSON schema object", f, jsonKind(doc))
		}
		return doc, "file:///" + strings.TrimLeft(filepathToSlash(path), "/"), nil
	}
	if _, ok := schema.(map[string]any); !ok {
		return nil, "", fmt.Errorf("found %s; accepted: a JSON schema inline (a mapping) or {file: answer.schema.json}", yamlKindOf(schema))
	}
	data, err := json.Marshal(JSONValue(schema))
	if err != nil {
		return nil, "", fmt.Errorf("cannot be written as JSON (%v); accepted: a JSON schema", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, "", err
	}
	return doc, "file:///scenario/response_format.schema.json", nil
}

func filepathToSlash(p string) string { return strings.ReplaceAll(p, "\\", "/") }

func yamlKindOf(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("the text %q", v)
	case bool:
		return "a boolean"
	case nil:
		return "nothing"
	}
	return "a " + fmt.Sprintf("%T", v)
}

// JSONValue turns decoded YAML (maps with any keys, map[any]any from nested YAML) into values
// encoding/json writes.
func JSONValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = JSONValue(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = JSONValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = JSONValue(e)
		}
		return out
	}
	return v
}

func compileSchema(doc any, url string) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// features is the built form of the request features, shared by every session of the run.
type features struct {
	tools      []byte
	toolTokens []int // the drawn description length of each synthetic tool
	choice     string
	maxRounds  int
	results    Dist
	seed       uint64
	lang       string
	tok        tokenizer.Tokenizer
	gens       sync.Pool // *TextGen: a generator's count cache is not safe to share

	responseFormat []byte
	schema         *jsonschema.Schema
	rfType         string

	model  string
	names  []string
	cum    []float64 // cumulative shares of target.models, the last 1
	offset float64   // the seed's start in the model pick's sequence
}

// RNG streams of the features (after dataset.go's).
const (
	streamTools uint64 = iota + 0x40
	streamToolResult
	streamModel
)

// buildFeatures builds the tools, the response format and the model mix of a checked scenario.
func (s *Scenario) buildFeatures(g *TextGen) (*features, error) {
	f := &features{seed: s.Seed, lang: s.Session.Language, tok: s.Tokenizer(), model: s.Target.Model}
	f.gens.New = func() any {
		tg, err := NewTextGen(f.lang, f.tok)
		if err != nil {
			return nil
		}
		return tg
	}
	if t := s.Session.Tools; t != nil {
		f.choice, f.maxRounds, f.results = t.Choice, t.MaxRounds, t.ResultTokens
		if t.File != "" {
			f.tools = s.toolsFile
			if f.tools == nil { // checked elsewhere (a test's scenario): read it now
				tools, _, err := readToolsFile(s.resolvePath(t.File))
				if err != nil {
					return nil, fmt.Errorf("session.tools.file: %w", err)
				}
				f.tools = tools
			}
		} else {
			f.tools, f.toolTokens = s.syntheticTools(g, t)
		}
	}
	if rf := s.Session.ResponseFormat; rf != nil {
		f.rfType = rf.Type
		if rf.Type == ResponseJSONSchema {
			if s.schema == nil {
				doc, url, err := s.schemaDocument(rf.Schema)
				if err != nil {
					return nil, fmt.Errorf("session.response_format.schema: %w", err)
				}
				if s.schema, err = compileSchema(doc, url); err != nil {
					return nil, fmt.Errorf("session.response_format.schema: %w", err)
				}
				s.schemaDoc = doc
			}
			f.schema = s.schema
			body, err := json.Marshal(map[string]any{"type": ResponseJSONSchema,
				"json_schema": map[string]any{"name": rf.Name, "schema": s.schemaDoc, "strict": true}})
			if err != nil {
				return nil, fmt.Errorf("session.response_format.schema: %w", err)
			}
			f.responseFormat = body
		} else {
			f.responseFormat = []byte(`{"type":"json_object"}`)
		}
	}
	if ms := s.Target.Models; len(ms) > 0 {
		sum := 0.0
		for _, m := range ms {
			sum += m.Weight
		}
		acc := 0.0
		for _, m := range ms {
			acc += m.Weight
			f.names = append(f.names, m.Name)
			f.cum = append(f.cum, acc/sum)
		}
		f.cum[len(f.cum)-1] = 1
		f.offset = s.rng(streamModel, 0).Float64()
	}
	return f, nil
}

var (
	toolVerbs = []string{"get", "search", "list", "create", "update", "cancel", "check", "find", "book",
		"send", "fetch", "lookup", "schedule", "compute", "validate", "summarize"}
	toolNouns = []string{"orders", "weather", "invoice", "flights", "customer", "inventory", "tickets",
		"calendar", "shipment", "account", "payments", "documents", "reviews", "products", "hotels", "routes"}
	// toolParams are the parameters a synthetic schema picks from, each with its JSON schema.
	toolParams = []struct {
		name   string
		schema map[string]any
	}{
		{"query", map[string]any{"type": "string", "description": "What to look for, in plain words"}},
		{"id", map[string]any{"type": "string", "description": "The record's identifier"}},
		{"limit", map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "description": "The most results to return"}},
		{"date", map[string]any{"type": "string", "format": "date", "description": "A day, as YYYY-MM-DD"}},
		{"city", map[string]any{"type": "string", "description": "A city name"}},
		{"amount", map[string]any{"type": "number", "description": "An amount in the account's currency"}},
		{"status", map[string]any{"type": "string", "enum": []string{"open", "pending", "closed"}, "description": "The state to filter by"}},
	}
)

type toolJSON struct {
	Type     string       `json:"type"`
	Function functionJSON `json:"function"`
}

type functionJSON struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// syntheticTools writes t.Count function schemas: names verb_noun in a seeded order, each with a
// description of a drawn length and a few parameters. The same for every session (one cacheable
// block).
func (s *Scenario) syntheticTools(g *TextGen, t *ToolsSpec) ([]byte, []int) {
	order := s.rng(streamTools, 0)
	pairs := make([]string, 0, len(toolVerbs)*len(toolNouns))
	for _, v := range toolVerbs {
		for _, n := range toolNouns {
			pairs = append(pairs, v+"_"+n)
		}
	}
	order.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	tools := make([]toolJSON, t.Count)
	drawn := make([]int, t.Count)
	for i := range tools {
		r := s.rng(streamTools, uint64(i)+1)
		name := pairs[i%len(pairs)]
		if i >= len(pairs) {
			name += fmt.Sprintf("_%d", i/len(pairs)+1)
		}
		n := t.SchemaTokens.SampleInt(r)
		drawn[i] = n
		desc := g.Prose(r, n)
		props := map[string]any{}
		var required []string
		for k, idx := range r.Perm(len(toolParams))[:1+r.IntN(3)] {
			props[toolParams[idx].name] = toolParams[idx].schema
			if k == 0 {
				required = append(required, toolParams[idx].name)
			}
		}
		tools[i] = toolJSON{Type: "function", Function: functionJSON{Name: name, Description: desc,
			Parameters: map[string]any{"type": "object", "properties": props, "required": required}}}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(tools)
	return bytes.TrimRight(buf.Bytes(), "\n"), drawn
}

// ToolsJSON is the JSON "tools" array every request of an agent session carries (nil without
// session.tools): the file's, or the synthetic schemas, the same for every session.
func (w *Workload) ToolsJSON() []byte {
	if w.feat == nil {
		return nil
	}
	return w.feat.tools
}

// ToolChoice is tool_choice: "auto", "required" or "none"; "" without tools.
func (w *Workload) ToolChoice() string {
	if w.feat == nil || w.feat.tools == nil {
		return ""
	}
	return w.feat.choice
}

// MaxToolRounds is the most tool rounds per user turn; 0 without tools.
func (w *Workload) MaxToolRounds() int {
	if w.feat == nil || w.feat.tools == nil {
		return 0
	}
	return w.feat.maxRounds
}

// ToolResult is the synthetic result of tool call `call` in round `round` of turn `turn` of session
// `session` (the run's global session ordinal): prose of a length drawn from result_tokens, seeded
// by the scenario seed and those indices (so two runs send the same bytes), and its token count in
// the scenario's tokenizer. Safe for concurrent use. Without tools: "", 0.
func (w *Workload) ToolResult(session, turn, round, call int) (text string, tokens int) {
	f := w.feat
	if f == nil || f.tools == nil {
		return "", 0
	}
	idx := splitmix(splitmix(splitmix(uint64(session))^uint64(turn)) ^ uint64(round)<<32 ^ uint64(call))
	r := rand.New(rand.NewPCG(f.seed, splitmix(streamToolResult<<48^idx)))
	n := f.results.SampleInt(r)
	g, _ := f.gens.Get().(*TextGen)
	if g == nil {
		return "", 0 // the tokenizer was checked when the workload was built: not reached
	}
	text = g.ProseWith(r, n, []string{"Result", "of", "call", fmt.Sprint(call + 1), "."})
	f.gens.Put(g)
	return text, f.tok.Count(text)
}

// ResponseFormatJSON is the request's "response_format" object, nil without one.
func (w *Workload) ResponseFormatJSON() []byte {
	if w.feat == nil {
		return nil
	}
	return w.feat.responseFormat
}

// ValidateStructured reports whether answer is valid for the response format: JSON at all for
// json_object, valid against the compiled schema for json_schema; nil without response_format.
// Safe for concurrent use.
func (w *Workload) ValidateStructured(answer string) error {
	f := w.feat
	if f == nil || f.responseFormat == nil {
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(answer))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if f.schema == nil {
		return nil
	}
	if err := f.schema.Validate(doc); err != nil {
		return fmt.Errorf("not valid for the schema: %w", err)
	}
	return nil
}

// ModelFor is the model session `session` (the run's global session ordinal) asks for: a weighted
// pick from target.models, target.model without them. The picks follow a low-discrepancy sequence
// started at a point the seed draws, so the same seed gives the same picks, and any run of
// consecutive sessions realizes the weights closely (a 3:1 mix over 300 sessions is off by well
// under a point, where independent draws would miss by 2.5 points one time in three).
func (w *Workload) ModelFor(session int) string {
	f := w.feat
	if f == nil {
		return ""
	}
	if len(f.names) == 0 {
		return f.model
	}
	const phi = 0.6180339887498949 // the golden ratio's fraction: the most evenly spread sequence
	_, u := math.Modf(f.offset + float64(session)*phi)
	if u < 0 {
		u++
	}
	for i, c := range f.cum {
		if u < c {
			return f.names[i]
		}
	}
	return f.names[len(f.names)-1]
}

// WithStages is w with other stage pools (a slice of its own, say), keeping its personas and request
// features.
func (w *Workload) WithStages(stages []StagePool) *Workload {
	c := *w
	c.Stages = stages
	return &c
}
