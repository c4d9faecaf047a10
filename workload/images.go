package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Images in synthetic sessions (session.images): a vision chat's user shares a photo in a turn,
// and, as chat apps do, every later turn sends it again in the history (history: keep), so the
// server's multimodal prefix cache decides what the rest of the conversation costs. Each image is
// made from a recipe drawn from the session's generator (workload/image_gen.go) and encoded when
// its turn is drawn for sending (Cursor.Next), never kept by the pool.

// ImagesSpec is session.images: which turns carry images, how many, of what size and format, and
// what later turns do with them.
type ImagesSpec struct {
	// PerTurn is the images of a turn that carries any.
	PerTurn Dist `yaml:"per_turn,omitempty,flow" limit:"16"`
	// Turns is which turns carry images: the first, every one, or each with a probability.
	Turns ImageTurns `yaml:"turns,omitempty"`
	// Sizes are the images' sizes, each picked by its weight.
	Sizes []ImageSize `yaml:"sizes,omitempty,flow"`
	// Format is "jpeg" or "png"; JPEGQuality the JPEG quality (1–100).
	Format      string `yaml:"format,omitempty"`
	JPEGQuality int    `yaml:"jpeg_quality,omitempty"`
	// History is what later turns send of an earlier turn's images: "keep" (the images again) or
	// "drop" (a short text note in place of each, which the engine writes).
	History string `yaml:"history,omitempty"`
	// MaxBytes is the most bytes one encoded image may take (the servers' limit is often 20 MB).
	MaxBytes int `yaml:"max_bytes,omitempty"`
	// Tokens is the client's estimate of an image's tokens (Scenario.ImageTokens).
	Tokens ImageTokensSpec `yaml:"tokens,omitempty,flow"`
}

// ImageSize is one of session.images.sizes.
type ImageSize struct {
	Width  int `yaml:"width"`
	Height int `yaml:"height"`
	// Weight is the size's share of the images: weight ÷ the sum of the weights (default 1).
	Weight float64 `yaml:"weight,omitempty"`
}

// ImageTokensSpec is how many tokens the client counts for an image: PerImage, a fixed count per
// image (the families that resize every image to one tile), or one token per Patch×Patch pixels
// (the families that cut an image into patches: Qwen2.5-VL's 14-pixel patches merged 2×2 are 28).
type ImageTokensSpec struct {
	PerImage int `yaml:"per_image,omitempty"`
	Patch    int `yaml:"patch,omitempty"`
}

// Count is the tokens of a width×height image: PerImage, or ceil(w/Patch)·ceil(h/Patch).
func (t ImageTokensSpec) Count(width, height int) int {
	if t.PerImage > 0 {
		return t.PerImage
	}
	p := t.Patch
	if p <= 0 {
		p = DefaultImagePatch
	}
	return ((width + p - 1) / p) * ((height + p - 1) / p)
}

// ImageTurns is session.images.turns: "first", "every", or a share (a number from 0 to 1) of the
// turns, each turn carrying images with that probability.
type ImageTurns string

// session.images' accepted words and defaults.
const (
	ImageTurnsFirst      ImageTurns = "first"
	ImageTurnsEvery      ImageTurns = "every"
	ImageHistoryKeep                = "keep"
	ImageHistoryDrop                = "drop"
	DefaultImageWidth               = 1024
	DefaultImageHeight              = 768
	DefaultJPEGQuality              = 85
	DefaultImageMaxBytes            = 20 << 20
	DefaultImagePatch               = 28
	maxImagesPerTurn                = 16
)

// share is turns as a probability, and whether it is one.
func (t ImageTurns) share() (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(string(t)), 64)
	return f, err == nil
}

// MarshalYAML writes a share as the number it is, the words as words.
func (t ImageTurns) MarshalYAML() (any, error) {
	if f, ok := t.share(); ok {
		return f, nil
	}
	return string(t), nil
}

// carries draws whether turn k (0-based) of a session carries images. A share draws for every
// turn, so the session's later draws do not depend on the outcome.
func (t ImageTurns) carries(r *rand.Rand, k int) bool {
	switch t {
	case ImageTurnsFirst:
		return k == 0
	case ImageTurnsEvery:
		return true
	}
	f, _ := t.share()
	return r.Float64() < f
}

// ImageTokens is the client's estimate of im's tokens: session.images.tokens' rule, or one token
// per 28×28 pixels when the scenario sets none.
func (s *Scenario) ImageTokens(im *Image) int {
	t := ImageTokensSpec{Patch: DefaultImagePatch}
	if s.Session.Images != nil {
		t = s.Session.Images.Tokens
	}
	return t.Count(im.Width, im.Height)
}

// DropsImages reports whether later turns send a short note in place of an earlier turn's images
// (session.images.history: drop) rather than the images again.
func (s *Scenario) DropsImages() bool {
	return s.Session.Images != nil && s.Session.Images.History == ImageHistoryDrop
}

// imageDefaults fills the session.images keys the file left out.
func (s *Scenario) imageDefaults() {
	im := s.Session.Images
	if im == nil {
		return
	}
	const p = "session.images."
	if im.History == "" {
		im.History = ImageHistoryKeep
	}
	if !s.has(p + "tokens") {
		im.Tokens = ImageTokensSpec{Patch: DefaultImagePatch}
	}
	if s.turnsFromFile() {
		// A dataset's images are its own: the keys that draw synthetic ones get no default (set,
		// they are refused), so the resolved scenario loads again.
		return
	}
	if !s.has(p + "per_turn") {
		im.PerTurn = Constant(1)
		im.PerTurn.Limit = maxImagesPerTurn
	}
	if im.Turns == "" {
		im.Turns = ImageTurnsFirst
	}
	if !s.has(p + "sizes") {
		im.Sizes = []ImageSize{{Width: DefaultImageWidth, Height: DefaultImageHeight}}
	}
	for i := range im.Sizes {
		if !s.has(fmt.Sprintf("%ssizes[%d].weight", p, i)) {
			im.Sizes[i].Weight = 1
		}
	}
	if im.Format == "" {
		im.Format = ImageJPEG
	}
	if im.Format == ImageJPEG && !s.has(p+"jpeg_quality") {
		im.JPEGQuality = DefaultJPEGQuality
	}
	if !s.has(p + "max_bytes") {
		im.MaxBytes = DefaultImageMaxBytes
	}
}

// imageRules checks session.images.
func (c *checker) imageRules() {
	s := c.s
	im := s.Session.Images
	if im == nil {
		return
	}
	const p = "session.images"
	before := len(c.issues.Errors())
	switch e := s.Target.Endpoint; e {
	case "completions", "embeddings", "rerank":
		c.errorf(p, "found with target.endpoint %s, whose requests carry no images; accepted: images with target.endpoint chat, messages or responses", e)
	}
	if c.imagesFromSource() { // a dataset's images are its own: only history and tokens apply
		c.oneOf(p+".history", im.History, ImageHistoryKeep, ImageHistoryDrop)
		c.imageTokens(im.Tokens)
		return
	}
	c.dist(p+".per_turn", im.PerTurn)
	if f, isShare := im.Turns.share(); isShare {
		if !(f >= 0 && f <= 1) {
			c.errorf(p+".turns", "found %s; accepted: first, every, or the share of turns that carry images, from 0 to 1", im.Turns)
		} else if f == 0 {
			c.warnf(p+".turns", "found 0: no turn will carry an image")
		}
	} else if im.Turns != ImageTurnsFirst && im.Turns != ImageTurnsEvery {
		hint := ""
		if strings.HasSuffix(strings.TrimSpace(string(im.Turns)), "%") {
			hint = " (write a percentage as a share: 30% is 0.3)"
		}
		c.errorf(p+".turns", "found %q; accepted: first, every, or the share of turns that carry images, from 0 to 1%s", string(im.Turns), hint)
	}
	c.imageSizes(im)
	c.oneOf(p+".format", im.Format, ImageJPEG, ImagePNG)
	switch {
	case im.Format == ImagePNG && s.has(p+".jpeg_quality"):
		c.errorf(p+".jpeg_quality", "found with format png, which is lossless; accepted: jpeg_quality with format jpeg, or leave it out")
	case im.Format == ImageJPEG && (im.JPEGQuality < 1 || im.JPEGQuality > 100):
		c.errorf(p+".jpeg_quality", "found %d; accepted: a JPEG quality from 1 to 100 (default %d)", im.JPEGQuality, DefaultJPEGQuality)
	}
	c.oneOf(p+".history", im.History, ImageHistoryKeep, ImageHistoryDrop)
	if im.MaxBytes < 1 {
		c.errorf(p+".max_bytes", "found %d; accepted: the most bytes one encoded image may take, ≥ 1 (default %d, 20 MB)", im.MaxBytes, DefaultImageMaxBytes)
	}
	c.imageTokens(im.Tokens)
	if len(c.issues.Errors()) == before && !c.badUnder(p) {
		c.imageMaxBytes(im) // only on keys known good: it may encode an image
	}
}

// imageTokens checks session.images.tokens.
func (c *checker) imageTokens(t ImageTokensSpec) {
	const p = "session.images"
	switch {
	case t.PerImage != 0 && t.Patch != 0:
		c.errorf(p+".tokens", "found both per_image and patch; accepted: one of them: {per_image: N} (a fixed count) or {patch: P} (ceil(width/P)·ceil(height/P))")
	case t.PerImage == 0 && t.Patch == 0 && !c.bad[p+".tokens"]:
		c.errorf(p+".tokens", "found neither per_image nor patch; accepted: {per_image: N} (a fixed count) or {patch: P} (ceil(width/P)·ceil(height/P); 28 for Qwen2.5-VL), or leave it out for {patch: %d}", DefaultImagePatch)
	case t.PerImage < 0 || t.PerImage > 1_000_000:
		c.errorf(p+".tokens.per_image", "found %d; accepted: an image's tokens, 1 to 1000000", t.PerImage)
	case t.Patch < 0 || t.Patch > MaxImageSide:
		c.errorf(p+".tokens.patch", "found %d; accepted: the pixels per side of one token, 1 to %d", t.Patch, MaxImageSide)
	}
}

// badUnder reports whether a key at or under path failed to decode.
func (c *checker) badUnder(path string) bool {
	for bad := range c.bad {
		if bad == path || strings.HasPrefix(bad, path+".") {
			return true
		}
	}
	return false
}

// imageSizes checks session.images.sizes.
func (c *checker) imageSizes(im *ImagesSpec) {
	const p = "session.images.sizes"
	if len(im.Sizes) == 0 && !c.bad[p] {
		c.errorf(p, "the list is empty; accepted: [{width: 1024, height: 768}, {width: 512, height: 512, weight: 2}], or leave it out for 1024×768")
	}
	for i, sz := range im.Sizes {
		at := fmt.Sprintf("%s[%d]", p, i)
		for _, side := range []struct {
			key string
			v   int
		}{{"width", sz.Width}, {"height", sz.Height}} {
			if side.v < MinImageSide || side.v > MaxImageSide {
				c.errorf(at+"."+side.key, "found %d; accepted: the image's %s in pixels, from %d to %d", side.v, side.key, MinImageSide, MaxImageSide)
			}
		}
		if w := sz.Weight; !(w > 0) || math.IsInf(w, 0) {
			c.errorf(at+".weight", "found %g; accepted: a weight > 0 (its share is weight ÷ the sum of the weights; default 1)", w)
		}
	}
}

// imageMaxBytes refuses, before any traffic, sizes whose images would be over max_bytes. It is
// checked here rather than when a turn is drawn, because a draw has no way to refuse: the turn is
// due. A size whose worst case fits (encodedBound) needs no encoding; for the others the largest
// such size is encoded once (the content is drawn alike for every seed, so its files differ by a
// few per cent: TestImageBytesLookReal) and compared, with a warning within 10% of the limit.
func (c *checker) imageMaxBytes(im *ImagesSpec) {
	big := -1
	for i, sz := range im.Sizes {
		if encodedBound(im.Format, sz.Width, sz.Height) > im.MaxBytes && (big < 0 || sz.Width*sz.Height > im.Sizes[big].Width*im.Sizes[big].Height) {
			big = i
		}
	}
	if big < 0 {
		return
	}
	sz := im.Sizes[big]
	n := len(ImageRecipe{Width: sz.Width, Height: sz.Height, Format: im.Format, Quality: im.JPEGQuality, Seed: c.s.Seed}.encode().Data)
	path := fmt.Sprintf("session.images.sizes[%d]", big)
	switch {
	case n > im.MaxBytes:
		c.errorf(path, "a %d×%d %s image is about %d bytes encoded, over session.images.max_bytes (%d); accepted: a smaller size%s, or a higher max_bytes if the server takes it", sz.Width, sz.Height, im.Format, n, im.MaxBytes, qualityAdvice(im))
	case n > im.MaxBytes*9/10:
		c.warnf(path, "a %d×%d %s image is about %d bytes encoded, within 10%% of session.images.max_bytes (%d): some images may be over it", sz.Width, sz.Height, im.Format, n, im.MaxBytes)
	}
}

func qualityAdvice(im *ImagesSpec) string {
	if im.Format == ImageJPEG {
		return " or a lower jpeg_quality"
	}
	return " or format jpeg"
}

// encodedBound is the most bytes a width×height image can take as Go's encoders write it,
// whatever its pixels. A JPEG (4:2:0, six 8×8 blocks per 16×16 pixels): a block's 64 coefficients
// take at most 20 + 63·26 bits with the standard Huffman tables (207 bytes), twice that if every
// byte were 0xFF and stuffed — under 10 bytes a pixel. A PNG (8-bit RGB rows, each with a filter
// byte): deflate stores a block rather than grow it, so the file is its raw rows, plus 5 bytes per
// 64 KB stored block and 12 per 32 KB chunk — under 1/256 more.
func encodedBound(format string, width, height int) int {
	const headers = 4096
	if format == ImagePNG {
		raw := height * (1 + 3*width)
		return raw + raw/256 + headers
	}
	return ((width+15)/16*16)*((height+15)/16*16)*10 + headers
}

// pickSize draws one of the sizes by weight.
func (im *ImagesSpec) pickSize(r *rand.Rand) ImageSize {
	total := 0.0
	for _, sz := range im.Sizes {
		total += sz.Weight
	}
	u := r.Float64() * total
	for _, sz := range im.Sizes {
		if u < sz.Weight {
			return sz
		}
		u -= sz.Weight
	}
	return im.Sizes[len(im.Sizes)-1]
}

// drawImages draws turn k's images (nil for a turn without any) from the session's generator.
// encode makes each file (a turn about to be sent); without it each image is its recipe alone (a
// turn drawn for dataset.jsonl, which records the recipe: encoding every image of a pool there
// would take seconds).
func (s *Scenario) drawImages(r *rand.Rand, k int, encode bool) []*Image {
	spec := s.Session.Images
	if !spec.Turns.carries(r, k) {
		return nil
	}
	out := make([]*Image, spec.PerTurn.SampleInt(r))
	for i := range out {
		sz := spec.pickSize(r)
		rec := ImageRecipe{Width: sz.Width, Height: sz.Height, Format: spec.Format, Quality: spec.JPEGQuality, Seed: r.Uint64()}
		if encode {
			out[i] = rec.encode()
		} else {
			out[i] = rec.planned()
		}
	}
	return out
}

// Recipe is how a synthetic image is made again (false for an image from data).
func (im *Image) Recipe() (ImageRecipe, bool) {
	if im.recipe == nil {
		return ImageRecipe{}, false
	}
	return *im.recipe, true
}
