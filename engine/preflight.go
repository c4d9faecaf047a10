package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/protocol"
)

// PreflightError is a target that cannot serve the scenario's requests, found by the one request
// sent before the first stage: what was asked, what went wrong and what to do about it.
type PreflightError struct {
	URL, Problem, Fix string
	Method            string // "" is POST, the request a stage sends
}

func (e *PreflightError) Error() string {
	method := e.Method
	if method == "" {
		method = http.MethodPost
	}
	return fmt.Sprintf("preflight: %s %s: %s; %s (no stage was started; --no-preflight skips this check)", method, e.URL, e.Problem, e.Fix)
}

// Preflight sends one real streamed request — the scenario's model and endpoint, one output token —
// before any stage, so a dead port, a wrong URL, a missing key or a server that does not speak SSE
// stops the run at once with its cause instead of filling a stage with errors. It returns an error
// for what no stage could survive, and a warning (with a nil error) for what may pass: a 429 or 5xx,
// a cut or empty answer.
func Preflight(ctx context.Context, cfg Config) (warning string, err error) {
	if cfg.Getenv == nil {
		// As Run reads it: the check's request carries the stage's key and headers, and goes through
		// the run's own client (refusing a bad choice of it).
		cfg.Getenv = os.Getenv
	}
	if len(cfg.Workload.Stages) == 0 {
		return "", nil
	}
	s := &stageRun{cfg: &cfg, pool: &cfg.Workload.Stages[0], clock: newClock(), log: slog.New(slog.DiscardHandler),
		timeout: cfg.Scenario.Target.Timeout.D(), maxEventBytes: cfg.MaxEventBytes, reason: cancelReason{interrupt: ctx}}
	if err := s.prepareClient(); err != nil {
		return "", err
	}
	defer s.client.CloseIdleConnections()
	// A retrieval stage's request, or a RAG turn's steps (each may go to a server of its own),
	// then the chat request.
	var warnings []string
	for _, target := range append([]*retrievalTarget{s.retrieval}, s.ragSteps...) {
		if target == nil {
			continue
		}
		// One text twice, whose two vectors must agree: a server that computed no embedding (llama-server
		// under --reranking) can answer with leftovers of memory that look like numbers.
		q := protocol.RetrievalQuery{Inputs: []string{"Say OK.", "Say OK."}, Agree: true}
		if target.api.Name() == "rerank" {
			q = protocol.RetrievalQuery{Query: "Say OK.", Inputs: []string{"OK.", "No."}}
		}
		ex := &exchange{call: &retrievalCall{target: target, query: q}, rec: metrics.Record{XRequestID: newUUID(), XCorrelationID: newUUID()}}
		body, err := target.api.Body(target.model, q, target.extra)
		if err != nil {
			return "", err
		}
		s.send(ctx, ex, body, 3)
		warning, err := s.preflightVerdict(ctx, ex, target.url)
		if err != nil {
			return "", err
		}
		if warning != "" {
			warnings = append(warnings, warning)
		}
	}
	if s.api != nil {
		history := []protocol.Message{protocol.NewMessage("user", "Say OK.", 3)}
		ex := &exchange{rec: metrics.Record{XRequestID: newUUID(), XCorrelationID: newUUID()}}
		s.send(ctx, ex, s.body.Build(nil, "", history, 1, false), 3)
		warning, err := s.preflightVerdict(ctx, ex, s.url)
		if err != nil {
			return "", err
		}
		if warning != "" {
			warnings = append(warnings, warning)
		}
	}
	if len(warnings) > 0 {
		return strings.Join(warnings, "\n"), nil
	}
	return s.checkModels(ctx)
}

// preflightVerdict judges the preflight's request ex, sent to url: nothing when it succeeded, an
// error for what no stage could survive, a warning for what may pass.
func (s *stageRun) preflightVerdict(ctx context.Context, ex *exchange, url string) (warning string, err error) {
	url = s.scrub(url) // a key in the base URL's query is named as ***
	rec := &ex.rec
	if rec.Error == nil || rec.WasCancelled || ex.heldBack {
		return "", nil
	}
	sc := s.cfg.Scenario
	// The terminal gets the start of what the server said (the record keeps 4 KiB of it); a
	// redirect's or a compressed answer's own words are the fix below, so the problem is only named.
	problem := s.scrubCut(rec.Error.Message, preflightShown)
	if len(problem) < len(rec.Error.Message) {
		problem += "…"
	}
	switch {
	case rec.Error.Type == metrics.ErrTypeSSE && ex.call != nil:
		problem = "HTTP 200 with an error object: " + problem // a retrieval answer is not streamed
	case rec.Error.Type == metrics.ErrTypeSSE:
		// An error event in a 200 stream: the record's code is AIPerf's convention, not the server's.
		problem = "HTTP 200, then an error event in the stream: " + problem
	case rec.Error.Code.OK:
		problem = fmt.Sprintf("HTTP %d %s: %s", rec.Error.Code.V, rec.Error.Type, problem)
	}
	switch {
	case rec.Error.Code.OK && rec.Error.Code.V >= 300 && rec.Error.Code.V < 400:
		problem = fmt.Sprintf("HTTP %d %s", rec.Error.Code.V, rec.Error.Type)
	case ex.encoding != "":
		problem = "the answer came compressed"
	}
	fail := func(fix string) (string, error) { return "", &PreflightError{URL: url, Problem: problem, Fix: fix} }
	if c := ex.call; c != nil {
		if fix := retrievalFix(c.target, ex, metrics.FailureKind(rec)); fix != "" {
			return fail(fix)
		}
	}
	kind := metrics.FailureKind(rec)
	if (kind == "closed" || kind == "reset") && s.speaksOnlyHTTP1(ctx) {
		// An HTTP/1.1 server may close on the HTTP/2 preface before the client reads its refusal.
		problem = fmt.Sprintf(notHTTP2+"%s closed the connection on the HTTP/2 preface and answers HTTP/1.1: it does not speak h2c (HTTP/2 without TLS)", s.host)
		return fail("set target.http to auto or 1.1, or use https:// where the server speaks HTTP/2 over TLS")
	}
	switch {
	case strings.HasPrefix(rec.Error.Message, notHTTP2):
		// The record's message ends with the same fix: say it once.
		for _, sep := range []string{": set target.http", "; set target.http"} {
			if i := strings.Index(problem, sep); i > 0 {
				problem = problem[:i]
			}
		}
		return fail("set target.http to auto (HTTP/2 where TLS negotiates it) or 1.1, or use https:// where the server speaks HTTP/2 over TLS")
	case kind == "tls":
		return fail("give the server's CA in target.tls.ca_file (or, for a test server only, target.tls.insecure_skip_verify)")
	case kind == "refused" || kind == "connect" || kind == "dns":
		baseKey := "target.base_url"
		if ex.call != nil {
			baseKey = stepKeys(ex.call.target) + ".base_url"
		}
		return fail("is the server running there? check the host and port of " + baseKey)
	case rec.Error.Code.OK && rec.Error.Code.V >= 300 && rec.Error.Code.V < 400:
		return fail(fmt.Sprintf("the server redirects to %s; plload measures one target and follows no redirects: point target.base_url there", orNone(ex.location)))
	case ex.encoding != "":
		return fail(fmt.Sprintf("the server compressed the answer (Content-Encoding: %s) though plload asked for Accept-Encoding: identity; compressed, a stream's timing is the compressor's: turn compression off on the server or its proxy", ex.encoding))
	case kind == "timeout":
		return fail(timeoutFix(rec, ex.tokenEvents, sc.Target.Timeout.String(), sc.Target.MaxTokensField))
	case rec.Error.Code.OK && (rec.Error.Code.V == 401 || rec.Error.Code.V == 403):
		fix := "the server wants credentials: put the API key in an environment variable and name it in target.api_key_env, or set the header in target.headers"
		if env := sc.Target.APIKeyEnv; env != "" {
			fix = fmt.Sprintf("the server refused the credentials: check the key in $%s (target.api_key_env) and that it may use model %q", env, sc.Target.Model)
		}
		return fail(fix)
	case rec.Error.Code.OK && rec.Error.Code.V == 404:
		if !strings.HasSuffix(s.base, "/v1") {
			return fail(fmt.Sprintf("target.base_url usually ends in /v1 (try %s)", s.scrub(s.target.at("/v1"))))
		}
		return fail(fmt.Sprintf("check target.base_url, target.endpoint (%s) and target.model (%q): many servers answer 404 for a model they do not serve", sc.Target.Endpoint, sc.Target.Model))
	case rec.Error.Code.OK && rec.Error.Code.V >= 400 && rec.Error.Code.V < 500 && rec.Error.Code.V != metrics.StatusTooManyRequests:
		return fail(fmt.Sprintf("the server refused the request itself: check target.model (%q), target.max_tokens_field (%s) and target.extra_body", sc.Target.Model, sc.Target.MaxTokensField))
	case kind == "not SSE":
		return fail(fmt.Sprintf("the server did not stream Server-Sent Events: does target.base_url serve the %s API (target.endpoint)?", s.api.Name()))
	case kind == "stream error":
		return fail("the server answered with an error inside the stream: check target.model and target.extra_body")
	}
	return fmt.Sprintf("preflight: POST %s: %s; going on (this may pass)", url, problem), nil
}

// retrievalFix is the fix for a retrieval request's failure (kind as metrics.FailureKind names it),
// naming the keys that set its target (a RAG step's own, or target's) and what serves its API; ""
// where the generic advice holds (a 429 or a 5xx may pass). A 501 is final: the server does not
// serve that API at all; so is an answer that does not answer the texts asked (a count short,
// all-zero vectors), since a retrieval answer has the same shape every time.
func retrievalFix(t *retrievalTarget, ex *exchange, kind string) string {
	keys, api := stepKeys(t), t.api.Name()
	serves := map[string]string{"embeddings": "a llama-server needs --embeddings and an embedding model (pooling mean, cls or last)",
		"rerank": "a llama-server needs --reranking and a reranker (pooling rank)"}[api]
	code := 0
	if e := ex.rec.Error; e.Code.OK && e.Type != metrics.ErrTypeSSE {
		code = e.Code.V
	}
	switch {
	case ex.rec.Error.Type == metrics.ErrTypeInvalidResult:
		return fmt.Sprintf("the answer does not answer what was asked: point %s.base_url at a server of the %s API (%s)", keys, api, serves)
	case ex.rec.Error.Type == metrics.ErrTypeSSE:
		return fmt.Sprintf("the server answered with an error: check %s.model (%q) and that it serves the %s API (%s)", keys, t.model, api, serves)
	case code >= 300 && code < 400:
		return fmt.Sprintf("the server redirects to %s; plload measures one target and follows no redirects: point %s.base_url there", orNone(ex.location), keys)
	case kind == "timeout":
		return fmt.Sprintf("the server sent no answer within target.timeout: is %s.base_url the service of the %s API, and is its model loaded?", keys, api)
	case code == http.StatusNotImplemented:
		return fmt.Sprintf("the server does not serve the %s API there: point %s.base_url at one that does (%s)", api, keys, serves)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fmt.Sprintf("the server wants other credentials: name the key's environment variable in %s.api_key_env", keys)
	case code == http.StatusNotFound:
		return fmt.Sprintf("check %s.base_url (usually ending in /v1; POST %s goes after it) and %s.model (%q): many servers answer 404 for a model they do not serve", keys, t.api.Path(), keys, t.model)
	case code >= 400 && code < 500 && code != metrics.StatusTooManyRequests:
		return fmt.Sprintf("the server refused the request itself: check %s.model (%q) and that it is an %s model", keys, t.model, map[string]string{"embeddings": "embedding", "rerank": "reranking"}[api])
	}
	return ""
}

// stepKeys is the scenario section that sets t: a RAG step's, or target.
func stepKeys(t *retrievalTarget) string {
	if t.step != "" {
		return "session.rag." + t.step
	}
	return "target"
}

// timeoutFix says what a preflight request that ran past target.timeout did: it asked for one token,
// so an answer that streamed tokens and never ended points at the server, not at a slow start.
func timeoutFix(rec *metrics.Record, tokenEvents int, timeout, maxField string) string {
	switch {
	case tokenEvents > 0:
		return fmt.Sprintf("the server streamed %d token events to a request for one token (%s: 1) but did not end the stream within target.timeout (%s): does it ignore %s, or never send data: [DONE]?", tokenEvents, maxField, timeout, maxField)
	case rec.RequestAckNs.OK:
		return fmt.Sprintf("the server answered the headers but sent no token within target.timeout (%s): is it loading a model?", timeout)
	}
	return fmt.Sprintf("the server sent no answer within target.timeout (%s) to a request for one token: is it loading a model, or is target.base_url a different service?", timeout)
}

// preflightShown bounds how much of a refused answer's text the preflight prints.
const preflightShown = 300

func orNone(location string) string {
	if location == "" {
		return "(no Location given)"
	}
	return location
}

// checkModels asks GET {base}/models whether the target serves every model of target.models (a
// model mix): a missing one stops the run naming it. A target that does not list its models
// passes with a warning.
func (s *stageRun) checkModels(ctx context.Context) (string, error) {
	names := s.cfg.Scenario.Target.Models
	if len(names) == 0 {
		return "", nil
	}
	url := s.target.at("/models")
	ctx, cancel := context.WithTimeout(ctx, min(rttTimeout, s.timeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	for k, v := range s.headers {
		req.Header[k] = v
	}
	// On a new connection: the chat request's may be closed already (llama-server closes every
	// answer's), and a GET on it then fails with EOF and leaves the models unchecked.
	resp, err := s.freshClient.Do(req)
	if err != nil {
		return fmt.Sprintf("preflight: GET %s: %s; the models of target.models were not checked", url, s.scrub(err.Error())), nil
	}
	defer resp.Body.Close()
	// llama-server started with -a base-model,sql-lora lists one entry whose aliases name every
	// name it answers to, and serves each of them: a name counts as served in either place. Aliases
	// stay raw so that another server's field of that name in another shape never loses the list.
	var list struct {
		Data []struct {
			ID      string          `json:"id"`
			Aliases json.RawMessage `json:"aliases"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&list); err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("preflight: GET %s answered %s without a model list; the models of target.models were not checked", url, s.scrubCut(resp.Status, 200)), nil
	}
	var served []string
	for _, m := range list.Data {
		var aliases []string
		_ = json.Unmarshal(m.Aliases, &aliases) // absent or not a list of names: none
		for _, name := range append([]string{m.ID}, aliases...) {
			if name != "" && !slices.Contains(served, name) {
				served = append(served, name)
			}
		}
	}
	for _, m := range names {
		if !slices.Contains(served, m.Name) {
			return "", &PreflightError{Method: http.MethodGet, URL: url, Problem: fmt.Sprintf("target.models names %q, which the server does not list (it serves: %s)", m.Name, s.scrubCut(strings.Join(served, ", "), 500)),
				Fix: "correct the name in target.models, or load that model or adapter on the server"}
		}
	}
	return "", nil
}

// speaksOnlyHTTP1 asks, for a target.http "2" stage on http:// whose request found the connection
// closed, whether the server answers HTTP/1.1 there: one GET of the models list over HTTP/1.1, no
// key sent, no redirect followed, 5 s at most.
func (s *stageRun) speaksOnlyHTTP1(ctx context.Context) bool {
	if !s.conns.requireHTTP2 || !strings.HasPrefix(s.base, "http://") {
		return false
	}
	var h1 http.Protocols
	h1.SetHTTP1(true)
	client := &http.Client{Transport: &http.Transport{Protocols: &h1, Proxy: nil}, CheckRedirect: noRedirects, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.target.at("/models"), nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.ProtoMajor == 1
}
