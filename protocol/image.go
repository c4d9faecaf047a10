package protocol

import (
	"encoding/base64"

	"github.com/plload/plload/workload"
)

// imageParts are what a user message sends besides its text: its images, or, once the session's
// history drops them (history: drop), the note that stands in their place.
//
// The images are the workload's, shared by every message and every session that sends them: a
// session keeps its history's images for every later turn, and a message that held its images'
// base64 would hold 1,000 copies of a 1 MB image for a stage of 1,000 sessions. Each request's body
// encodes them straight into its own buffer instead (appendImageMessage), the one copy a send needs.
type imageParts struct {
	images []*workload.Image
	note   string // "" while the images are sent
}

// NewUserMessageWithImages is a user message with images and text, tokens long in the scenario's
// tokenizer (the text's tokens: the server counts the images' own). Its content is a list of parts,
// the images first and the text after them: the order in which a chat app sends a photo with its
// caption, and the one Anthropic's vision guide recommends (images before the question about them).
// An empty text sends the images alone: the Messages API refuses an empty text block.
//
// images is kept, not copied, and must not change afterwards (a turn's images never do). Without
// images the message is NewMessage's.
func NewUserMessageWithImages(text string, tokens int, images []*workload.Image) Message {
	m := NewMessage("user", text, tokens)
	if len(images) > 0 {
		m.parts = &imageParts{images: images}
	}
	return m
}

// Images are the images the message sends, in its order; nil for none (or dropped).
func (m Message) Images() []*workload.Image {
	if m.parts == nil {
		return nil
	}
	return m.parts.images
}

// ImageBytes is how many bytes the message's images add to a request's body: each image's base64
// (its URL for an image by URL), without the JSON around it, the same in every API's shape. A
// request's upload is mostly this once a history holds images.
func (m Message) ImageBytes() int {
	n := 0
	for _, im := range m.Images() {
		n += imageSize(im)
	}
	return n
}

// WithoutImages is the message with its images replaced by one text part, note (such as "[image:
// 1024×768 JPEG, not resent]", which the caller writes from Images()), before its text: what a
// history that drops its images (history: drop) sends on the turns after the one that sent them.
// The note's few tokens are not added to Tokens. An empty note drops the images without a trace; a
// message without images is returned as it is.
func (m Message) WithoutImages(note string) Message {
	if len(m.Images()) == 0 {
		return m
	}
	m.parts = nil
	if note != "" {
		m.parts = &imageParts{note: note}
	}
	return m
}

// WithText is the message with its text replaced and its images (or their note) and tokens kept:
// the nonce's way to mark a request's first message without losing what it sends besides text.
func (m Message) WithText(text string) Message {
	out := NewMessage(m.role, text, m.tokens)
	out.parts = m.parts
	return out
}

// imageSize is the bytes an image's payload takes in a body: its base64, or its URL.
func imageSize(im *workload.Image) int {
	if im.URL != "" {
		return len(im.URL)
	}
	return base64.StdEncoding.EncodedLen(len(im.Data))
}

// partsSize is about how many bytes the message's parts add to its rendering, for a body's buffer
// to be allocated once at its size: a body with a megabyte image that grows once copies the
// megabyte again. 0 for a text-only message, at the cost of one comparison.
func (m Message) partsSize() int {
	if m.parts == nil {
		return 0
	}
	return m.parts.size()
}

func (p *imageParts) size() int {
	// 160: the list's brackets, the text part's wrapping and a cache_control; 2×note: its escapes.
	n := 160 + 2*len(p.note)
	for _, im := range p.images {
		// 112: the longest image part's wrapping (the Messages API's base64 source) and its media type.
		n += 112 + len(im.Format) + 2*len(im.URL) + base64.StdEncoding.EncodedLen(len(im.Data))
	}
	return n
}

// textJSON is the message's text as a JSON string, read out of its encoding: NewMessage's
// {"role":"…","content":"…"}, which a message with parts always has.
func (m Message) textJSON() []byte {
	return m.encoded[len(`{"role":"`)+len(m.role)+len(`","content":`) : len(m.encoded)-1]
}

// partsStyle is how an API names a message's parts.
type partsStyle int

const (
	chatParts      partsStyle = iota // OpenAI chat: image_url and text parts
	messagesParts                    // Anthropic Messages: image blocks with a base64 or url source, text blocks
	responsesParts                   // OpenAI Responses: a message item of input_image and input_text parts
)

// appendImageMessage writes a message with parts in style's shape: its images (or their note), then
// its text. With marked (the Messages API's target.cache_control on the history's last message) its
// last block carries the cache breakpoint, as a text-only message's one text block does.
func appendImageMessage(buf []byte, m Message, style partsStyle, marked bool) []byte {
	if style == responsesParts {
		buf = append(buf, `{"type":"message","role":"`...)
	} else {
		buf = append(buf, `{"role":"`...)
	}
	buf = append(buf, m.role...)
	buf = append(buf, `","content":[`...)
	text := m.textJSON()
	hasText := len(text) > len(`""`)
	blocks := len(m.parts.images)
	if m.parts.note != "" {
		blocks++
	}
	if hasText {
		blocks++
	}
	k := 0 // blocks written
	for _, im := range m.parts.images {
		buf, k = separate(buf, k)
		buf = closeBlock(appendImagePart(buf, im, style), marked && k == blocks)
	}
	if m.parts.note != "" {
		buf, k = separate(buf, k)
		buf = closeBlock(appendTextPart(buf, appendString(nil, m.parts.note), style), marked && k == blocks)
	}
	if hasText {
		buf, k = separate(buf, k)
		buf = closeBlock(appendTextPart(buf, text, style), marked && k == blocks)
	}
	return append(buf, "]}"...)
}

// appendImagePart writes one image's part in style's shape, without its closing brace
// (closeBlock's): the file's base64 is encoded straight into buf, never into a string of its own.
func appendImagePart(buf []byte, im *workload.Image, style partsStyle) []byte {
	switch style {
	case messagesParts:
		if im.URL != "" {
			buf = append(buf, `{"type":"image","source":{"type":"url","url":`...)
			buf = appendString(buf, im.URL)
			return append(buf, '}')
		}
		buf = append(buf, `{"type":"image","source":{"type":"base64","media_type":"`...)
		buf = append(buf, im.MIME()...)
		buf = append(buf, `","data":"`...)
		buf = base64.StdEncoding.AppendEncode(buf, im.Data)
		return append(buf, `"}`...)
	case responsesParts:
		buf = append(buf, `{"type":"input_image","image_url":`...)
		buf = appendImageURL(buf, im)
		// detail is required by OpenAI's schema (its SDKs' ResponseInputImageParam); auto is the
		// default it documents, which servers validating against that schema (vLLM's) insist on.
		return append(buf, `,"detail":"auto"`...)
	default:
		buf = append(buf, `{"type":"image_url","image_url":{"url":`...)
		buf = appendImageURL(buf, im)
		return append(buf, '}')
	}
}

// appendImageURL writes an image as an OpenAI image URL, a JSON string: its data URL, encoded
// straight into buf, or its http(s) URL.
func appendImageURL(buf []byte, im *workload.Image) []byte {
	if im.URL != "" {
		return appendString(buf, im.URL)
	}
	buf = append(buf, `"data:`...)
	buf = append(buf, im.MIME()...)
	buf = append(buf, `;base64,`...)
	buf = base64.StdEncoding.AppendEncode(buf, im.Data)
	return append(buf, '"')
}

// appendTextPart writes a text part of the JSON string quoted in style's shape, without its
// closing brace.
func appendTextPart(buf, quoted []byte, style partsStyle) []byte {
	if style == responsesParts {
		buf = append(buf, `{"type":"input_text","text":`...)
	} else {
		buf = append(buf, `{"type":"text","text":`...)
	}
	return append(buf, quoted...)
}

// separate writes the comma before a list's block k (none before the first) and counts it.
func separate(buf []byte, k int) ([]byte, int) {
	if k > 0 {
		buf = append(buf, ',')
	}
	return buf, k + 1
}

// closeBlock ends a part, with the Messages API's cache breakpoint when marked.
func closeBlock(buf []byte, marked bool) []byte {
	if marked {
		buf = append(buf, ","+ephemeral...)
	}
	return append(buf, '}')
}
