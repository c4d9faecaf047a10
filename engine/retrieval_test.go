package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plload/plload/mock"
	"github.com/plload/plload/workload"
)

// exchangeLog is what a capturing proxy saw: each request's path, body, headers and answer.
type exchangeLog struct {
	mu    sync.Mutex
	items []loggedExchange
}

type loggedExchange struct {
	path    string
	body    map[string]any
	header  http.Header
	answer  []byte
	corrID  string
	started time.Time
}

// startLoggedMock serves the real mock behind a proxy that keeps every POST's body and answer.
func startLoggedMock(t *testing.T, mutate func(*mock.Config)) (string, *exchangeLog) {
	t.Helper()
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.TPS = 5*time.Millisecond, 1000
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	log := &exchangeLog{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			srv.ServeHTTP(w, r)
			return
		}
		data, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(data))
		var body map[string]any
		json.Unmarshal(data, &body)
		rec := &recordingWriter{ResponseWriter: w}
		started := time.Now()
		srv.ServeHTTP(rec, r)
		log.mu.Lock()
		log.items = append(log.items, loggedExchange{path: r.URL.Path, body: body, header: r.Header.Clone(), answer: rec.buf.Bytes(),
			corrID: r.Header.Get("X-Correlation-ID"), started: started})
		log.mu.Unlock()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: handler}
	go hs.Serve(ln)
	t.Cleanup(func() {
		srv.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String() + "/v1", log
}

// recordingWriter keeps a copy of what the mock writes.
type recordingWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	return w.ResponseWriter.Write(p)
}

func (w *recordingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// retrievalScenario is an embeddings or rerank stage (section: the embeddings: or rerank: block).
func retrievalScenario(base, endpoint, section string) string {
	return `name: t
seed: 5
target:
  base_url: ` + base + `
  model: m
  timeout: 10s
  endpoint: ` + endpoint + `
  api_key_env: PLLOAD_TEST_KEY
` + section + `load:
  mode: concurrency
  stages:
    - {concurrency: 2, duration: 800ms}
slo: {e2e: {p95: 2s}, error_rate_max: 0.01}
cost: {gpu_hourly_usd: 1}
`
}

// An embeddings stage against the mock: every request carries its drawn inputs and the key as a
// bearer token; every record has its vectors counted (one per input), the input length as ISL and
// the server's usage, and no output tokens.
func TestEmbeddingsStage(t *testing.T) {
	base, log := startLoggedMock(t, nil)
	res, dir, err := runScenario(t, context.Background(), retrievalScenario(base, "embeddings",
		"embeddings:\n  inputs: {min: 1, max: 5}\n  input_tokens: {min: 10, max: 40}\n"))
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	if res[0].Errors != 0 || len(recs) < 5 {
		t.Fatalf("%d errors, %d records", res[0].Errors, len(recs))
	}
	inputs := map[string]int{} // by request id
	log.mu.Lock()
	for _, x := range log.items {
		if x.path != "/v1/embeddings" {
			continue
		}
		in, _ := x.body["input"].([]any)
		inputs[x.header.Get("X-Request-ID")] = len(in)
		if x.header.Get("Authorization") != "Bearer "+secretKey || x.body["model"] != "m" {
			t.Errorf("request %v with headers %v", x.body["model"], x.header)
		}
	}
	log.mu.Unlock()
	for _, r := range recs {
		md, m := r["metadata"].(map[string]any), r["metrics"].(map[string]any)
		id := md["x_request_id"].(string)
		items := metricValue(m, "retrieval_items")
		if want, ok := inputs[id]; !ok || items != float64(want) || want < 1 || want > 5 {
			t.Errorf("record %s: %v items; the request sent %d inputs", id, items, want)
		}
		if metricValue(m, "input_sequence_length") < 10 || metricValue(m, "usage_prompt_tokens") < 1 || m["output_sequence_length"] != nil || m["time_to_first_token"] != nil {
			t.Errorf("record %s metrics %v", id, m)
		}
	}
}

// A rerank answer one score short is an error record saying so, never a fast success.
func TestRerankShortAnswerIsAnError(t *testing.T) {
	base, _ := startLoggedMock(t, nil)
	short := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"results":[{"index":0,"relevance_score":0.9}],"usage":{"prompt_tokens":10,"total_tokens":10}}`)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: short}
	go hs.Serve(ln)
	defer hs.Close()
	_ = base
	res, dir, _ := runScenario(t, context.Background(), retrievalScenario("http://"+ln.Addr().String()+"/v1", "rerank",
		"rerank:\n  documents: 4\n  document_tokens: 20\n  query_tokens: 5\n"))
	recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	if len(res) != 1 || res[0].OK != 0 || len(recs) == 0 {
		t.Fatalf("%+v, %d records", res, len(recs))
	}
	e := recs[0]["error"].(map[string]any)
	if msg, _ := e["message"].(string); e["type"] != "InvalidInferenceResultError" || !strings.Contains(msg, "1") || !strings.Contains(msg, "4") {
		t.Errorf("error %v", e)
	}
}

// A RAG turn against the mock: the embed step sends the question alone, the rerank step the
// question and the turn's candidates, and the chat's user message is the rerank's top_k documents,
// best first, then the question; every step is a record of its own tied to the turn, and the
// chat's rag_turn_start_ns is when the turn was due (its first step's intended start).
func TestRAGTurnsSendTheRerankedDocuments(t *testing.T) {
	base, log := startLoggedMock(t, nil)
	session := shortSessions + `
  rag:
    candidates: 5
    document_tokens: {min: 20, max: 40}
    top_k: 2
    embed: {model: emb}
    rerank: {model: rr}`
	res, dir, err := runScenario(t, context.Background(), scenarioYAML(base, session, "  mode: concurrency\n  stages:\n    - {concurrency: 2, duration: 800ms}"))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Errors != 0 {
		t.Fatalf("%d errors", res[0].Errors)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	type turn struct{ embed, rerank, chat *loggedExchange }
	turns := map[string][]*turn{} // by correlation id, in order
	for i := range log.items {
		x := &log.items[i]
		ts := turns[x.corrID]
		switch x.path {
		case "/v1/embeddings":
			turns[x.corrID] = append(ts, &turn{embed: x})
		case "/v1/rerank":
			if len(ts) == 0 || ts[len(ts)-1].rerank != nil {
				t.Fatalf("a rerank without its embed step: %v", x.body)
			}
			ts[len(ts)-1].rerank = x
		case "/v1/chat/completions":
			if len(ts) == 0 || ts[len(ts)-1].rerank == nil || ts[len(ts)-1].chat != nil {
				t.Fatalf("a chat request without its steps")
			}
			ts[len(ts)-1].chat = x
		}
	}
	checked := 0
	for _, ts := range turns {
		for _, tu := range ts {
			if tu.chat == nil {
				continue // the stage ended between the steps and the chat
			}
			question := tu.embed.body["input"].([]any)[0].(string)
			docs := tu.rerank.body["documents"].([]any)
			if tu.embed.body["model"] != "emb" || tu.rerank.body["model"] != "rr" || tu.rerank.body["query"] != question || len(docs) != 5 || tu.rerank.body["top_n"] != float64(2) {
				t.Fatalf("steps: %v / %v", tu.embed.body, tu.rerank.body)
			}
			var ranked struct {
				Results []struct {
					Index int `json:"index"`
				} `json:"results"`
			}
			if err := json.Unmarshal(tu.rerank.answer, &ranked); err != nil || len(ranked.Results) < 2 {
				t.Fatalf("rerank answer %s: %v", tu.rerank.answer, err)
			}
			msgs := tu.chat.body["messages"].([]any)
			user := msgs[len(msgs)-1].(map[string]any)["content"].(string)
			want := docs[ranked.Results[0].Index].(string) + "\n\n" + docs[ranked.Results[1].Index].(string) + "\n\n" + question
			if !strings.HasSuffix(user, want) {
				t.Fatalf("the chat's user message is not the reranked documents then the question:\n%.300q\nwant\n%.300q", user, want)
			}
			checked++
		}
	}
	if checked < 2 {
		t.Fatalf("%d RAG turns checked", checked)
	}
	recs := readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl"))
	steps, chats := map[string]float64{}, 0
	for _, r := range recs {
		md := r["metadata"].(map[string]any)
		if step, _ := md["rag_step"].(string); step != "" {
			steps[step+"|"+md["x_correlation_id"].(string)+"|"+jsonNum(md["turn_index"])] = asFloat(md["request_start_ns"])
			if step == "embed" {
				steps["due|"+md["x_correlation_id"].(string)+"|"+jsonNum(md["turn_index"])] = asFloat(md["intended_start_ns"])
			}
		}
	}
	for _, r := range recs {
		md := r["metadata"].(map[string]any)
		if md["rag_step"] != nil || r["error"] != nil {
			continue
		}
		key := "|" + md["x_correlation_id"].(string) + "|" + jsonNum(md["turn_index"])
		start := asFloat(md["rag_turn_start_ns"])
		if start == 0 || start != steps["due"+key] || start > steps["embed"+key] || steps["rerank"+key] <= steps["embed"+key] || asFloat(md["request_start_ns"]) <= steps["rerank"+key] {
			t.Errorf("chat record %v: its turn's steps %v", md, steps)
		}
		chats++
	}
	if chats < 2 {
		t.Errorf("%d chat records", chats)
	}
}

func jsonNum(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// metricValue is a record metric's value (0 when absent).
func metricValue(m map[string]any, tag string) float64 {
	v, _ := m[tag].(map[string]any)
	return asFloat(v["value"])
}

// asFloat is a JSON number read with or without UseNumber (0 when absent).
func asFloat(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case json.Number:
		f, _ := n.Float64()
		return f
	}
	return 0
}

// A RAG step whose server is not running stops the run before any traffic, naming the step's key;
// one whose server does not serve the API (501) too.
func TestRAGStepPreflight(t *testing.T) {
	base, _ := startLoggedMock(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	notImplemented := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotImplemented)
		io.WriteString(w, `{"error":{"code":501,"message":"This server does not support embeddings. Start it with `+"`--embeddings`"+`","type":"not_supported_error"}}`)
	})
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: notImplemented}
	go hs.Serve(ln2)
	defer hs.Close()
	for _, tc := range []struct{ url, want string }{
		{dead, "check the host and port of session.rag.embed.base_url"},
		{"http://" + ln2.Addr().String() + "/v1", "does not serve the embeddings API there: point session.rag.embed.base_url"},
	} {
		session := shortSessions + "\n  rag:\n    embed: {base_url: \"" + tc.url + "\"}\n    rerank: {}"
		sc, issues := workload.Parse("t.yaml", []byte(scenarioYAML(base, session, "  mode: concurrency\n  stages:\n    - {concurrency: 1, duration: 500ms}")), workload.LoadOptions{ForRun: true, Getenv: testEnv})
		if err := issues.Err(); err != nil {
			t.Fatal(err)
		}
		w, err := sc.Build()
		if err != nil {
			t.Fatal(err)
		}
		_, err = Preflight(context.Background(), Config{Scenario: sc, Workload: w, Getenv: testEnv})
		var pe *PreflightError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.url) {
			t.Errorf("preflight with the embed step at %s: %v; want an error naming %q", tc.url, err, tc.want)
		}
	}
}
