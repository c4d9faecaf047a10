package engine

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/plload/plload/engine/h1client"
	"github.com/plload/plload/sse"
	"github.com/plload/plload/workload"
)

// HTTPClientEnv names the environment variable that puts http:// targets on Go's net/http client
// instead of plload's HTTP/1.1 one (PLLOAD_HTTP_CLIENT=net/http), or on plload's client with each
// streamed body read on its request's goroutine instead of the poller (=h1-blocking, the client of
// the release before): for a side-by-side comparison, or a server the lean client does not get on
// with.
const HTTPClientEnv = "PLLOAD_HTTP_CLIENT"

// newTransports returns the stage's transport and the one a retry uses (a new connection per
// request). http:// targets get the lean HTTP/1.1 client (package h1client) with its poller
// unless HTTPClientEnv says otherwise; https:// targets always get net/http.
func newTransports(sc *workload.Scenario, baseURL string, maxConns int, getenv func(string) string) (http.RoundTripper, http.RoundTripper, error) {
	switch v := getenv(HTTPClientEnv); {
	case strings.HasPrefix(baseURL, "http://") && (v == "" || v == "h1-blocking"):
		var p *h1client.Poller
		if v == "" {
			p, _ = h1client.SharedPoller() // none (not Linux): bodies are read on their requests' goroutines
		}
		return h1client.New(h1client.Config{MaxIdle: maxConns + 16, Poller: p}), h1client.New(h1client.Config{NoReuse: true, Poller: p}), nil
	case v != "" && v != "net/http" && v != "h1-blocking":
		return nil, nil, fmt.Errorf("%s=%q: accepted are net/http, h1-blocking, or unset for plload's own HTTP/1.1 client on http:// targets", HTTPClientEnv, v)
	}
	tr, err := newTransport(sc, maxConns)
	if err != nil {
		return nil, nil, err
	}
	fresh := tr.Clone()
	fresh.DisableKeepAlives = true
	return tr, fresh, nil
}

// newTransport is tuned for load generation: HTTP/1.1 with keep-alive so each in-flight session holds
// one connection, no compression (it would hide the server's byte timing), and the scenario's TLS.
func newTransport(sc *workload.Scenario, maxConns int) (*http.Transport, error) {
	tr := &http.Transport{
		Proxy:               nil, // a proxy would be measured too; load tests go straight to the target
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        maxConns + 16,
		MaxIdleConnsPerHost: maxConns + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	tr.Protocols = &protocols
	if strings.HasPrefix(sc.Target.BaseURL, "https://") {
		cfg := &tls.Config{InsecureSkipVerify: sc.Target.TLS.InsecureSkipVerify} //nolint:gosec // the user asked for it; validate warns
		if ca := sc.Target.TLS.CAFile; ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return nil, fmt.Errorf("target.tls.ca_file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("target.tls.ca_file %s: no PEM certificates in it", ca)
			}
			cfg.RootCAs = pool
		}
		tr.TLSClientConfig = cfg
	}
	return tr, nil
}

// bodyBuilder renders request bodies. The parts that never change (model, options, extra_body) are
// rendered once per stage.
type bodyBuilder struct {
	chat   bool
	prefix []byte // `{"model":...` of target.model
	// prefixes are the prefixes of target.models' names, for sessions that ask for one of them.
	prefixes  map[string][]byte
	maxField  string // "" when extra_body sets the max-tokens field itself
	fixedTail []byte // `,"stream":true,...}` with extra_body
	// exactOK: extra_body does not set ignore_eos, so a trace's exact output lengths may.
	exactOK bool
	// toolsTokens is the tools block's length in the scenario's tokenizer: a server counts it
	// in every request's prompt, so the client's count of the prompt does too.
	toolsTokens int
}

// reservedKeys are the body keys plload owns; extra_body may not set them.
var reservedKeys = []string{"model", "messages", "prompt", "stream"}

func newBodyBuilder(sc *workload.Scenario, w *workload.Workload) (*bodyBuilder, error) {
	t := sc.Target
	b := &bodyBuilder{chat: t.Endpoint != "completions", maxField: t.MaxTokensField}
	modelPrefix := func(name string) []byte {
		model, _ := json.Marshal(name)
		return append([]byte(`{"model":`), model...)
	}
	b.prefix = modelPrefix(t.Model)
	for _, m := range t.Models {
		if b.prefixes == nil {
			b.prefixes = map[string][]byte{}
		}
		b.prefixes[m.Name] = modelPrefix(m.Name)
	}
	reserved := reservedKeys
	var features bytes.Buffer // what the session's workload adds to every request (docs/scenario.md)
	if w != nil {
		if tools := w.ToolsJSON(); tools != nil {
			reserved = append(slices.Clone(reserved), "tools", "tool_choice")
			features.WriteString(`,"tools":`)
			features.Write(tools)
			b.toolsTokens = sc.Tokenizer().Count(string(tools))
			features.WriteString(`,"tool_choice":`)
			features.Write(appendString(nil, w.ToolChoice()))
		}
		if rf := w.ResponseFormatJSON(); rf != nil {
			reserved = append(slices.Clone(reserved), "response_format")
			features.WriteString(`,"response_format":`)
			features.Write(rf)
		}
	}
	keys := make([]string, 0, len(t.ExtraBody))
	for k := range t.ExtraBody {
		if slices.Contains(reserved, k) {
			return nil, fmt.Errorf("target.extra_body.%s: plload sets %s itself; remove it from extra_body", k, k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var tail bytes.Buffer
	tail.Write(features.Bytes())
	if sc.Streamed() {
		tail.WriteString(`,"stream":true`)
		if _, set := t.ExtraBody["stream_options"]; !set {
			tail.WriteString(`,"stream_options":{"include_usage":true}`)
		}
	} else {
		tail.WriteString(`,"stream":false`)
	}
	for _, k := range keys {
		v, err := json.Marshal(jsonable(t.ExtraBody[k]))
		if err != nil {
			return nil, fmt.Errorf("target.extra_body.%s: %w", k, err)
		}
		kq, _ := json.Marshal(k)
		tail.WriteByte(',')
		tail.Write(kq)
		tail.WriteByte(':')
		tail.Write(v)
	}
	tail.WriteByte('}')
	b.fixedTail = tail.Bytes()
	if _, set := t.ExtraBody[b.maxField]; set {
		b.maxField = "" // the user's extra_body value wins
	}
	_, ignoreSet := t.ExtraBody["ignore_eos"]
	b.exactOK = !ignoreSet
	return b, nil
}

// jsonable converts YAML-decoded maps (map[string]any, or map[any]any from nested YAML) to JSON-able ones.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, vv := range x {
			out[k] = jsonable(vv)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, vv := range x {
			out[fmt.Sprint(k)] = jsonable(vv)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, vv := range x {
			out[i] = jsonable(vv)
		}
		return out
	}
	return v
}

// message is one chat message of a session's history, with its JSON rendered once: a session re-sends
// its whole history every turn.
//
// The content is kept only inside encoded, at its exact size: a session holds its history for its
// whole life, thinking most of it, and a second copy of every message's text (with the slack of the
// buffers it was built in) doubled what the history held (bench/README.md's memory passes). text() reads it back for the
// rare uses that need it.
type message struct {
	role    string
	encoded []byte // {"role":...,"content":...}
	tokens  int    // content's tokens in the scenario's tokenizer, for input_sequence_length without usage
}

func newMessage(role, content string, tokens int) message {
	quoted := appendString(nil, content)
	enc := make([]byte, 0, len(`{"role":"","content":}`)+len(role)+len(quoted))
	enc = append(enc, `{"role":"`...)
	enc = append(enc, role...)
	enc = append(enc, `","content":`...)
	enc = append(enc, quoted...)
	enc = append(enc, '}')
	return message{role: role, encoded: enc, tokens: tokens}
}

// text is the message's content when it is text ("" for none, null, or a list of parts): the
// completions endpoint's transcript and the nonce read it.
func (m message) text() string {
	var v struct {
		Content any `json:"content"`
	}
	_ = json.Unmarshal(m.encoded, &v)
	s, _ := v.Content.(string)
	return s
}

// newToolCallsMessage is the assistant's answer that asked for tool calls: its content (null when it
// had none) and its tool_calls exactly as streamed (docs/scenario.md: the server's own calls, never the
// client's idea of them).
func newToolCallsMessage(content string, calls []sse.ToolCall, tokens int) message {
	enc := []byte(`{"role":"assistant","content":`)
	if content == "" {
		enc = append(enc, "null"...)
	} else {
		enc = appendString(enc, content)
	}
	enc = append(enc, `,"tool_calls":`...)
	enc = sse.AppendToolCallsJSON(enc, calls)
	enc = append(enc, '}')
	return message{role: "assistant", encoded: enc, tokens: tokens}
}

// newToolMessage is one tool call's result.
func newToolMessage(callID, content string, tokens int) message {
	enc := append([]byte(`{"role":"tool","tool_call_id":`), appendString(nil, callID)...)
	enc = append(enc, `,"content":`...)
	enc = appendString(enc, content)
	enc = append(enc, '}')
	return message{role: "tool", encoded: enc, tokens: tokens}
}

// build renders the request for the history (ending with the new user message) to model (""
// target.model). exact asks for exactly maxTokens (ignore_eos, which vLLM and SGLang honour), unless
// extra_body decides.
func (b *bodyBuilder) build(buf []byte, model string, history []message, maxTokens int, exact bool) []byte {
	prefix := b.prefix
	if p, ok := b.prefixes[model]; ok {
		prefix = p
	}
	if buf == nil && b.chat {
		// Sized to fit: a guessed size either copies the body again as it grows or zeroes kilobytes
		// it never uses, on every request (bench/README.md, "CPU per chunk").
		n := len(prefix) + len(b.fixedTail) + 96 // 96: the max-tokens field, its value and ignore_eos
		for _, m := range history {
			n += len(m.encoded) + 1
		}
		buf = make([]byte, 0, n)
	}
	buf = append(buf[:0], prefix...)
	if b.chat {
		buf = append(buf, `,"messages":[`...)
		for i, m := range history {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, m.encoded...)
		}
		buf = append(buf, ']')
	} else {
		// The completions endpoint takes one prompt: the history laid out as a transcript.
		var sb strings.Builder
		for _, m := range history {
			sb.WriteString(m.role)
			sb.WriteString(": ")
			sb.WriteString(m.text())
			sb.WriteString("\n\n")
		}
		sb.WriteString("assistant:")
		buf = append(buf, `,"prompt":`...)
		buf = appendString(buf, sb.String())
	}
	if b.maxField != "" {
		buf = append(buf, `,"`...)
		buf = append(buf, b.maxField...)
		buf = append(buf, `":`...)
		buf = strconv.AppendInt(buf, int64(maxTokens), 10)
	}
	if exact && b.exactOK {
		buf = append(buf, `,"ignore_eos":true`...)
	}
	return append(buf, b.fixedTail...)
}

func appendString(buf []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(buf, q...)
}

// prepareClient builds the stage's HTTP client, URL and headers. Each stage gets fresh connections.
func (s *stageRun) prepareClient() error {
	sc := s.cfg.Scenario
	base := s.cfg.BaseURL
	if base == "" {
		base = workload.Expand(sc.Target.BaseURL, s.cfg.Getenv)
	}
	base = strings.TrimRight(base, "/")
	path := "/chat/completions"
	if sc.Target.Endpoint == "completions" {
		path = "/completions"
	}
	s.url = base + path
	s.host = strings.TrimPrefix(strings.TrimPrefix(base, "http://"), "https://")
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		s.host = u.Host
	}
	// One connection per request that can be in flight: concurrency sessions, arrival_rate's open
	// sessions, or the open-loop modes' max_in_flight.
	maxConns := s.pool.Spec.Concurrency + s.pool.Spec.MaxConcurrency + s.maxInFlight()
	tr, fresh, err := newTransports(sc, base, maxConns, s.cfg.Getenv)
	if err != nil {
		return err
	}
	s.client = &http.Client{Transport: tr, CheckRedirect: noRedirects}
	s.freshClient = &http.Client{Transport: fresh, CheckRedirect: noRedirects}
	if u, err := url.Parse(s.url); err == nil {
		if _, ok := tr.(*h1client.Transport); ok {
			s.connAddr = h1client.Addr(u)
		}
	}
	s.headers = http.Header{}
	s.sessionHeader = sc.Target.SessionHeader
	s.headers.Set("Content-Type", "application/json")
	s.headers.Set("Accept", "text/event-stream")
	s.headers.Set("User-Agent", "plload")
	// Asked for explicitly: net/http's transport (DisableCompression) and h1client send no
	// Accept-Encoding at all, which lets a server choose gzip, and a compressed stream's bytes arrive
	// in bursts that hide the server's token timing. An answer compressed anyway is an error naming
	// its Content-Encoding (send).
	s.headers.Set("Accept-Encoding", "identity")
	if env := sc.Target.APIKeyEnv; env != "" {
		if key := s.cfg.Getenv(env); key != "" {
			s.headers.Set("Authorization", "Bearer "+key)
			s.secrets = addSecret(s.secrets, key)
		}
	}
	for k, v := range sc.Target.Headers {
		value := workload.Expand(v, s.cfg.Getenv)
		s.headers.Set(k, value)
		if workload.IsSecretHeader(k) {
			s.secrets = headerSecrets(s.secrets, v, value, s.cfg.Getenv)
		}
	}
	s.body, err = newBodyBuilder(sc, s.cfg.Workload)
	return err
}

// noRedirects stops the client at a 3xx answer, which send records as an error naming its
// Location: a load test measures the one target the user named, and following a redirect would
// measure another server (with the API key sent to it), or turn a POST into a GET (302, 303).
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// maxMessageBytes bounds a record's error message (docs/records.md: a non-2xx answer's body is
// kept up to 4 KiB).
const maxMessageBytes = 4 << 10
