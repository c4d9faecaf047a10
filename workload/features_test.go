package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// featureScenario is a mock scenario with the §18 lines spliced in: session (indented under
// session:), target (under target:), load (the whole load block) and slo.
func featureScenario(session, target, load, slo string) string {
	if load == "" {
		load = "load:\n  mode: concurrency\n  stages: [{concurrency: 2, duration: 10s}]\n"
	}
	if slo == "" {
		slo = "slo: {e2e: {p95: 10s}, error_rate: 0.01}\n"
	}
	return "name: feat\nseed: 7\ntarget:\n  base_url: mock\n" + target +
		"personas: {count: 2, system_prompt_tokens: 20}\n" +
		"session:\n  turns: 2\n  user_input_tokens: 10\n  max_output_tokens: 5\n  think_time: 0s\n" + session +
		load + slo + "cost: {gpu_hourly_usd: 1}\n"
}

// parseIn writes files into a temporary folder beside the scenario and parses it there.
func parseIn(t *testing.T, scenario string, files map[string]string) (*Scenario, Issues) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(path, LoadOptions{Getenv: noEnv})
}

func mustBuild(t *testing.T, scenario string, files map[string]string) (*Scenario, *Workload) {
	t.Helper()
	s, issues := parseIn(t, scenario, files)
	if err := issues.Err(); err != nil {
		t.Fatalf("%v\n%s", err, scenario)
	}
	w, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	return s, w
}

// wantIssue asserts one error at path whose message contains want, on the line path is written.
func wantIssue(t *testing.T, issues Issues, path, want string) {
	t.Helper()
	for _, is := range issues.Errors() {
		if is.Path == path && strings.Contains(is.Message, want) {
			if is.Line < 1 {
				t.Errorf("%s: no line: %v", path, is)
			}
			return
		}
	}
	t.Errorf("want an error at %s containing %q; got:\n%v", path, want, issues)
}

func TestFeatureDefaults(t *testing.T) {
	s, w := mustBuild(t, featureScenario("  tools: {}\n  response_format: {type: json_object}\n", "", "", ""), nil)
	tl := s.Session.Tools
	if tl.Count != 4 || tl.Choice != "auto" || tl.MaxRounds != 4 ||
		tl.SchemaTokens.String() != "uniform 100–300" || tl.ResultTokens.String() != "uniform 200–2000" {
		t.Errorf("tools defaults: %+v", *tl)
	}
	if s.Session.ResponseFormat.Name != "" {
		t.Errorf("response_format.name for json_object %q", s.Session.ResponseFormat.Name)
	}
	if s2, _ := mustBuild(t, featureScenario("  response_format: {type: json_schema, schema: {type: object}}\n", "", "", ""), nil); s2.Session.ResponseFormat.Name != "answer" {
		t.Errorf("response_format.name default %q", s2.Session.ResponseFormat.Name)
	}
	if !s.Streamed() {
		t.Error("stream not set: want streamed")
	}
	if got := s.ModelNames(); len(got) != 1 || got[0] != DefaultMockModel {
		t.Errorf("ModelNames = %v", got)
	}
	if w.ToolChoice() != "auto" || w.MaxToolRounds() != 4 || string(w.ResponseFormatJSON()) != `{"type":"json_object"}` {
		t.Errorf("built: choice %q rounds %d rf %s", w.ToolChoice(), w.MaxToolRounds(), w.ResponseFormatJSON())
	}
	if w.ModelFor(12) != DefaultMockModel {
		t.Errorf("ModelFor without models = %q", w.ModelFor(12))
	}
	// Without the features: nothing.
	_, plain := mustBuild(t, featureScenario("", "", "", ""), nil)
	if plain.ToolsJSON() != nil || plain.ToolChoice() != "" || plain.MaxToolRounds() != 0 || plain.ResponseFormatJSON() != nil || plain.ValidateStructured("nope") != nil {
		t.Error("a plain scenario has features")
	}
	if txt, n := plain.ToolResult(0, 0, 0, 0); txt != "" || n != 0 {
		t.Error("ToolResult without tools")
	}
}

func TestFeatureRefusals(t *testing.T) {
	const schemaOK = "  response_format: {type: json_schema, schema: {type: object}}\n"
	for _, c := range []struct {
		name, session, target, load, slo string
		files                            map[string]string
		path, want                       string
	}{
		{name: "tools file an object", session: "  tools: {file: t.json}\n", files: map[string]string{"t.json": `{"type":"function"}`},
			path: "session.tools.file", want: "found an object at the top"},
		{name: "tools file empty", session: "  tools: {file: t.json}\n", files: map[string]string{"t.json": `[]`},
			path: "session.tools.file", want: "the array is empty"},
		{name: "tools file bare functions", session: "  tools: {file: t.json}\n", files: map[string]string{"t.json": `[{"name":"f","parameters":{}}]`},
			path: "session.tools.file", want: `[0].type is missing; it must be "function"`},
		{name: "tools file no name", session: "  tools: {file: t.json}\n", files: map[string]string{"t.json": `[{"type":"function","function":{"parameters":{}}}]`},
			path: "session.tools.file", want: "[0].function.name is missing"},
		{name: "tools file parameters not object", session: "  tools: {file: t.json}\n",
			files: map[string]string{"t.json": `[{"type":"function","function":{"name":"a","parameters":{}}},{"type":"function","function":{"name":"b","parameters":"x"}}]`},
			path:  "session.tools.file", want: `[1].function.parameters is "x"`},
		{name: "tools file duplicate", session: "  tools: {file: t.json}\n",
			files: map[string]string{"t.json": `[{"type":"function","function":{"name":"a","parameters":{}}},{"type":"function","function":{"name":"a","parameters":{}}}]`},
			path:  "session.tools.file", want: `"a" is also [0]'s`},
		{name: "tools file not JSON", session: "  tools: {file: t.json}\n", files: map[string]string{"t.json": `[{`},
			path: "session.tools.file", want: "not JSON"},
		{name: "tools file missing", session: "  tools: {file: none.json}\n", path: "session.tools.file", want: "cannot read"},
		{name: "tools count 0", session: "  tools: {count: 0}\n", path: "session.tools.count", want: "found 0"},
		{name: "tools choice", session: "  tools: {choice: always}\n", path: "session.tools.choice", want: "accepted: auto, required, none"},
		{name: "tools rounds", session: "  tools: {max_rounds: 0}\n", path: "session.tools.max_rounds", want: "found 0"},
		{name: "tools result tokens", session: "  tools: {result_tokens: {min: 5}}\n", path: "session.tools.result_tokens", want: "needs both min and max"},
		{name: "schema does not compile", session: "  response_format: {type: json_schema, schema: {type: 12}}\n",
			path: "session.response_format.schema", want: "the schema does not compile"},
		{name: "schema file does not compile", session: "  response_format: {type: json_schema, schema: {file: a.json}}\n",
			files: map[string]string{"a.json": `{"type":"object","properties":{"x":{"minimum":"low"}}}`},
			path:  "session.response_format.schema", want: "the schema does not compile"},
		{name: "schema file not JSON", session: "  response_format: {type: json_schema, schema: {file: a.json}}\n",
			files: map[string]string{"a.json": `{nope`}, path: "session.response_format.schema", want: "not JSON"},
		{name: "schema missing", session: "  response_format: {type: json_schema}\n", path: "session.response_format.schema", want: "required with type json_schema"},
		{name: "schema a list", session: "  response_format: {type: json_schema, schema: [1]}\n", path: "session.response_format.schema", want: "found a list"},
		{name: "schema with json_object", session: "  response_format: {type: json_object, schema: {type: object}}\n", path: "session.response_format.schema", want: "only with type json_schema"},
		{name: "format type", session: "  response_format: {type: yaml}\n", path: "session.response_format.type", want: "accepted: json_schema, json_object"},
		{name: "format name", session: strings.Replace(schemaOK, "}}", "}, name: \"a b\"}", 1), path: "session.response_format.name", want: "found \"a b\""},
		{name: "weight 0", target: "  models: [{name: a, weight: 3}, {name: b, weight: 0}]\n", path: "target.models[1].weight", want: "found 0; accepted: a weight > 0"},
		{name: "weight negative", target: "  models: [{name: a, weight: -1}]\n", path: "target.models[0].weight", want: "found -1"},
		{name: "duplicate model", target: "  models: [{name: a, weight: 1}, {name: a, weight: 2}]\n", path: "target.models[1].name", want: "already target.models[0]"},
		{name: "model without name", target: "  models: [{weight: 1}]\n", path: "target.models[0].name", want: "required"},
		{name: "mock rate", target: "  mock: {tool_call_rate: 1.5}\n", path: "target.mock.tool_call_rate", want: "found 1.5"},
		{name: "mock json rate", target: "  mock: {json_valid_rate: -0.1}\n", path: "target.mock.json_valid_rate", want: "found -0.1"},
		{name: "requests 0", load: "load:\n  mode: concurrency\n  stages: [{concurrency: 2, requests: 0}]\n", path: "load.stages[0].requests", want: "found 0; accepted: a whole number ≥ 1"},
		{name: "requests negative batch", load: "load:\n  mode: batch\n  stages: [{requests: -5}]\n", path: "load.stages[0].requests", want: "found -5"},
		{name: "batch without requests", load: "load:\n  mode: batch\n  stages: [{duration: 10s}]\n", path: "load.stages[0].requests", want: "required but missing; accepted: the number of requests"},
		{name: "batch warmup", load: "load:\n  mode: batch\n  stages: [{requests: 5, warmup: 5s}]\n", path: "load.stages[0].warmup", want: "accepted in a batch stage"},
		{name: "batch rate", load: "load:\n  mode: batch\n  stages: [{requests: 5, rate: 3}]\n", path: "load.stages[0].rate", want: "accepted in a batch stage"},
		{name: "batch max in flight", load: "load:\n  mode: batch\n  max_in_flight: 0\n  stages: [{requests: 5}]\n", path: "load.max_in_flight", want: "found 0"},
		{name: "stage without end", load: "load:\n  mode: concurrency\n  stages: [{concurrency: 2}]\n", path: "load.stages[0].duration", want: "or requests: N"},
		{name: "stream false ttft", target: "  stream: false\n", slo: "slo: {ttft: {p95: 1s}}\n", path: "slo.ttft.p95", want: "a non-streamed run has no TTFT, TTFO, TPOT or ITL"},
		{name: "stream false itl", target: "  stream: false\n", slo: "slo: {itl: {p99: 1s}}\n", path: "slo.itl.p99", want: "a non-streamed run has no TTFT, TTFO, TPOT or ITL"},
		{name: "stream false ttfo", target: "  stream: false\n", slo: "slo: {ttfo: {mean: 1s}}\n", path: "slo.ttfo.mean", want: "a non-streamed run has no TTFT, TTFO, TPOT or ITL"},
		{name: "stream false ttft_p95", target: "  stream: false\n", slo: "slo: {ttft_p95: 1s}\n", path: "slo.ttft_p95", want: "a non-streamed run has no TTFT, TTFO, TPOT or ITL"},
		{name: "stream false itl_p95", target: "  stream: false\n", slo: "slo: {itl_p95: 1s}\n", path: "slo.itl_p95", want: "a non-streamed run has no TTFT, TTFO, TPOT or ITL"},
		{name: "stream false gate", target: "  stream: false\n", slo: "slo: {e2e: {p95: 1s}}\ngate: [\"ttft_p95 < 1s\"]\n", path: "gate[0]", want: "a non-streamed run has no TTFT, TTFO, TPOT or ITL"},
		// A whole answer has no first token, so TPOT ((E2E − TTFT) ÷ (OSL − 1)) is never measured: a
		// TPOT limit would leave every verdict N/A while goodput counted it as met.
		{name: "stream false tpot", target: "  stream: false\n", slo: "slo: {tpot: {p99: 50ms}}\n", path: "slo.tpot.p99",
			want: "a non-streamed run has no TTFT, TTFO, TPOT or ITL (target.stream is false: E2E and tokens come from the whole response, with no first-token time); accepted: limits on e2e, an error rate, or target.stream: true"},
		{name: "stream false tpot gate", target: "  stream: false\n", slo: "slo: {e2e: {p95: 1s}}\ngate: [\"tpot_p99 < 50ms\"]\n", path: "gate[0]", want: "no TTFT, TTFO, TPOT or ITL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, issues := parseIn(t, featureScenario(c.session, c.target, c.load, c.slo), c.files)
			wantIssue(t, issues, c.path, c.want)
		})
	}
}

func TestFeatureAccepts(t *testing.T) {
	for _, c := range []struct{ name, session, target, load, slo string }{
		{name: "stream false with e2e", target: "  stream: false\n"},
		{name: "stream false with e2e and an error rate", target: "  stream: false\n", slo: "slo: {e2e: {p99: 5s}, error_rate: 0.01}\n"},
		{name: "requests ends a concurrency stage", load: "load:\n  mode: concurrency\n  stages: [{concurrency: 2, requests: 100}]\n"},
		{name: "requests with duration", load: "load:\n  mode: request_rate\n  stages: [{rate: 5, duration: 10s, requests: 20}]\n"},
		{name: "batch", load: "load:\n  mode: batch\n  max_in_flight: 8\n  stages: [{requests: 50}, {requests: 10, duration: 1m}]\n"},
		{name: "models", target: "  model: base\n  models: [{name: base, weight: 3}, {name: sql-lora, weight: 1}]\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, issues := parseIn(t, featureScenario(c.session, c.target, c.load, c.slo), nil)
			if err := issues.Err(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestBatchStages: a batch's pool is its requests, max_in_flight defaults as for request_rate, the
// session is single-turn unless the file says otherwise, and the resolved file reads back the same.
func TestBatchStages(t *testing.T) {
	sc := "name: b\nseed: 1\ntarget: {base_url: mock}\npersonas: {count: 2, system_prompt_tokens: 20}\n" +
		"session: {user_input_tokens: 10, max_output_tokens: 5}\n" +
		"load:\n  mode: batch\n  stages: [{requests: 40}, {requests: 7, duration: 30s}]\nslo: {e2e: {p95: 10s}}\ncost: {gpu_hourly_usd: 1}\n"
	s, w := mustBuild(t, sc, nil)
	if s.Load.MaxInFlight != DefaultMaxInFlight {
		t.Errorf("max_in_flight default %d", s.Load.MaxInFlight)
	}
	if s.Session.Turns.MeanInt() != 1 {
		t.Errorf("batch turns default %v", s.Session.Turns)
	}
	if len(w.Stages[0].Sessions) != 40 || len(w.Stages[1].Sessions) != 7 {
		t.Errorf("pools %d, %d; want 40, 7", len(w.Stages[0].Sessions), len(w.Stages[1].Sessions))
	}
	stats := s.Stats(w)
	if !strings.Contains(stats[0].Load, "batch of 40 requests") || stats[0].Estimate.Requests != 40 {
		t.Errorf("stats: %q, %+v", stats[0].Load, stats[0].Estimate)
	}
	if s.BatchSeconds(s.Load.Stages[0]) <= 0 {
		t.Error("BatchSeconds")
	}
	roundTrip(t, s)
	// An open-loop stage ending by count: the pool is the smaller of arrivals and requests.
	rr, rw := mustBuild(t, featureScenario("", "", "load:\n  mode: request_rate\n  stages: [{rate: 100, duration: 60s, requests: 30}, {rate: 1, requests: 12}]\n", ""), nil)
	if got := rr.PoolSize(rr.Load.Stages[0]); got != 30 {
		t.Errorf("request_rate pool with requests 30: %d", got)
	}
	if got := rr.PoolSize(rr.Load.Stages[1]); got != 12 {
		t.Errorf("request_rate pool with requests and no duration: %d", got)
	}
	if st := rr.Stats(rw)[0]; !strings.Contains(st.Load, "ends after 30 requests") {
		t.Errorf("stats load %q", st.Load)
	}
}

// roundTrip: scenario.resolved.yaml loads without issues and resolves to the same text again.
func roundTrip(t *testing.T, s *Scenario) string {
	t.Helper()
	out, err := s.ResolvedYAML()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "scenario.resolved.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	again, issues := Load(path, LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out2, err := again.ResolvedYAML()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, out2) {
		t.Errorf("resolved twice differs:\n%s\n---\n%s", out, out2)
	}
	return string(out)
}

func TestFeaturesResolved(t *testing.T) {
	files := map[string]string{
		"tools.json": `[{"type":"function","function":{"name":"lookup","description":"Look it up.","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}}]`,
		"a.json":     `{"type":"object","required":["answer"],"properties":{"answer":{"type":"string"}}}`,
	}
	sc := featureScenario("  tools: {file: tools.json, choice: required, max_rounds: 2}\n  response_format: {type: json_schema, schema: {file: a.json}, name: reply}\n",
		"  models: [{name: a, weight: 3}, {name: b, weight: 1}]\n  stream: false\n", "", "")
	s, w := mustBuild(t, sc, files)
	out := roundTrip(t, s)
	for _, want := range []string{"tools:", "file: /", "choice: required", "max_rounds: 2", "count: 1",
		"response_format:", "type: json_schema", "name: reply", "a.json # sha256 ", "models:", "weight: 3", "stream: false"} {
		if !strings.Contains(out, want) {
			t.Errorf("resolved lacks %q:\n%s", want, out)
		}
	}
	if s.Streamed() {
		t.Error("stream: false read as streamed")
	}
	if got := s.ModelNames(); strings.Join(got, ",") != "a,b" {
		t.Errorf("ModelNames %v", got)
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, []byte(files["tools.json"]))
	if !bytes.Equal(w.ToolsJSON(), compact.Bytes()) {
		t.Errorf("ToolsJSON from file: %s", w.ToolsJSON())
	}
	var rf map[string]any
	if err := json.Unmarshal(w.ResponseFormatJSON(), &rf); err != nil {
		t.Fatal(err)
	}
	js, _ := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["name"] != "reply" || js["strict"] != true || js["schema"].(map[string]any)["type"] != "object" {
		t.Errorf("response_format %s", w.ResponseFormatJSON())
	}
	// An inline schema round-trips too.
	s2, _ := mustBuild(t, featureScenario("  response_format:\n    type: json_schema\n    schema:\n      type: object\n      properties: {n: {type: integer, minimum: 1}}\n      required: [n]\n", "", "", ""), nil)
	roundTrip(t, s2)
}

func TestSyntheticTools(t *testing.T) {
	sc := featureScenario("  tools: {count: 6, schema_tokens: {min: 40, max: 90}}\n", "", "", "")
	s, w := mustBuild(t, sc, nil)
	_, w2 := mustBuild(t, sc, nil)
	if !bytes.Equal(w.ToolsJSON(), w2.ToolsJSON()) {
		t.Error("ToolsJSON differs between two builds of one scenario")
	}
	var tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(w.ToolsJSON(), &tools); err != nil {
		t.Fatalf("%v: %s", err, w.ToolsJSON())
	}
	if len(tools) != 6 {
		t.Fatalf("%d tools", len(tools))
	}
	// The OpenAI layout, checked by the same reader a tools file goes through.
	path := filepath.Join(t.TempDir(), "tools.json")
	_ = os.WriteFile(path, w.ToolsJSON(), 0o644)
	if _, n, err := readToolsFile(path); err != nil || n != 6 {
		t.Errorf("synthetic tools not in OpenAI's layout: %v (%d)", err, n)
	}
	names := map[string]bool{}
	for i, tool := range tools {
		f := tool.Function
		if tool.Type != "function" || f.Name == "" || names[f.Name] || f.Parameters["type"] != "object" {
			t.Errorf("tool %d: %+v", i, tool)
		}
		names[f.Name] = true
		drawn := w.feat.toolTokens[i]
		if drawn < 40 || drawn > 90 {
			t.Errorf("tool %d drew %d tokens, outside 40–90", i, drawn)
		}
		if got := s.Tokenizer().Count(f.Description); math.Abs(float64(got-drawn)) > 0.02*float64(drawn) {
			t.Errorf("tool %d description is %d tokens, drawn %d", i, got, drawn)
		}
	}
	// Another seed, other tools.
	_, w3 := mustBuild(t, strings.Replace(sc, "seed: 7", "seed: 8", 1), nil)
	if bytes.Equal(w.ToolsJSON(), w3.ToolsJSON()) {
		t.Error("seed does not change the tools")
	}
}

func TestToolResult(t *testing.T) {
	sc := featureScenario("  tools: {result_tokens: {min: 20, max: 400}}\n", "", "", "")
	s, w := mustBuild(t, sc, nil)
	_, w2 := mustBuild(t, sc, nil)
	seen := map[string]bool{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for session := range 3 {
		for turn := range 2 {
			for round := range 2 {
				for call := range 2 {
					wg.Add(1)
					go func() { // concurrent use
						defer wg.Done()
						text, n := w.ToolResult(session, turn, round, call)
						again, n2 := w2.ToolResult(session, turn, round, call)
						mu.Lock()
						defer mu.Unlock()
						if text != again || n != n2 {
							t.Errorf("ToolResult(%d,%d,%d,%d) differs between builds", session, turn, round, call)
						}
						if c := s.Tokenizer().Count(text); c != n || n < 20 || n > 400 {
							t.Errorf("ToolResult(%d,%d,%d,%d): %d tokens reported, %d counted (want 20–400)", session, turn, round, call, n, c)
						}
						if seen[text] {
							t.Errorf("ToolResult(%d,%d,%d,%d) repeats another result", session, turn, round, call)
						}
						seen[text] = true
					}()
				}
			}
		}
	}
	wg.Wait()
}

func TestValidateStructured(t *testing.T) {
	_, obj := mustBuild(t, featureScenario("  response_format: {type: json_object}\n", "", "", ""), nil)
	for answer, ok := range map[string]bool{`{"a":1}`: true, `[1,2]`: true, ` {"a": [true]} `: true, `{"a":`: false, `hello`: false, `{"a":1} trailing`: false, ``: false} {
		if err := obj.ValidateStructured(answer); (err == nil) != ok {
			t.Errorf("json_object %q: %v, want valid %v", answer, err, ok)
		}
	}
	_, sch := mustBuild(t, featureScenario("  response_format:\n    type: json_schema\n    schema: {type: object, required: [city, days], properties: {city: {type: string}, days: {type: integer, minimum: 1}}, additionalProperties: false}\n", "", "", ""), nil)
	cases := map[string]bool{
		`{"city":"Oslo","days":3}`:           true,
		`{"city":"Oslo"}`:                    false,
		`{"city":"Oslo","days":0}`:           false,
		`{"city":"Oslo","days":2,"extra":1}`: false,
		`{"city":3,"days":2}`:                false,
		`not json`:                           false,
	}
	var wg sync.WaitGroup
	for answer, ok := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sch.ValidateStructured(answer); (err == nil) != ok {
				t.Errorf("json_schema %q: %v, want valid %v", answer, err, ok)
			}
		}()
	}
	wg.Wait()
}

func TestModelFor(t *testing.T) {
	sc := featureScenario("", "  models: [{name: base, weight: 3}, {name: sql-lora, weight: 1}]\n", "", "")
	_, w := mustBuild(t, sc, nil)
	_, w2 := mustBuild(t, sc, nil)
	for _, n := range []int{300, 1000} {
		count := map[string]int{}
		for i := range n {
			m := w.ModelFor(i)
			if m != w2.ModelFor(i) {
				t.Fatalf("ModelFor(%d) differs between builds", i)
			}
			count[m]++
		}
		if share := float64(count["base"]) / float64(n); math.Abs(share-0.75) > 0.05 || count["base"]+count["sql-lora"] != n {
			t.Errorf("over %d sessions: %v (base %.3f, want 0.75 ± 0.05)", n, count, share)
		}
	}
	// Any window of sessions, and other seeds, hold the mix too.
	for seed := 1; seed <= 20; seed++ {
		_, ws := mustBuild(t, strings.Replace(sc, "seed: 7", fmt.Sprintf("seed: %d", seed), 1), nil)
		base := 0
		for i := 500; i < 800; i++ {
			if ws.ModelFor(i) == "base" {
				base++
			}
		}
		if math.Abs(float64(base)/300-0.75) > 0.05 {
			t.Errorf("seed %d: base %d of 300", seed, base)
		}
	}
}
