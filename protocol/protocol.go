// Package protocol holds, per HTTP API a target speaks, how a session's turn becomes the request
// body and how the answer is read: one file per API (chat.go, completions.go, messages.go, responses.go) behind the API
// interface, picked once from target.endpoint (For). The engine sends the body, times the answer's
// events and makes the record; what an event carries (content, reasoning, tool calls, usage, an
// error) comes from the API's reader as sse.Events, the same for every API.
package protocol

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/plload/plload/sse"
	"github.com/plload/plload/workload"
)

// API is one HTTP API of a target: where the request goes, how its body carries a session's turn,
// and how its answer is read. Its body-building methods are unexported: the APIs are this
// package's, and a body is built through Body, which renders the parts every API shares once per
// stage.
type API interface {
	// Name is the API's target.endpoint value.
	Name() string
	// Path is the request's path after target.base_url ("/chat/completions").
	Path() string
	// NewStreamReader reads a streamed answer's events (Release it when done; nil body: fed with
	// Feed).
	NewStreamReader(body io.Reader, maxEventBytes int) *sse.Reader
	// ParseAnswer reads a non-streamed answer's whole body.
	ParseAnswer(body []byte) (sse.Completion, error)

	// SetHeaders sets the API's own headers on h: its authentication with apiKey ("" sends none)
	// and any version header the API requires.
	SetHeaders(h http.Header, apiKey string)
	// StreamEnd names what ends a whole streamed answer, for the error of a stream cut before it.
	StreamEnd() string

	// shape is how the body's fixed parts differ from OpenAI's (max-tokens field, stream options,
	// tools).
	shape() shape
	// appendInput appends the turn's input — the body's fields between the model and the
	// max-tokens field, with their leading comma — for history, which ends with the new message.
	appendInput(buf []byte, history []Message, o inputOptions) []byte
	// inputSize is about how many bytes appendInput adds for history when that is cheap to know,
	// so the body's buffer is allocated once at its size; 0 when it is not (the buffer grows).
	inputSize(history []Message) int
}

// apis are the APIs by target.endpoint: the one place an endpoint's name is tied to its code.
var apis = map[string]API{
	"chat":        chat{},
	"completions": completions{},
	"messages":    messages{},
	"responses":   responses{},
}

// For is the API that target.endpoint names (validated by workload; "" is workload's default).
func For(endpoint string) (API, error) {
	if endpoint == "" {
		endpoint = workload.DefaultEndpoint
	}
	if api, ok := apis[endpoint]; ok {
		return api, nil
	}
	return nil, fmt.Errorf("target.endpoint: found %q; accepted: %s", endpoint, strings.Join(Names(), ", "))
}

// Names are the endpoints For accepts, sorted.
func Names() []string {
	names := make([]string, 0, len(apis))
	for name := range apis {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// setBearer is OpenAI's authentication: Authorization: Bearer with the key.
func setBearer(h http.Header, apiKey string) {
	if apiKey != "" {
		h.Set("Authorization", "Bearer "+apiKey)
	}
}
