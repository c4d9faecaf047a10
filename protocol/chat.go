package protocol

import (
	"io"
	"net/http"

	"github.com/plload/plload/sse"
)

// chat is OpenAI's chat completions API (POST /chat/completions): the history goes as the
// messages array, each message as it was rendered (a message with images as image_url and text
// parts, rendered per request: image.go); the answer is chat.completion.chunk events
// (or one chat.completion), which package sse reads.
type chat struct{}

func (chat) Name() string { return "chat" }

func (chat) SetHeaders(h http.Header, apiKey string) { setBearer(h, apiKey) }

func (chat) StreamEnd() string { return "data: [DONE]" }

func (chat) shape() shape { return openAIShape }

func (chat) Path() string { return "/chat/completions" }

func (chat) NewStreamReader(body io.Reader, maxEventBytes int) *sse.Reader {
	return sse.NewReader(body, maxEventBytes)
}

func (chat) ParseAnswer(body []byte) (sse.Completion, error) { return sse.ParseCompletion(body) }

func (chat) appendInput(buf []byte, history []Message, _ inputOptions) []byte {
	buf = append(buf, `,"messages":[`...)
	for i, m := range history {
		if i > 0 {
			buf = append(buf, ',')
		}
		if m.parts != nil {
			buf = appendImageMessage(buf, m, chatParts, false)
			continue
		}
		buf = append(buf, m.encoded...)
	}
	return append(buf, ']')
}

// inputSize is the messages' rendered lengths (their images' parts included) and their commas;
// Build's slack covers the array's own brackets.
func (chat) inputSize(history []Message) int {
	n := 0
	for _, m := range history {
		n += len(m.encoded) + 1 + m.partsSize()
	}
	return n
}
