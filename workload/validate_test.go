package workload

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// baseScenario is a valid scenario; each case below changes or deletes lines of it. Line numbers in
// the cases are 1-based lines of this text.
const baseScenario = `name: t
seed: 1
target:
  base_url: http://127.0.0.1:8000/v1
  model: m
personas:
  count: 2
  system_prompt_tokens: {min: 10, max: 20}
session:
  turns: {min: 3, max: 6}
  user_input_tokens: {min: 5, max: 10}
  max_output_tokens: {min: 5, max: 10}
  think_time: {min: 5s, max: 20s}
load:
  mode: concurrency
  stages:
    - {concurrency: 2, duration: 60s}
slo:
  ttft_p95: 1s
  itl_p95: 100ms
  error_rate_max: 0.01
cost:
  gpu_hourly_usd: 1
`

// edit replaces line n (1-based) of baseScenario with text; "" deletes it. Line 0 appends.
type edit struct {
	line int
	text string
}

func applyEdits(edits ...edit) string {
	lines := strings.Split(strings.TrimSuffix(baseScenario, "\n"), "\n")
	var extra []string
	deleted := map[int]bool{}
	for _, e := range edits {
		switch {
		case e.line == 0:
			extra = append(extra, e.text)
		case e.text == "":
			deleted[e.line] = true
		default:
			lines[e.line-1] = e.text
		}
	}
	var out []string
	for i, l := range lines {
		if !deleted[i+1] {
			out = append(out, l)
		}
	}
	return strings.Join(append(out, extra...), "\n") + "\n"
}

func noEnv(string) string { return "" }

func TestBaseScenarioIsValid(t *testing.T) {
	s, issues := Parse("t.yaml", []byte(baseScenario), LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil {
		t.Fatalf("base scenario has errors:\n%v", err)
	}
	if w := issues.Warnings(); len(w) != 0 {
		t.Fatalf("base scenario has warnings: %v", w)
	}
	if s.Target.Timeout.D().Seconds() != 120 || s.Load.DrainTimeout != s.Target.Timeout || s.Load.SessionPoolFactor != 3 ||
		s.Target.MaxTokensField != "max_completion_tokens" || s.Session.ZipfS != 1 || !s.Output.RecordRequests ||
		s.Cost.GPUCount != 1 || s.Output.Dir != "results/" || s.Output.PrometheusHost != "127.0.0.1" {
		t.Fatalf("defaults not applied: %+v", s)
	}
}

// TestValidationRules checks each rule's message, line and column. col names the text on that line
// where the issue must point (its first occurrence), so the expectations read like the file.
func TestValidationRules(t *testing.T) {
	cases := []struct {
		name    string
		edits   []edit
		warning bool
		path    string
		line    int
		at      string // the issue's column is where this text starts on the line ("" = column 1)
		message string
	}{
		{"unknown key with suggestion", []edit{{5, "  modle: m"}}, false, "target.modle", 5, "modle", `unknown key "modle" (did you mean "model"?); accepted here: api_key_env, base_url`},
		{"unknown top-level key", []edit{{0, "stagez: 1"}}, false, "stagez", 24, "stagez", `unknown key "stagez"`},
		{"required name", []edit{{1, ""}}, false, "name", 1, "", "required but missing"},
		{"name makes a directory", []edit{{1, "name: a/b"}}, false, "name", 1, "a/b", `found "a/b"; accepted: letters, digits`},
		{"required model", []edit{{5, ""}}, false, "target.model", 3, "target", "required but missing; accepted: the model name"},
		{"base_url scheme", []edit{{4, "  base_url: 127.0.0.1:8000"}}, false, "target.base_url", 4, "127", `accepted: an http:// or https:// URL, or mock`},
		{"min greater than max", []edit{{8, "  system_prompt_tokens: {min: 30, max: 20}"}}, false, "personas.system_prompt_tokens.min", 8, "30", "min 30 is greater than max 20; accepted: min ≤ max"},
		{"count at least one", []edit{{7, "  count: 0"}}, false, "personas.count", 7, "0", "found 0; accepted: a whole number ≥ 1"},
		{"duration positive", []edit{{17, "    - {concurrency: 2, duration: 0s}"}}, false, "load.stages[0].duration", 17, "0s", "found 0s; accepted: a duration > 0"},
		{"duration needs a unit", []edit{{19, "  ttft_p95: 1"}}, false, "slo.ttft_p95", 19, "1", `found "1"; accepted: a duration with a unit`},
		{"duration not text", []edit{{20, "  itl_p95: fast"}}, false, "slo.itl_p95", 20, "fast", `found "fast"; accepted: a duration with a unit`},
		{"concurrency at least one", []edit{{17, "    - {concurrency: 0, duration: 60s}"}}, false, "load.stages[0].concurrency", 17, "0", "found 0; accepted: a whole number ≥ 1"},
		{"concurrency type", []edit{{17, "    - {concurrency: abc, duration: 60s}"}}, false, "load.stages[0].concurrency", 17, "abc", `found "abc"; accepted: a whole number`},
		{"rate positive", []edit{{15, "  mode: arrival_rate"}, {17, "    - {sessions_per_sec: 0, max_concurrency: 4, duration: 60s}"}}, false, "load.stages[0].sessions_per_sec", 17, "0,", "found 0; accepted: a rate > 0"},
		{"arrival needs max_concurrency", []edit{{15, "  mode: arrival_rate"}, {17, "    - {sessions_per_sec: 1, duration: 60s}"}}, false, "load.stages[0].max_concurrency", 17, "{", "required but missing; accepted: the most sessions open at once"},
		{"field of the other mode", []edit{{17, "    - {concurrency: 2, sessions_per_sec: 1, duration: 60s}"}}, false, "load.stages[0].sessions_per_sec", 17, "1,", "sessions_per_sec belongs to load.mode arrival_rate"},
		{"mode with suggestion", []edit{{15, "  mode: concurent"}}, false, "load.mode", 15, "concurent", `found "concurent"; accepted: concurrency, arrival_rate, request_rate, replay, batch (did you mean "concurrency"?)`},
		{"empty stages", []edit{{16, "  stages: []"}, {17, ""}}, false, "load.stages", 16, "[]", "the list is empty"},
		{"error rate fraction", []edit{{21, "  error_rate_max: 1.5"}}, false, "slo.error_rate_max", 21, "1.5", "found 1.5; accepted: a fraction from 0 to 1"},
		{"error rate percent", []edit{{21, "  error_rate_max: 1%"}}, false, "slo.error_rate_max", 21, "1%", "write a percentage as a fraction: 1% is 0.01"},
		{"zipf_s positive", []edit{{0, "  persona_selection: zipf"}, {0, "  zipf_s: 0"}}, false, "session.zipf_s", 0, "0", "found 0; accepted: an exponent > 0"},
		{"unknown dist", []edit{{10, "  turns: {dist: normal, mean: 3}"}}, false, "session.turns.dist", 10, "normal", `found "normal"; accepted: uniform, lognormal, exponential, constant (did you mean "lognormal"?)`},
		{"uniform needs max", []edit{{11, "  user_input_tokens: {min: 5}"}}, false, "session.user_input_tokens", 11, "{", "dist uniform needs both min and max"},
		{"lognormal needs mean", []edit{{12, "  max_output_tokens: {dist: lognormal, min: 5}"}}, false, "session.max_output_tokens", 12, "{", "dist lognormal needs mean"},
		{"unused sigma", []edit{{12, "  max_output_tokens: {min: 5, max: 10, sigma: 1}"}}, false, "session.max_output_tokens.sigma", 12, "1}", "sigma is not used by dist uniform"},
		{"whole tokens", []edit{{11, "  user_input_tokens: {min: 5.5, max: 10}"}}, false, "session.user_input_tokens.min", 11, "5.5", "found 5.5; accepted: a whole number ≥ 1"},
		{"unknown dist key", []edit{{11, "  user_input_tokens: {min: 5, maxx: 10}"}}, false, "session.user_input_tokens.maxx", 11, "maxx", `unknown key "maxx" (did you mean "max"?)`},
		{"think time needs durations", []edit{{13, "  think_time: {min: 0s, max: 5}"}}, false, "session.think_time.max", 13, "5}", "accepted: a duration with a unit"},
		{"duplicate key", []edit{{0, "name: u"}}, false, "", 24, "name", `not valid YAML: mapping key "name" already defined at [1:1]`},
		{"max_tokens_field", []edit{{0, "  max_tokens_field: max_new_tokens"}}, false, "target.max_tokens_field", 0, "max_new", `found "max_new_tokens"; accepted: max_completion_tokens, max_tokens`},
		{"gpu_count", []edit{{0, "  gpu_count: 0"}}, false, "cost.gpu_count", 0, "0", "found 0; accepted: a whole number ≥ 1"},
		{"no price is a warning", []edit{{23, ""}}, true, "cost.gpu_hourly_usd", 22, "cost", "not set: $/1M output tokens, $/1K turns and $/session will be N/A"},
		{"no slo is a warning", []edit{{18, ""}, {19, ""}, {20, ""}, {21, ""}}, true, "slo", 0, "", "every stage's SLO verdict will be N/A"},
		{"slo block stat", []edit{{19, "  tpot: {p99: 0s}"}}, false, "slo.tpot.p99", 19, "0s", "found 0s; accepted: a duration > 0"},
		{"slo block unknown stat", []edit{{19, "  e2e: {p98: 1s}"}}, false, "slo.e2e.p98", 19, "p98", `unknown key "p98" (did you mean "p90"?)`},
		{"two error rate keys", []edit{{20, "  error_rate: 0.01"}}, false, "slo.error_rate", 20, "0.01", "both error_rate and error_rate_max are set"},
		{"request rate needs rate", []edit{{15, "  mode: request_rate"}, {17, "    - {duration: 60s}"}}, false, "load.stages[0].rate", 17, "{", "required but missing; accepted: requests per second"},
		{"request rate positive", []edit{{15, "  mode: request_rate"}, {17, "    - {rate: 0, duration: 60s}"}}, false, "load.stages[0].rate", 17, "0,", "found 0; accepted: requests per second > 0"},
		{"rate not a number", []edit{{15, "  mode: request_rate"}, {17, "    - {rate: fast, duration: 60s}"}}, false, "load.stages[0].rate", 17, "fast", "accepted: requests per second (a number such as 20) or a ramp"},
		{"ramp needs over", []edit{{15, "  mode: request_rate"}, {17, "    - {rate: {from: 1, to: 5}, duration: 60s}"}}, false, "load.stages[0].rate.over", 17, "rate", "required but missing; accepted: the ramp's length"},
		{"ramp unknown key", []edit{{15, "  mode: request_rate"}, {17, "    - {rate: {from: 1, too: 5, over: 1s}, duration: 60s}"}}, false, "load.stages[0].rate.too", 17, "too", `unknown key "too" (did you mean "to"?)`},
		{"concurrency in request_rate", []edit{{15, "  mode: request_rate"}, {17, "    - {rate: 5, concurrency: 2, duration: 60s}"}}, false, "load.stages[0].concurrency", 17, "2,", "concurrency belongs to load.mode concurrency; accepted in a request_rate stage: name, rate"},
		{"cv needs gamma", []edit{{15, "  mode: request_rate\n  cv: 2"}, {17, "    - {rate: 5, duration: 60s}"}}, false, "load.cv", 16, "2", "cv is the burstiness of arrival: gamma"},
		{"unknown arrival", []edit{{15, "  mode: request_rate\n  arrival: poison"}, {17, "    - {rate: 5, duration: 60s}"}}, false, "load.arrival", 16, "poison", `accepted: poisson, gamma, constant (did you mean "poisson"?)`},
		{"max_in_flight outside open loop", []edit{{15, "  mode: concurrency\n  max_in_flight: 5"}}, false, "load.max_in_flight", 16, "5", "max_in_flight belongs to load.mode request_rate or replay"},
		{"replay needs a trace", []edit{{15, "  mode: replay"}, {17, "    - {duration: 60s}"}}, false, "load.mode", 15, "replay", "replay sends each request at its trace time, and this scenario has no trace"},
		{"time_scale positive", []edit{{15, "  mode: replay\n  time_scale: 0"}, {17, "    - {duration: 60s}"}}, false, "load.time_scale", 16, "0", "found 0; accepted: a factor > 0"},
		{"not yaml", []edit{{7, "  count: [2"}}, false, "", 0, "", "not valid YAML"},
		{"bad env reference", []edit{{5, "  model: ${BAD-NAME}"}}, false, "target.model", 5, "${", "found ${BAD-NAME}; accepted: ${NAME}"},
		{"mock and a URL", []edit{{0, "  mock: {ttft: 100ms}"}}, false, "target.base_url", 4, "http", "with a target.mock block"},
		{"persona file missing", []edit{{7, "  source: file"}, {8, "  file: nope.jsonl"}}, false, "personas.file", 8, "nope", "cannot read the persona file"},
		{"persona file bad line", []edit{{7, "  source: file"}, {8, "  file: personas-bad.jsonl"}}, false, "personas.file", 8, "personas-bad", `personas-bad.jsonl line 2: "system_prompt" is missing`},
		{"token limit", []edit{{11, "  user_input_tokens: {dist: exponential, mean: 5e9}"}}, false, "session.user_input_tokens.mean", 11, "5e9", "accepted: a mean ≤ 1e+06"},
		{"dataset too large", []edit{{17, "    - {concurrency: 9000000, duration: 60s}"}}, false, "load.stages[0]", 17, "{", "the pool of 27000000 sessions is about"},
		{"tokenizer not cached and offline", []edit{{0, "  tokenizer: Qwen/Qwen3-8B"}}, false, "target.tokenizer", 0, "Qwen", "offline mode"},
		{"tokenizer unknown", []edit{{0, "  tokenizer: gpt2"}}, false, "target.tokenizer", 0, "gpt2", `"gpt2" is neither a built-in encoding (o200k_base, cl100k_base), an existing tokenizer.json`},
		{"tokenizer file missing", []edit{{0, "  tokenizer: ./nope/tokenizer.json"}}, false, "target.tokenizer", 0, "./nope", "./nope/tokenizer.json: no such file or directory"},
		{"warn think time", []edit{{13, "  think_time: {min: 0s, max: 90s}"}}, true, "session.think_time", 13, "{", "think time can reach 1m30s (> 60s)"},
		{"warn drain", []edit{{0, "  drain_timeout: 10s"}}, true, "load.drain_timeout", 0, "10s", "drain_timeout 10s is shorter than target.timeout 2m"},
		{"warn short stage", []edit{{17, "    - {concurrency: 2, duration: 1s}"}}, true, "load.stages[0].duration", 17, "1s", "shorter than a typical session"},
		{"warn pool dry", []edit{{15, "  mode: concurrency\n  session_reuse: wrap"}, {17, "    - {concurrency: 2, duration: 600s, sessions: 3}"}}, true, "load.stages[0]", 18, "{", "the pool of 3 sessions is likely to run dry"},
		{"session_reuse unknown", []edit{{15, "  mode: concurrency\n  session_reuse: loop"}}, false, "load.session_reuse", 16, "loop", `found "loop"; accepted: fresh, wrap, wrap_identical`},
		{"warn history", []edit{{10, "  turns: {min: 200, max: 300}"}, {12, "  max_output_tokens: {min: 500, max: 1000}"}}, true, "session.turns", 10, "{", "history is likely to reach about"},
		{"warn unset env", []edit{{0, "  api_key_env: PLLOAD_TEST_UNSET_KEY"}}, true, "target.api_key_env", 0, "PLLOAD", "environment variable PLLOAD_TEST_UNSET_KEY is not set"},
	}
	// Appended lines need a parent: put them under the right section by inserting after it.
	sections := map[string]int{"target.": 5, "session.": 13, "load.": 15, "cost.": 23}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text := applyEdits(tc.edits...)
			var appended []string
			for _, e := range tc.edits {
				if e.line == 0 && strings.HasPrefix(e.text, "  ") {
					appended = append(appended, e.text)
				}
			}
			line := tc.line
			if len(appended) > 0 {
				// Re-insert indented appended lines under their section instead of at the end.
				text = insertUnder(t, tc.edits, sections, tc.path)
				if line == 0 {
					line = lineOf(text, appended[len(appended)-1])
				}
			}
			s, issues := Parse("testdata/t.yaml", []byte(text), LoadOptions{Getenv: noEnv})
			_ = s
			want := SeverityError
			if tc.warning {
				want = SeverityWarning
			}
			col := 1
			lines := strings.Split(text, "\n")
			if tc.at != "" && line > 0 {
				col = strings.Index(lines[line-1], tc.at) + 1
			}
			for _, is := range issues {
				if is.Severity == want && is.Path == tc.path && strings.Contains(is.Message, tc.message) &&
					(line == 0 || (is.Line == line && is.Column == col)) {
					if !strings.HasPrefix(is.Error(), "testdata/t.yaml:") {
						t.Errorf("message does not start with the file name: %s", is.Error())
					}
					return
				}
			}
			t.Errorf("want %v at %s:%d:%d containing %q; got:\n%s\n--- file:\n%s", want, tc.path, line, col, tc.message, dump(issues), text)
		})
	}
}

func insertUnder(t *testing.T, edits []edit, sections map[string]int, path string) string {
	t.Helper()
	var replaced []edit
	var under []string
	for _, e := range edits {
		if e.line == 0 && strings.HasPrefix(e.text, "  ") {
			under = append(under, e.text)
		} else {
			replaced = append(replaced, e)
		}
	}
	after := 0
	for prefix, l := range sections {
		if strings.HasPrefix(path, prefix) {
			after = l
		}
	}
	if after == 0 {
		t.Fatalf("no section for %s", path)
	}
	lines := strings.Split(strings.TrimSuffix(applyEdits(replaced...), "\n"), "\n")
	out := append([]string{}, lines[:after]...)
	out = append(out, under...)
	out = append(out, lines[after:]...)
	return strings.Join(out, "\n") + "\n"
}

func lineOf(text, line string) int {
	for i, l := range strings.Split(text, "\n") {
		if l == line {
			return i + 1
		}
	}
	return 0
}

func dump(issues Issues) string {
	var b strings.Builder
	for _, is := range issues {
		fmt.Fprintf(&b, "  [%s] %s\n", is.Path, is.Error())
	}
	return b.String()
}

func TestDecodeErrorIsNotRepeatedAsRequired(t *testing.T) {
	_, issues := Parse("t.yaml", []byte(applyEdits(edit{19, "  ttft_p95: soon"})), LoadOptions{Getenv: noEnv})
	if n := len(issues.Errors()); n != 1 {
		t.Fatalf("want exactly one error for one bad value, got %d:\n%s", n, dump(issues))
	}
}

func TestAllErrorsReportedAtOnce(t *testing.T) {
	text := applyEdits(edit{7, "  count: 0"}, edit{15, "  mode: nope"}, edit{21, "  error_rate_max: 2"})
	_, issues := Parse("t.yaml", []byte(text), LoadOptions{Getenv: noEnv})
	if n := len(issues.Errors()); n != 3 {
		t.Fatalf("want 3 errors, got %d:\n%s", n, dump(issues))
	}
	for i := 1; i < len(issues); i++ {
		if issues[i].Line < issues[i-1].Line {
			t.Fatalf("issues not in file order:\n%s", dump(issues))
		}
	}
}

func TestEnvUnsetIsErrorForRun(t *testing.T) {
	text := insertUnder(t, []edit{{0, "  headers: {Authorization: \"Bearer ${PLLOAD_TOKEN}\"}"}}, map[string]int{"target.": 5}, "target.")
	_, issues := Parse("t.yaml", []byte(text), LoadOptions{Getenv: noEnv})
	if len(issues.Errors()) != 0 || len(issues.Warnings()) != 1 {
		t.Fatalf("validate: want one warning, got:\n%s", dump(issues))
	}
	_, issues = Parse("t.yaml", []byte(text), LoadOptions{Getenv: noEnv, ForRun: true})
	if len(issues.Errors()) != 1 || !strings.Contains(issues.Errors()[0].Message, "PLLOAD_TOKEN is not set") {
		t.Fatalf("run: want one error naming PLLOAD_TOKEN, got:\n%s", dump(issues))
	}
	set := func(k string) string { return map[string]string{"PLLOAD_TOKEN": "sekret"}[k] }
	s, issues := Parse("t.yaml", []byte(text), LoadOptions{Getenv: set, ForRun: true})
	if len(issues) != 0 {
		t.Fatalf("with the variable set: %s", dump(issues))
	}
	if got := Expand(s.Target.Headers["Authorization"], set); got != "Bearer sekret" {
		t.Fatalf("Expand = %q", got)
	}
}

func TestPersonaFileLoads(t *testing.T) {
	text := applyEdits(edit{7, "  source: file"}, edit{8, "  file: personas.jsonl"})
	s, issues := Parse("testdata/t.yaml", []byte(text), LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	w, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Personas) != 2 || w.Personas[1].Name != "Bo" || w.Personas[0].Tokens != o200kForTest(t).Count("You are Ada, a careful tutor.") {
		t.Fatalf("personas = %+v", w.Personas)
	}
}

func TestRecursiveAliasesAndAliasBombsAreRefused(t *testing.T) {
	for _, text := range []string{
		"load: {stages: &x [*x]}\n",
		"target: {extra_body: {a: &a [1,1,1,1,1,1,1,1,1,1], b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a], c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b], d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c], e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d], f: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]}}\n",
	} {
		done := make(chan Issues, 1)
		go func() { _, is := Parse("t.yaml", []byte(text), LoadOptions{Getenv: noEnv}); done <- is }()
		select {
		case is := <-done:
			if is.Err() == nil {
				t.Fatalf("accepted %q", text)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("parsing %q did not finish", text)
		}
	}
}
