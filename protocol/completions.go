package protocol

import (
	"io"
	"net/http"
	"strings"

	"github.com/plload/plload/sse"
)

// completions is OpenAI's legacy completions API (POST /completions): it takes one prompt, so the
// history goes as a transcript ("role: text" paragraphs, ending with "assistant:" for the answer);
// the answer's choices carry text instead of a delta, which package sse reads as content. A
// message's images are left out of the transcript (only its text goes), never an error here: the
// API takes no images, and a scenario that sends them to it is workload's to refuse before any
// traffic.
type completions struct{}

func (completions) Name() string { return "completions" }

func (completions) SetHeaders(h http.Header, apiKey string) { setBearer(h, apiKey) }

func (completions) StreamEnd() string { return "data: [DONE]" }

func (completions) shape() shape { return openAIShape }

func (completions) Path() string { return "/completions" }

func (completions) NewStreamReader(body io.Reader, maxEventBytes int) *sse.Reader {
	return sse.NewReader(body, maxEventBytes)
}

func (completions) ParseAnswer(body []byte) (sse.Completion, error) {
	return sse.ParseCompletion(body)
}

func (completions) appendInput(buf []byte, history []Message, _ inputOptions) []byte {
	var sb strings.Builder
	for _, m := range history {
		sb.WriteString(m.role)
		sb.WriteString(": ")
		sb.WriteString(m.Text())
		sb.WriteString("\n\n")
	}
	sb.WriteString("assistant:")
	buf = append(buf, `,"prompt":`...)
	return appendString(buf, sb.String())
}

// inputSize is unknown until the transcript is made (each message's text is read back from its
// JSON), so the body's buffer grows as it is written.
func (completions) inputSize([]Message) int { return 0 }
