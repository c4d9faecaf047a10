package workload

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
)

// Synthetic images: a session's images are made from a recipe (size, format, quality and a seed
// drawn from the session's generator), so a dataset line holds the recipe, not the file, and the
// same recipe makes the same bytes on any machine with the same Go release.
//
// Their content is drawn to encode like the real thing, because the encoded size is what the
// upload, the server's decode and a byte limit see: a flat 1024×768 colour takes 13 KB as a JPEG
// and 4 KB as a PNG, where a photo takes 200 KB (TestImageBytesLookReal). A JPEG is a photo — gradients, soft blotches, shaded shapes and
// sensor grain; a PNG is a screenshot — flat panels, lines of text and one photo thumbnail. All
// the drawing is integer arithmetic, so no floating-point rounding can differ between machines.

// ImageRecipe is everything that makes a synthetic image: ImageRecipe.Encode makes the same bytes
// from it every time. dataset.jsonl carries each synthetic image as its recipe.
type ImageRecipe struct {
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Format string `json:"format"` // "jpeg" or "png"
	// Quality is the JPEG quality, 1 to 100 (0 for a PNG).
	Quality int    `json:"quality,omitempty"`
	Seed    uint64 `json:"seed"`
}

// Image sizes and formats a recipe accepts (session.images.sizes, format).
const (
	MinImageSide = 16
	MaxImageSide = 8192
	ImageJPEG    = "jpeg"
	ImagePNG     = "png"
)

// check says what is wrong with the recipe; nil when Encode can make it.
func (r ImageRecipe) check() error {
	switch {
	case r.Width < MinImageSide || r.Width > MaxImageSide || r.Height < MinImageSide || r.Height > MaxImageSide:
		return fmt.Errorf("image size %d×%d: accepted: widths and heights from %d to %d pixels", r.Width, r.Height, MinImageSide, MaxImageSide)
	case r.Format == ImageJPEG && (r.Quality < 1 || r.Quality > 100):
		return fmt.Errorf("JPEG quality %d: accepted: 1 to 100", r.Quality)
	case r.Format == ImagePNG && r.Quality != 0:
		return fmt.Errorf("quality %d with a PNG, which is lossless: accepted: quality only with jpeg", r.Quality)
	case r.Format != ImageJPEG && r.Format != ImagePNG:
		return fmt.Errorf("image format %q: accepted: jpeg or png", r.Format)
	}
	return nil
}

// Encode draws the recipe's image and encodes it: the same recipe gives the same bytes.
func (r ImageRecipe) Encode() (*Image, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	return r.encode(), nil
}

// encode is Encode for a recipe already checked. The encoders write to memory, where their only
// errors — a writer's, or a side over 65,535 pixels — cannot happen.
func (r ImageRecipe) encode() *Image {
	var data []byte
	if r.Format == ImageJPEG {
		if bank := jpegBankFor(r); bank != nil {
			data = bank.spliced(r.Seed)
		}
	}
	if data == nil {
		data = r.encodeWhole()
	}
	rec := r
	return &Image{Format: r.Format, Width: r.Width, Height: r.Height, Data: data, recipe: &rec}
}

// encodeWhole draws the recipe's picture and encodes it: a PNG, or a JPEG too small to splice.
func (r ImageRecipe) encodeWhole() []byte {
	img := drawImage(r)
	var buf bytes.Buffer
	if r.Format == ImagePNG {
		_ = png.Encode(&buf, img)
	} else {
		_ = jpeg.Encode(&buf, img, &jpeg.Options{Quality: r.Quality})
	}
	return buf.Bytes()
}

// planned is the recipe's image without its file: what a dataset line needs (the recipe), never
// sent. Drawing a pool's dataset plans its images rather than encoding each one.
func (r ImageRecipe) planned() *Image {
	rec := r
	return &Image{Format: r.Format, Width: r.Width, Height: r.Height, recipe: &rec}
}

// drawImage draws the recipe's picture: a photo for a JPEG, a screenshot for a PNG.
func drawImage(r ImageRecipe) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, r.Width, r.Height))
	c := canvas{pix: img.Pix, stride: img.Stride, w: r.Width, h: r.Height}
	rnd := &pixRand{s: r.Seed}
	if r.Format == ImagePNG {
		c.screenshot(rnd)
	} else {
		c.photo(rnd)
	}
	return img
}

// pixRand is splitmix64: a tiny generator fast enough to draw grain for every pixel.
type pixRand struct{ s uint64 }

func (p *pixRand) next() uint64 {
	p.s += 0x9e3779b97f4a7c15
	z := p.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// between draws an int in [lo, hi].
func (p *pixRand) between(lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + int(p.next()%uint64(hi-lo+1))
}

type rgb [3]int

func (p *pixRand) colour(lo, hi int) rgb {
	return rgb{p.between(lo, hi), p.between(lo, hi), p.between(lo, hi)}
}

// mix is a + (b − a)·t/den, channel by channel.
func mix(a, b rgb, t, den int) rgb {
	if den <= 0 {
		return a
	}
	return rgb{a[0] + (b[0]-a[0])*t/den, a[1] + (b[1]-a[1])*t/den, a[2] + (b[2]-a[2])*t/den}
}

func clamp8(v int) uint8 {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// canvas is a rectangle of an RGBA image's pixels: a sub-canvas draws a part (a thumbnail) with
// its own coordinates.
type canvas struct {
	pix    []uint8 // from the canvas's top-left pixel
	stride int
	w, h   int
}

// sub is the part of c from (x0, y0), w×h, clipped to c.
func (c canvas) sub(x0, y0, w, h int) canvas {
	x0, y0 = max(0, x0), max(0, y0)
	w, h = min(w, c.w-x0), min(h, c.h-y0)
	if w <= 0 || h <= 0 {
		return canvas{stride: c.stride}
	}
	return canvas{pix: c.pix[y0*c.stride+x0*4:], stride: c.stride, w: w, h: h}
}

// row fills [x0, x1) of row y with one colour (already clipped).
func (c canvas) row(y, x0, x1 int, col rgb) {
	r, g, b := clamp8(col[0]), clamp8(col[1]), clamp8(col[2])
	px := c.pix[y*c.stride+x0*4 : y*c.stride+x1*4]
	for i := 0; i < len(px); i += 4 {
		px[i], px[i+1], px[i+2], px[i+3] = r, g, b, 255
	}
}

// rect fills [x0, x1) × [y0, y1), clipped, with a vertical gradient from top to bottom.
func (c canvas) rect(x0, y0, x1, y1 int, top, bottom rgb) {
	cx0, cy0, cx1, cy1 := max(0, x0), max(0, y0), min(c.w, x1), min(c.h, y1)
	if cx0 >= cx1 {
		return
	}
	for y := cy0; y < cy1; y++ {
		c.row(y, cx0, cx1, mix(top, bottom, y-y0, y1-y0))
	}
}

// frame draws a rectangle's 1-pixel border.
func (c canvas) frame(x0, y0, x1, y1 int, col rgb) {
	c.rect(x0, y0, x1, y0+1, col, col)
	c.rect(x0, y1-1, x1, y1, col, col)
	c.rect(x0, y0, x0+1, y1, col, col)
	c.rect(x1-1, y0, x1, y1, col, col)
}

// shades is how many steps a disc's shading takes from its centre to its rim.
const shades = 64

// disc fills a circle, shaded from its colour at the centre to dark at the rim, as a lit ball is.
func (c canvas) disc(cx, cy, r int, col rgb) {
	rim := mix(col, rgb{}, 1, 2)
	var lut [shades + 1][3]uint8
	for i := range lut {
		s := mix(col, rim, i, shades)
		lut[i] = [3]uint8{clamp8(s[0]), clamp8(s[1]), clamp8(s[2])}
	}
	r2 := uint64(r * r)
	inv := (shades << 32) / (r2 + 1) // d2·inv >> 32 is d2·shades ÷ (r2+1) without a division per pixel
	for y := max(0, cy-r); y < min(c.h, cy+r+1); y++ {
		dy := y - cy
		for x := max(0, cx-r); x < min(c.w, cx+r+1); x++ {
			dx := x - cx
			if d2 := uint64(dx*dx + dy*dy); d2 <= r2 {
				s := &lut[d2*inv>>32]
				i := y*c.stride + x*4
				c.pix[i], c.pix[i+1], c.pix[i+2], c.pix[i+3] = s[0], s[1], s[2], 255
			}
		}
	}
}

// photo draws what a phone photo has: a sky-to-ground gradient, shaded shapes, now and then a
// sign with writing, soft light and shade, texture, and sensor grain everywhere. Texture and grain
// are what make a JPEG of it as large as a photo's.
func (c canvas) photo(rnd *pixRand) {
	if c.w <= 0 || c.h <= 0 {
		return
	}
	c.gradient(rnd)
	side := min(c.w, c.h)
	for range rnd.between(12, 30) {
		col := rnd.colour(10, 245)
		size := max(2, side*rnd.between(2, 35)/100)
		x, y := rnd.between(-size/2, c.w), rnd.between(-size/2, c.h)
		if rnd.next()%2 == 0 {
			c.disc(x, y, size/2, col)
		} else {
			c.rect(x, y, x+size*rnd.between(50, 200)/100, y+size, col, mix(col, rgb{}, 1, 3))
		}
	}
	if rnd.next()%2 == 0 { // a sign or a caption
		w, h := side*rnd.between(20, 45)/100, side*rnd.between(8, 16)/100
		x, y := rnd.between(0, max(0, c.w-w)), rnd.between(0, max(0, c.h-h))
		paper := rnd.colour(200, 250)
		c.rect(x, y, x+w, y+h, paper, paper)
		c.sub(x, y, w, h).text(rnd, max(6, h/4), rnd.colour(0, 60))
	}
	c.texture(rnd, newShade(rnd, c.w, c.h, side/8, 24), newShade(rnd, c.w, c.h, side/64, 12), 16)
}

// gradient fills the canvas from one colour to another, mostly downwards (sky to ground), tilted
// by a random share of the width.
func (c canvas) gradient(rnd *pixRand) {
	const steps = 1024 // colours along the gradient: neighbours differ by less than one level
	ay, ax := rnd.between(4, 16), rnd.between(0, 8)
	top, bottom := rnd.colour(40, 230), rnd.colour(20, 200)
	var lut [steps][3]uint8
	for i := range lut {
		s := mix(top, bottom, i, steps-1)
		lut[i] = [3]uint8{clamp8(s[0]), clamp8(s[1]), clamp8(s[2])}
	}
	span := uint64(ay*(c.h-1) + ax*(c.w-1) + 1)
	step := (uint64(ax) * (steps - 1) << 32) / span // the index's step per pixel, in 32.32 fixed point
	for y := range c.h {
		at := (uint64(ay*y) * (steps - 1) << 32) / span
		px := c.pix[y*c.stride : y*c.stride+c.w*4]
		for i := 0; i < len(px); i += 4 {
			s := &lut[at>>32]
			px[i], px[i+1], px[i+2], px[i+3] = s[0], s[1], s[2], 255
			at += step
		}
	}
}

// shadeGrid is a grid of random brightness offsets (up to ±amp), one every 2^shift pixels, that
// texture interpolates bilinearly between its points: soft light and shade at a coarse cell, the
// look of leaves, fabric or gravel at a fine one.
type shadeGrid struct {
	shift  uint
	w      int // points per row
	points []int
	col    []int // one row's offsets interpolated down the columns, × the cell
}

// newShade makes a grid whose cell is the largest power of two ≤ cell (at least 4 pixels).
func newShade(rnd *pixRand, w, h, cell, amp int) *shadeGrid {
	g := &shadeGrid{shift: 2}
	for 1<<(g.shift+1) <= cell {
		g.shift++
	}
	g.w = w>>g.shift + 2
	g.points = make([]int, g.w*(h>>g.shift+2))
	for i := range g.points {
		g.points[i] = rnd.between(-amp, amp)
	}
	g.col = make([]int, g.w)
	return g
}

// atRow interpolates the grid down to row y.
func (g *shadeGrid) atRow(y int) {
	cell := 1 << g.shift
	top, fy := (y>>g.shift)*g.w, y&(cell-1)
	for i := range g.col {
		g.col[i] = g.points[top+i]*(cell-fy) + g.points[top+g.w+i]*fy
	}
}

// addRow adds the offsets of the row atRow set to dst, one per pixel: along a cell the offset
// steps linearly from one point's to the next's.
func (g *shadeGrid) addRow(dst []int) {
	cell := 1 << g.shift
	for i := 0; i*cell < len(dst); i++ {
		from, step := g.col[i]<<g.shift, g.col[i+1]-g.col[i]
		seg := dst[i*cell : min(len(dst), (i+1)*cell)]
		for fx := range seg {
			seg[fx] += (from + step*fx) >> (2 * g.shift)
		}
	}
}

// texture adds the shade grids' offsets and sensor grain to every pixel: per pixel a brightness
// step of up to ±grain (triangular, as the sum of two uniform draws is) and a smaller colour step.
func (c canvas) texture(rnd *pixRand, coarse, fine *shadeGrid, grain int) {
	span := grain + 1
	offsets := make([]int, c.w)
	for y := range c.h {
		clear(offsets)
		coarse.atRow(y)
		coarse.addRow(offsets)
		fine.atRow(y)
		fine.addRow(offsets)
		px := c.pix[y*c.stride : y*c.stride+c.w*4]
		for x, off := range offsets {
			n := rnd.next()
			v := off + int(n&0xff)*span>>8 + int(n>>8&0xff)*span>>8 - grain
			chroma := int(n>>16&0xff)*5>>8 - 2
			i := x * 4
			px[i] = clamp8(int(px[i]) + v + chroma)
			px[i+1] = clamp8(int(px[i+1]) + v)
			px[i+2] = clamp8(int(px[i+2]) + v - chroma)
		}
	}
}

// text draws lines of text-like words: glyphs of vertical stems and bars, size pixels high, with
// word gaps and ragged line ends, as a page of writing looks from afar.
func (c canvas) text(rnd *pixRand, size int, ink rgb) {
	lead := size * 3 / 2
	stroke := max(1, size/7)
	margin := max(2, size/2)
	for y := margin; y+size <= c.h-margin/2; y += lead {
		end := c.w - margin - rnd.between(0, c.w/3)
		x := margin
		for x < end {
			for range rnd.between(2, 9) { // one word
				gw := size * rnd.between(45, 70) / 100
				if x+gw > end {
					break
				}
				c.glyph(rnd, x, y, gw, size, stroke, ink)
				x += gw + stroke
			}
			x += size / 2
		}
	}
}

// glyph draws one letter-like mark in the box (x, y, w, h): a stem or two, ascending or not, and a
// bar at the top, middle or base of the x-height.
func (c canvas) glyph(rnd *pixRand, x, y, w, h, stroke int, ink rgb) {
	xh := h * 3 / 5 // the x-height: where lower-case letters top out
	bits := rnd.next()
	top := y + h - xh
	if bits&1 == 0 { // an ascender (b, d, h, k, l)
		top = y
	}
	c.rect(x, top, x+stroke, y+h, ink, ink)
	if bits&2 == 0 {
		c.rect(x+w-stroke, y+h-xh, x+w, y+h, ink, ink)
	}
	switch bits >> 2 % 3 {
	case 0:
		c.rect(x, y+h-xh, x+w, y+h-xh+stroke, ink, ink)
	case 1:
		c.rect(x, y+h-xh/2, x+w, y+h-xh/2+stroke, ink, ink)
	default:
		c.rect(x, y+h-stroke, x+w, y+h, ink, ink)
	}
}

// screenshot draws an app's window: a title bar, a sidebar with its items, cards of text with
// borders, buttons, and a photo thumbnail (chat and document screenshots usually hold one).
func (c canvas) screenshot(rnd *pixRand) {
	dark := rnd.next()%3 == 0
	bg, panel, ink, line := rgb{250, 250, 250}, rgb{240, 241, 243}, rgb{30, 32, 36}, rgb{210, 212, 216}
	if dark {
		bg, panel, ink, line = rgb{30, 31, 34}, rgb{43, 45, 49}, rgb{220, 222, 226}, rgb{70, 72, 78}
	}
	accent := rnd.colour(30, 220)
	c.rect(0, 0, c.w, c.h, bg, bg)
	bar := max(8, c.h/14)
	c.rect(0, 0, c.w, bar, accent, accent)
	font := max(6, bar/4)
	c.sub(bar/2, bar/4, c.w/3, bar).text(rnd, font, rgb{250, 250, 250})
	side := c.w / rnd.between(4, 6)
	c.rect(0, bar, side, c.h, panel, panel)
	c.sub(0, bar+font, side, c.h-bar).text(rnd, font, ink)

	// Cards down the main area, one of them holding the thumbnail.
	x0, x1 := side+font*2, c.w-font*2
	y := bar + font*2
	thumb := rnd.between(0, 1)
	for card := 0; y < c.h-font*4; card++ {
		h := font * rnd.between(6, 16)
		if card == thumb {
			h = font * 16 // a thumbnail of the same size in every screenshot: their files differ less
		}
		h = min(c.h-font-y, h)
		c.rect(x0, y, x1, y+h, panel, panel)
		c.frame(x0, y, x1, y+h, line)
		inner := c.sub(x0+font, y+font/2, x1-x0-2*font, h-font)
		if card == thumb {
			tw := min(inner.w/2, inner.h*4/3)
			inner.sub(0, 0, tw, inner.h).photo(rnd)
			inner = inner.sub(tw+font, 0, inner.w-tw-font, inner.h)
		}
		inner.text(rnd, font, ink)
		if rnd.next()%2 == 0 { // a button under the text
			bw := font * rnd.between(6, 10)
			c.rect(x1-bw-font, y+h-font*2, x1-font, y+h-font/2, accent, accent)
		}
		y += h + font
	}
}
