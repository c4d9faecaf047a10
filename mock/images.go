package mock

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig reads the formats registered here
	_ "image/jpeg"
	_ "image/png"
	"io"
	"strings"
	"sync"

	// WebP has no decoder in Go's standard library. x/image is in the module graph already (gonum's
	// plot needs it), so its header reader costs no new module, and WebP is one of the four formats
	// the vision APIs (OpenAI's, Anthropic's, vLLM's through Pillow) take.
	_ "golang.org/x/image/webp"
)

// This file reads the image parts of the three chat-like APIs (chat's image_url, Messages' image
// blocks, Responses' input_image) and lays each out in the prompt as a run of tokens, as a
// vision-language model's server does. A part is checked as vLLM checks it — a data URL must be
// base64, the base64 must decode, the file must be an image — and a bad one is a 400 naming the
// part. Only the image's header is decoded (image.DecodeConfig): its size sets its token count, its
// pixels would only cost time. Its tokens are pseudo-tokens drawn from a hash of its content, so
// the prefix cache caches an image as vLLM's multimodal prefix cache does: the same image at the same
// place of the same prefix hits, another image misses from there on.

// maxImageTokens bounds one image's tokens: Qwen2.5-VL resizes a larger image down to max_pixels
// (12,845,056 = 16,384 patches of 28×28), and no other family's rule gives more. A few bytes of PNG
// header can claim any size, so without a bound one part could ask for billions of tokens.
const maxImageTokens = 16_384

// maxPromptImageTokens bounds a request's image tokens together (32 MiB of token ids): past the
// context of any served model, and small enough that a body of many tiny images that each claim
// the largest size cannot exhaust memory.
const maxPromptImageTokens = 1 << 22

// remoteImageSide is the side of the square an image given by http(s) URL is charged as. The mock
// fetches no URLs (a mock that reaches out to the network surprises whoever runs it, and the fetch
// time a real server adds is the real server's), yet it accepts them, so that a dataset whose
// images are URLs runs against it; a real server's tokens for them depend on the file it fetches.
const remoteImageSide = 1024

// segment is one piece of a message's content as the prompt lays it out: a text, or an image.
type segment struct {
	text  string
	image *imageRef // nil for a text
}

// imageRef is one image part of a request: what it sent, where (for errors), and once resolved its
// content hash and tokens. The Responses store keeps resolved parts in its conversations, so
// resolving drops what was sent: a stored conversation holds 40 bytes an image, not the file.
type imageRef struct {
	where string // the part, in the API's own words: "messages[0].content[1]"
	url   string // a data URL or an http(s) URL (chat, Responses, Messages' url source)
	// base64 is a Messages base64 source: its declared media type and its data, apart.
	base64          bool
	mediaType, data string

	resolved bool
	sum      [32]byte // sha256 of the base64 payload (of the URL for a remote image)
	tokens   int
}

// imageURLRef is an image part given by URL, as chat and Responses give it.
func imageURLRef(where, url string) *imageRef { return &imageRef{where: where, url: url} }

// imageBase64Ref is an image part given as a base64 source with its media type (Messages).
func imageBase64Ref(where, mediaType, data string) *imageRef {
	return &imageRef{where: where, base64: true, mediaType: mediaType, data: data}
}

// imageInfo is what the mock learns from an image's header.
type imageInfo struct {
	format        string // "png", "jpeg", "gif" or "webp"
	width, height int
}

// imageCache remembers the header of each image seen, by content hash: a conversation that keeps
// its images resends them every turn, and checking each again would cost a pass over its base64.
type imageCache struct {
	mu    sync.Mutex
	byKey map[[32]byte]imageInfo
	limit int // entries; the map is dropped when full, as tokenCache's is
}

func newImageCache(limit int) *imageCache {
	return &imageCache{byKey: map[[32]byte]imageInfo{}, limit: limit}
}

func (c *imageCache) get(key [32]byte) (imageInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	info, ok := c.byKey[key]
	return info, ok
}

func (c *imageCache) put(key [32]byte, info imageInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byKey) >= c.limit {
		c.byKey = map[[32]byte]imageInfo{}
	}
	c.byKey[key] = info
}

// imageTokens is an image's token count by the configured rule: a fixed count, or one token per
// patch of ImageTokensPatch² pixels (a partial patch counts whole), at most maxImageTokens.
func (c Config) imageTokens(width, height int) int {
	if c.ImageTokensFixed > 0 {
		return c.ImageTokensFixed
	}
	p := c.ImageTokensPatch
	n := ((width + p - 1) / p) * ((height + p - 1) / p)
	return min(max(n, 1), maxImageTokens)
}

// resolveImage checks an image part and sets its hash and tokens; an error names the part and says
// what is wrong and what is accepted. A resolved part returns at once.
func (s *Server) resolveImage(ref *imageRef) error {
	if ref.resolved {
		return nil
	}
	payload, declared := ref.data, ref.mediaType
	if !ref.base64 {
		var remote bool
		var err error
		if payload, remote, err = parseImageURL(ref.url); err != nil {
			return fmt.Errorf("%s: %v", ref.where, err)
		}
		if remote {
			ref.sum = sha256.Sum256([]byte(ref.url))
			ref.tokens = s.cfg.imageTokens(remoteImageSide, remoteImageSide)
			ref.resolved, ref.url = true, ""
			return nil
		}
	}
	if payload == "" {
		return fmt.Errorf("%s: the image data is empty", ref.where)
	}
	// The hash is of the base64 text, not of the file it encodes: decoding a whole file to hash it
	// would be a second pass over it on every turn that resends it. The same file encoded the same
	// way (standard base64, padded, as every client sends it) has the same hash.
	sum := sha256.Sum256([]byte(payload))
	info, ok := s.images.get(sum)
	if !ok {
		var err error
		if info, err = readImageHeader(payload); err != nil {
			return fmt.Errorf("%s: %v", ref.where, err)
		}
		s.images.put(sum, info)
	}
	if declared != "" && declared != "image/"+info.format {
		// Anthropic refuses a block whose data is not of its media type.
		return fmt.Errorf("%s: source.media_type is %q but the data is a %s image", ref.where, declared, strings.ToUpper(info.format))
	}
	ref.sum, ref.tokens = sum, s.cfg.imageTokens(info.width, info.height)
	ref.resolved, ref.url, ref.data = true, "", ""
	return nil
}

// parseImageURL reads an image URL: a base64 data URL gives its payload, an http(s) URL is remote.
func parseImageURL(url string) (payload string, remote bool, err error) {
	const accepted = "accepted: a data URL (data:image/png;base64,<data>; PNG, JPEG, GIF or WebP) or an http(s) URL"
	lower := strings.ToLower(url[:min(len(url), 8)])
	switch {
	case strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://"):
		return "", true, nil
	case !strings.HasPrefix(lower, "data:"):
		return "", false, fmt.Errorf("image URL %q: %s", clip(url), accepted)
	}
	meta, payload, found := strings.Cut(url[len("data:"):], ",")
	if !found {
		return "", false, fmt.Errorf("the data URL has no comma before its data: %s", accepted)
	}
	if !strings.HasSuffix(strings.ToLower(meta), ";base64") {
		// vLLM takes base64 data URLs only; an image is never sent percent-encoded.
		return "", false, fmt.Errorf("the data URL %q is not base64: %s", clip(meta), accepted)
	}
	return payload, false, nil
}

// clip shortens a quoted value for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// readImageHeader checks that payload is base64 of a PNG, JPEG, GIF or WebP file and reads its
// header. The base64 is decoded as a stream and thrown away past the header, so a 1 MB file costs
// one pass and no copy; every byte is decoded because a real server decodes the whole file and
// refuses a broken one, and so must the mock.
func readImageHeader(payload string) (imageInfo, error) {
	src := &readErr{r: base64.NewDecoder(base64.StdEncoding, strings.NewReader(payload))}
	cfg, format, err := image.DecodeConfig(src)
	if src.err != nil {
		return imageInfo{}, base64Error(src.err)
	}
	if err != nil {
		return imageInfo{}, fmt.Errorf("the data is not an image the mock reads (PNG, JPEG, GIF or WebP): %v", err)
	}
	if _, err := io.Copy(io.Discard, src); err != nil {
		return imageInfo{}, base64Error(err)
	}
	if cfg.Width < 1 || cfg.Height < 1 {
		return imageInfo{}, fmt.Errorf("the %s image is %d×%d pixels: accepted: at least 1×1", strings.ToUpper(format), cfg.Width, cfg.Height)
	}
	return imageInfo{format: format, width: cfg.Width, height: cfg.Height}, nil
}

// base64Error says what is wrong with a payload the base64 decoder refused.
func base64Error(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the image data is not valid base64: its length is not a multiple of 4 (standard base64 is padded with =)")
	}
	return fmt.Errorf("the image data is not valid base64 (standard alphabet, padded): %v", err)
}

// readErr remembers its reader's error, so that a failed header read can be told apart: broken
// base64, or a file that is not an image.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

// appendImageTokens appends an image's pseudo-tokens: a run drawn from its content hash, so the
// same image is the same tokens wherever it appears and another image other tokens from its first.
func appendImageTokens(ids []uint, ref *imageRef) []uint {
	x := binary.LittleEndian.Uint64(ref.sum[:8])
	for range ref.tokens {
		// splitmix64: consecutive states give unrelated values, none likely to be a text token's id.
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		ids = append(ids, uint(z^z>>31))
	}
	return ids
}

// chatSegments reads a chat message's content: a string, or parts whose texts join (as before
// images) and whose image_url parts sit where they are. A message converted from another API
// carries its segments already. i is the message's index, for errors.
func (m message) chatSegments(i int) ([]segment, error) {
	if m.parts != nil {
		return m.parts, nil
	}
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return nil, nil
	}
	var s string
	if isJSONString(m.Content) && json.Unmarshal(m.Content, &s) == nil {
		return []segment{{text: s}}, nil
	}
	// Typed all the way down: every json.Unmarshal is two passes over a content that may hold
	// megabytes of base64, so it is read once, into the url's string.
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return nil, fmt.Errorf("messages[%d]: content must be a string or an array of {type, text} or {type: image_url, image_url: {url}} parts", i)
	}
	var segs segments
	for j, p := range parts {
		if p.Type != "image_url" {
			segs.addText(p.Text)
			continue
		}
		where := fmt.Sprintf("messages[%d].content[%d]", i, j)
		if p.ImageURL == nil || p.ImageURL.URL == "" {
			return nil, fmt.Errorf("%s: image_url.url is required: a data URL (data:image/png;base64,<data>) or an http(s) URL", where)
		}
		segs.addImage(imageURLRef(where, p.ImageURL.URL))
	}
	return segs.done(), nil
}

// isJSONString reports whether a JSON value is a string: a content that is not is read as parts at
// once, rather than after a failed read as a string, which costs two passes over it.
func isJSONString(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '"'
}

// segments builds a content's segments: texts in a row join into one, so a message without
// images tokenizes as it did before images were read.
type segments struct {
	out     []segment
	pending strings.Builder // text not yet in out
	images  bool            // whether any segment is an image
}

func (s *segments) addText(t string) { s.pending.WriteString(t) }

func (s *segments) addImage(ref *imageRef) {
	s.flush()
	s.out = append(s.out, segment{image: ref})
	s.images = true
}

func (s *segments) flush() {
	if s.pending.Len() > 0 {
		s.out = append(s.out, segment{text: s.pending.String()})
		s.pending.Reset()
	}
}

// done returns the segments, a single text segment for a content without images.
func (s *segments) done() []segment {
	s.flush()
	if len(s.out) == 0 {
		return []segment{{}}
	}
	return s.out
}

// imageKey writes a message's images' hashes, for a key of what a conversation asks.
func (m message) imageKey(w io.Writer) {
	for _, sg := range m.parts {
		if sg.image != nil && sg.image.resolved {
			w.Write(sg.image.sum[:])
		}
	}
}
