package workload

import (
	"encoding/base64"
	"strings"
)

// Image is one image a turn sends: its encoded file, shared by every turn (and every session) that
// sends it, so a history that keeps its images holds one copy of each, never one per request.
type Image struct {
	// Format is the file's format: "png" or "jpeg" (a dataset's may also be "webp" or "gif").
	Format string
	// Width and Height are its pixels.
	Width, Height int
	// Data is the encoded file; nil for an image given by URL, which the server fetches itself.
	Data []byte
	// URL is an http(s) URL passed through to the server ("" when Data is sent).
	URL string
	// SHA256 is the hex sha256 of Data (of URL for an image by URL): an image from data's identity
	// in dataset.jsonl. "" for a synthetic image, whose recipe is its identity (hashing each fresh
	// file would cost more than splicing it).
	SHA256 string
	// recipe makes a synthetic image again (workload/image_gen.go): dataset.jsonl's record of it,
	// so the dataset's sha256 covers the image without encoding it; nil for an image from data.
	recipe *ImageRecipe
}

// MIME is the image's media type ("image/jpeg").
func (im *Image) MIME() string { return "image/" + im.Format }

// Base64 is the encoded file in base64, as a data URL or an API's base64 source carries it.
func (im *Image) Base64() string { return base64.StdEncoding.EncodeToString(im.Data) }

// DataURL is the image as an OpenAI image_url's url: a data URL of its file, or its http(s) URL.
func (im *Image) DataURL() string {
	if im.URL != "" {
		return im.URL
	}
	var b strings.Builder
	b.Grow(len("data:;base64,") + len(im.MIME()) + base64.StdEncoding.EncodedLen(len(im.Data)))
	b.WriteString("data:")
	b.WriteString(im.MIME())
	b.WriteString(";base64,")
	b.WriteString(im.Base64())
	return b.String()
}

// Pixels is width × height.
func (im *Image) Pixels() int { return im.Width * im.Height }

// Images are the turn's images, in the order its user message carries them; nil for none.
func (t Turn) Images() []*Image {
	if t.Extra == nil {
		return nil
	}
	return t.Extra.Images
}
