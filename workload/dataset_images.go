package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig reads the formats registered here
	_ "image/jpeg"
	_ "image/png"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	// WebP has no decoder in Go's standard library; x/image is in the module graph already (the
	// mock reads WebP headers with it), and WebP is one of the four formats the vision APIs take.
	_ "golang.org/x/image/webp"
)

// Images from data: an openai dataset's user messages may carry image_url parts (docs/data.md).
// Each is read at load time, so a bad one is refused by validate at its line, before any traffic:
// a data URL is decoded, a file (relative to the dataset's folder) is read, and both are checked to
// be a PNG, JPEG, WebP or GIF within workload.dataset.max_image_bytes by their header alone
// (image.DecodeConfig: the pixels would only cost time). An http(s) URL is passed through to the
// server, which fetches it (its fetch time is then in TTFT); the client never fetches it.
//
// The same image anywhere in the dataset is one *Image, found by its sha256: a dataset of 1,000
// conversations that share one 1 MB photo holds it once, and every request that sends it encodes it
// straight from that copy (protocol/image.go).

// Formats an image from data may have: the four the vision APIs take, as image.DecodeConfig names them.
var datasetImageFormats = map[string]bool{"png": true, "jpeg": true, "webp": true, "gif": true}

// acceptImage says what an image_url part may be, for the errors about one.
func acceptImage(maxBytes int) string {
	return fmt.Sprintf(`accepted: {"type": "image_url", "image_url": {"url": URL}} in a user message, URL a base64 data URL (data:image/png;base64,...), a file path or file:// URL (relative to the dataset's folder) or an http(s) URL (sent as it is, never fetched by plload); a PNG, JPEG, WebP or GIF image of at most %d bytes (workload.dataset.max_image_bytes)`, maxBytes)
}

// imageLoader reads a dataset's images as its lines name them, and keeps one *Image per content.
type imageLoader struct {
	dir      string // the dataset file's folder: relative file paths start there
	maxBytes int
	bySHA    map[string]*Image
	// byPath is every file read, by its resolved path: a file that many lines name is read once.
	byPath map[string]*Image
}

func newImageLoader(datasetPath string, maxBytes int) *imageLoader {
	if maxBytes <= 0 {
		maxBytes = DefaultImageMaxBytes
	}
	return &imageLoader{dir: filepath.Dir(datasetPath), maxBytes: maxBytes, bySHA: map[string]*Image{}, byPath: map[string]*Image{}}
}

// load reads the image ref names (an image_url part's url): a data URL, an http(s) URL or a file.
// Its errors say what is wrong with the image without quoting a data URL's content.
func (l *imageLoader) load(ref string) (*Image, error) {
	ref = strings.TrimSpace(ref)
	scheme, _, hasScheme := strings.Cut(ref, ":")
	scheme = strings.ToLower(scheme)
	switch {
	case ref == "":
		return nil, errors.New("the url is empty")
	case hasScheme && scheme == "data":
		return l.fromDataURL(ref)
	case hasScheme && (scheme == "http" || scheme == "https"):
		u, err := url.Parse(ref)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("%s URL %q has no host", scheme, ref)
		}
		return l.shared(&Image{URL: ref, SHA256: sha256Hex([]byte(ref))}), nil
	case hasScheme && scheme == "file":
		u, err := url.Parse(ref)
		if err != nil {
			return nil, fmt.Errorf("file URL %q: %v", ref, err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("file URL %q names host %q; a file URL is file:///absolute/path or file:relative/path", ref, u.Host)
		}
		p := u.Path
		if u.Opaque != "" {
			p = u.Opaque
		}
		return l.fromFile(ref, p)
	case hasScheme && isURLScheme(scheme):
		return nil, fmt.Errorf("a %s: URL, which plload cannot read", scheme)
	}
	return l.fromFile(ref, ref)
}

// isURLScheme reports whether s is a URL scheme (RFC 3986: a letter, then letters, digits, + - .),
// not a Windows drive letter.
func isURLScheme(s string) bool {
	if len(s) < 2 {
		return false
	}
	for i, c := range s {
		letter := c >= 'a' && c <= 'z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// fromDataURL decodes a data URL's base64 payload.
func (l *imageLoader) fromDataURL(ref string) (*Image, error) {
	header, payload, ok := strings.Cut(ref, ",")
	if !ok {
		return nil, errors.New("a data URL without a comma before its data")
	}
	if !strings.HasSuffix(strings.ToLower(header), ";base64") {
		return nil, errors.New("a data URL that is not base64 (its header lacks ;base64)")
	}
	// The payload's decoded length is known before decoding it: an image well over the limit is
	// refused without the allocation (the margin covers line breaks in the base64; fromBytes
	// checks the exact length).
	if n := base64.StdEncoding.DecodedLen(len(payload)); n > l.maxBytes+l.maxBytes/16+3 {
		return nil, fmt.Errorf("a data URL of about %d bytes of image, over the limit of %d", n, l.maxBytes)
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		var raw error
		if data, raw = base64.RawStdEncoding.DecodeString(payload); raw != nil {
			var at base64.CorruptInputError
			if errors.As(err, &at) {
				return nil, fmt.Errorf("a data URL whose base64 does not decode (at byte %d of its data)", int64(at))
			}
			return nil, errors.New("a data URL whose base64 does not decode")
		}
	}
	return l.fromBytes(data, "the data URL")
}

// fromFile reads an image file; ref is how the line names it, p its path.
func (l *imageLoader) fromFile(ref, p string) (*Image, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(l.dir, p)
	}
	if im, ok := l.byPath[p]; ok {
		return im, nil
	}
	what := fmt.Sprintf("file %q", ref)
	if p != ref {
		what = fmt.Sprintf("file %q (%s)", ref, p)
	}
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s cannot be read: %v", what, unwrapPath(err))
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", what)
	case fi.Size() > int64(l.maxBytes):
		return nil, fmt.Errorf("%s is %d bytes, over the limit of %d", what, fi.Size(), l.maxBytes)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read: %v", what, unwrapPath(err))
	}
	im, err := l.fromBytes(data, what)
	if err != nil {
		return nil, err
	}
	l.byPath[p] = im
	return im, nil
}

// unwrapPath is an os error without the path it names (the message names it already).
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fromBytes checks an encoded image and returns the dataset's one *Image of its content.
func (l *imageLoader) fromBytes(data []byte, what string) (*Image, error) {
	if len(data) > l.maxBytes {
		return nil, fmt.Errorf("%s is %d bytes of image, over the limit of %d", what, len(data), l.maxBytes)
	}
	sum := sha256Hex(data)
	if im, ok := l.bySHA[sum]; ok {
		return im, nil
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	switch {
	case err != nil && errors.Is(err, image.ErrFormat):
		if other := otherImageFormat(data); other != "" {
			return nil, fmt.Errorf("%s is a %s image", what, other)
		}
		return nil, fmt.Errorf("%s is not an image", what)
	case err != nil:
		return nil, fmt.Errorf("%s is not a readable %s image (%v)", what, strings.ToUpper(format), err)
	case !datasetImageFormats[format]:
		return nil, fmt.Errorf("%s is a %s image", what, strings.ToUpper(format))
	case cfg.Width < 1 || cfg.Height < 1:
		return nil, fmt.Errorf("%s is a %d×%d %s image, with no pixels", what, cfg.Width, cfg.Height, strings.ToUpper(format))
	}
	return l.shared(&Image{Format: format, Width: cfg.Width, Height: cfg.Height, Data: data, SHA256: sum}), nil
}

// carriesImages reports whether a dataset format's lines may carry images.
func carriesImages(format string) bool { return format == FormatOpenAI || format == FormatVisionArena }

// shared is the dataset's image of im's sha256: im itself the first time.
func (l *imageLoader) shared(im *Image) *Image {
	if have, ok := l.bySHA[im.SHA256]; ok {
		return have
	}
	l.bySHA[im.SHA256] = im
	return im
}

// otherImageFormat names an image format the vision APIs do not take, from its first bytes, so the
// error says what the file is ("" when it is none of them).
func otherImageFormat(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("BM")):
		return "BMP"
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		return "TIFF"
	case len(b) >= 12 && string(b[4:8]) == "ftyp":
		return "HEIF/AVIF"
	case bytes.HasPrefix(b, []byte("\x00\x00\x01\x00")):
		return "ICO"
	case bytes.Contains(b[:min(len(b), 256)], []byte("<svg")):
		return "SVG"
	}
	return ""
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// imagePart is an image_url part of a message's content: its place in the list and its url ("" when
// it has none).
type imagePart struct {
	index int
	url   string
}

// readImagePart reads an image_url part's image_url: {"url": "..."} (OpenAI's), or the url as a
// bare string (as some exports write it).
func readImagePart(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		URL string `json:"url"`
	}
	_ = json.Unmarshal(raw, &obj)
	return obj.URL
}

// datasetImage is what dataset.jsonl keeps of one image of a turn: a synthetic image's recipe (its
// fields inline: {"width","height","format","quality","seed"}), or an image from data's sha256, with
// its url for an image by URL ({"sha256"} or {"sha256","url"}). The two forms share no key.
type datasetImage struct {
	*ImageRecipe
	SHA256 string `json:"sha256,omitempty"`
	URL    string `json:"url,omitempty"`
}

// datasetImages is what dataset.jsonl keeps of a turn's images: enough for the stage's sha256 to
// change whenever an image does (a recipe makes the same file again: ImageRecipe.Encode).
func datasetImages(t Turn) []datasetImage {
	ims := t.Images()
	if len(ims) == 0 {
		return nil
	}
	out := make([]datasetImage, len(ims))
	for i, im := range ims {
		if im.recipe != nil {
			out[i] = datasetImage{ImageRecipe: im.recipe}
		} else {
			out[i] = datasetImage{SHA256: im.SHA256, URL: im.URL}
		}
	}
	return out
}

// turnsFromFile reports whether the sessions' turns come from a dataset or a trace (a workload block
// with only a nonce keeps the synthetic sessions).
func (s *Scenario) turnsFromFile() bool {
	ds := s.Workload
	return ds != nil && (ds.Dataset != nil || ds.Trace != nil)
}

// imagesFromSource checks session.images when the turns come from a file, and reports whether they
// do. A dataset's images are its own, so the keys that draw synthetic images are refused; history
// (keep or drop) and tokens (the client's estimate) apply to them as to synthetic ones.
func (c *checker) imagesFromSource() bool {
	s := c.s
	if !s.turnsFromFile() {
		return false
	}
	ds := s.Workload
	const p = "session.images"
	if ds.Trace != nil {
		c.errorf(p, "found with workload.trace, whose requests are lengths without content; accepted: images with synthetic sessions, or a workload.dataset of format openai whose messages carry image_url parts")
		return true
	}
	if f := ds.Dataset.Format; !carriesImages(f) && f != "" {
		c.errorf(p, "found with workload.dataset format %s, whose lines carry no images; accepted: session.images.history and .tokens with format openai, whose user messages may carry image_url parts, or visionarena", f)
		return true
	}
	for _, k := range []string{"per_turn", "turns", "sizes", "format", "jpeg_quality", "max_bytes"} {
		if !s.has(p + "." + k) {
			continue
		}
		instead := "the dataset's image_url parts are its images"
		if k == "max_bytes" {
			instead = "the limit of a dataset's images is workload.dataset.max_image_bytes"
		}
		c.errorf(p+"."+k, "found with workload.dataset, whose images are the file's (%s); accepted with a dataset: session.images.history and session.images.tokens", instead)
	}
	return true
}
