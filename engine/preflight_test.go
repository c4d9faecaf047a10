package engine

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// preflightServer answers the preflight's streamed chat request with stream and GET /v1/models with
// models.
func preflightServer(t *testing.T, stream, models string) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(models))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(stream))
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/v1"
}

// preflightOn runs the preflight of a small scenario against base, with modelsLine (if any) in its
// target.
func preflightOn(t *testing.T, base, modelsLine string) (string, error) {
	t.Helper()
	text := scenarioYAML(base, shortSessions, "  mode: concurrency\n  stages:\n    - {concurrency: 1, duration: 1s}")
	if modelsLine != "" {
		text = strings.Replace(text, "  model: m\n", "  model: base-model\n"+modelsLine, 1)
	}
	sc, w := parseForPreflight(t, text)
	return Preflight(context.Background(), Config{Scenario: sc, Workload: w, Getenv: testEnv})
}

const okStream = "data: {\"choices\":[{\"delta\":{\"content\":\"OK\"},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"

// TestPreflightAcceptsAliases: llama-server started with -a base-model,sql-lora lists one model
// whose aliases name both, and serves both: a model mix of the two passes; a name in neither the
// ids nor the aliases is still refused, naming what is served; an aliases field of another shape
// leaves the ids to decide.
// Catches: a preflight that reads only data[].id and refuses an alias the server serves (exit 2).
func TestPreflightAcceptsAliases(t *testing.T) {
	llama := `{"models":[{"name":"base-model","model":"base-model"}],"object":"list","data":[{"id":"base-model","aliases":["base-model","sql-lora"],"tags":[],"object":"model","owned_by":"llamacpp","meta":{"n_params":1}}]}`
	mix := "  models: [{name: base-model, weight: 3}, {name: sql-lora, weight: 1}]\n"
	for _, tc := range []struct {
		name, models, mix string
		wantErr           []string // what the error must name; nil: no error and no warning
	}{
		{"an alias is served", llama, mix, nil},
		{"a name in neither ids nor aliases", llama, "  models: [{name: base-model, weight: 3}, {name: chat-lora, weight: 1}]\n",
			[]string{`"chat-lora"`, "base-model, sql-lora", "preflight: GET "}},
		{"aliases of another shape: the id still counts", `{"data":[{"id":"base-model","aliases":"sql-lora"},{"id":"sql-lora"}]}`, mix, nil},
		{"aliases of another shape add nothing", `{"data":[{"id":"base-model","aliases":"sql-lora"}]}`, mix,
			[]string{`"sql-lora"`, "it serves: base-model)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warning, err := preflightOn(t, preflightServer(t, okStream, tc.models), tc.mix)
			if tc.wantErr == nil {
				if err != nil || warning != "" {
					t.Fatalf("preflight: warning %q, error %v; want neither", warning, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("preflight passed (warning %q); want an error naming %q", warning, tc.wantErr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("preflight error %q does not say %q", err, want)
				}
			}
		})
	}
}

// TestPreflightHeldBackToken: the preflight asks for one token; when that token is only part of a
// multibyte character the server holds it back and streams no text, yet its stream ends normally
// with finish_reason length or a usage of 1 completion token: that server works, and the preflight
// says nothing. An answer with no text and no sign of a generated token still gets the warning.
// Catches: "the answer has no content" warned on a healthy llama.cpp.
func TestPreflightHeldBackToken(t *testing.T) {
	role := "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n"
	for _, tc := range []struct {
		name, stream string
		warn         bool
	}{
		{"finish_reason length and usage 1", role +
			"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\n" +
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1,\"total_tokens\":10}}\n\ndata: [DONE]\n\n", false},
		{"finish_reason length, no usage", role + "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n", false},
		{"usage 1, finish_reason stop", role +
			"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1,\"total_tokens\":10}}\n\ndata: [DONE]\n\n", false},
		{"no token, finish_reason stop, usage 0", role +
			"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":0,\"total_tokens\":9}}\n\ndata: [DONE]\n\n", true},
		{"nothing but the role", role + "data: [DONE]\n\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warning, err := preflightOn(t, preflightServer(t, tc.stream, `{"data":[]}`), "")
			if err != nil {
				t.Fatalf("preflight refused: %v", err)
			}
			if warned := strings.Contains(warning, "no content"); warned != tc.warn || !tc.warn && warning != "" {
				t.Fatalf("warning %q; want a no-content warning: %v", warning, tc.warn)
			}
		})
	}
}

// TestPreflightNamesAnErrorEventAsOne: a 200 stream that carries an error event stops the preflight
// saying so, with the server's message, type and code; never as an HTTP 502 the server did not send
// (the record's 502 is AIPerf's convention for an in-stream error).
func TestPreflightNamesAnErrorEventAsOne(t *testing.T) {
	base := preflightServer(t, "data: {\"error\":{\"message\":\"the model crashed\",\"type\":\"server_error\",\"code\":\"engine_dead\"}}\n\n", `{"data":[{"id":"m"}]}`)
	_, err := preflightOn(t, base, "")
	var pe *PreflightError
	if !errors.As(err, &pe) {
		t.Fatalf("preflight: %v; want a PreflightError", err)
	}
	want := "HTTP 200, then an error event in the stream: server error in stream: the model crashed (server_error, code engine_dead)"
	if !strings.HasPrefix(pe.Problem, want) || strings.Contains(pe.Problem, "502") {
		t.Errorf("problem %q; want it to start %q, with no 502", pe.Problem, want)
	}
}
