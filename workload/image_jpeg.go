package workload

import (
	"bytes"
	"encoding/binary"
	"hash/fnv"
	"image"
	"image/jpeg"
	"math/bits"
	"sync"

	"golang.org/x/sync/errgroup"
)

// Fresh JPEGs at the rate a vision stage sends them: drawing and encoding a 1024×1024 photo takes
// about 44 ms of a core (BenchmarkImageEncode), so 20 turns a second with 1–2 fresh images each
// would keep more than one of this machine's two cores busy beside the sender, and a session's
// first turn is drawn just before it goes. A JPEG with restart markers is made of intervals that
// decode on their own (each resets the DC predictors), so a fresh image can be spliced from
// intervals encoded once: the bank holds a few photos of the recipe's size, each cut into tiles of
// one MCU row's part and encoded by Go's image/jpeg, and an image takes each tile from one of the
// photos, as its seed draws. Splicing is a copy: BenchmarkImageEncode's jpeg-spliced.
//
// The result is a valid baseline JPEG of the recipe's size whose pixels are a collage of the bank's
// photos at their own places, with a photo's bytes per pixel (2 bytes of marker per tile more), and
// different seeds give different pixels (a server's multimodal cache hashes the decoded pixels): at
// least 2^64 tile choices per size. Images too small for that many choices are encoded whole.

const (
	// jpegBankPhotos is how many photos a bank holds when the tiles give 64 bits of choice with it.
	jpegBankPhotos = 4
	// jpegMaxBankPhotos bounds a small image's bank; below it the image is encoded whole.
	jpegMaxBankPhotos = 64
	// jpegTileMCUs is the widest tile, in 16-pixel MCUs: 4 tiles across a 1024-pixel row.
	jpegTileMCUs = 16
)

// jpegBank is one size and quality's encoded tiles: tiles[p][t] is photo p's tile t (raster
// order), its entropy-coded bytes padded to a byte as a restart interval is.
type jpegBank struct {
	header   []byte // SOI to SOS inclusive, with the image's size and a DRI segment
	tiles    [][][]byte
	interval int // MCUs per tile
}

type jpegBankKey struct{ w, h, quality int }

var jpegBanks sync.Map // jpegBankKey → *jpegBankOnce

type jpegBankOnce struct {
	once sync.Once
	bank *jpegBank // nil: the size is encoded whole
}

// jpegBankFor is the bank of a recipe's size and quality, built on first use (Scenario.Build
// builds a scenario's banks ahead of its run).
func jpegBankFor(r ImageRecipe) *jpegBank {
	v, _ := jpegBanks.LoadOrStore(jpegBankKey{r.Width, r.Height, r.Quality}, &jpegBankOnce{})
	b := v.(*jpegBankOnce)
	b.once.Do(func() { b.bank = buildJPEGBank(r.Width, r.Height, r.Quality) })
	return b.bank
}

// warmImageBanks builds the banks of the scenario's JPEG sizes beside its stages, so that no
// session's first image waits for one (1024×1024 at quality 85: 150 ms).
func (s *Scenario) warmImageBanks(eg *errgroup.Group) {
	spec := s.Session.Images
	if spec == nil || spec.Format != ImageJPEG {
		return
	}
	for _, sz := range spec.Sizes {
		eg.Go(func() error {
			jpegBankFor(ImageRecipe{Width: sz.Width, Height: sz.Height, Format: ImageJPEG, Quality: spec.JPEGQuality})
			return nil
		})
	}
}

// jpegTiling is how a w×h image is cut: tiles of interval MCUs (a divisor of an MCU row's count,
// so a tile never spans two rows), and how many photos the bank needs (0: encode whole).
func jpegTiling(w, h int) (interval, tiles, photos int) {
	perRow, rows := (w+15)/16, (h+15)/16
	// The widest tile that still leaves 32 tiles (4 photos give 2 bits each), else one MCU a tile.
	interval = 1
	for d := min(perRow, jpegTileMCUs); d > 1; d-- {
		if perRow%d == 0 && rows*(perRow/d) >= 32 {
			interval = d
			break
		}
	}
	tiles = rows * (perRow / interval)
	// photos^tiles ≥ 2^64: log2(photos) ≥ 64/tiles, with photos a power of two.
	need := (64 + tiles - 1) / tiles
	if need >= bits.Len(jpegMaxBankPhotos) {
		return interval, tiles, 0
	}
	return interval, tiles, max(1<<need, jpegBankPhotos)
}

func buildJPEGBank(w, h, quality int) *jpegBank {
	interval, tiles, photos := jpegTiling(w, h)
	if photos == 0 {
		return nil
	}
	b := &jpegBank{interval: interval, tiles: make([][][]byte, photos)}
	seed := bankSeed(w, h, quality)
	tileW := interval * 16
	var buf bytes.Buffer
	opts := &jpeg.Options{Quality: quality}
	for p := range photos {
		img := drawImage(ImageRecipe{Width: w, Height: h, Format: ImageJPEG, Quality: quality, Seed: seed + uint64(p)})
		b.tiles[p] = make([][]byte, 0, tiles)
		for y := 0; y < h; y += 16 {
			for x := 0; x < w; x += tileW {
				buf.Reset()
				_ = jpeg.Encode(&buf, img.SubImage(image.Rect(x, y, min(x+tileW, w), min(y+16, h))), opts)
				head, scan := splitJPEG(buf.Bytes())
				b.tiles[p] = append(b.tiles[p], bytes.Clone(scan))
				if b.header == nil {
					b.header = spliceHeader(head, w, h, interval)
				}
			}
		}
	}
	return b
}

// bankSeed seeds a bank's photos from its size and quality alone, so a recipe makes the same
// bytes in any process.
func bankSeed(w, h, quality int) uint64 {
	f := fnv.New64a()
	_ = binary.Write(f, binary.LittleEndian, [3]int64{int64(w), int64(h), int64(quality)})
	return f.Sum64()
}

// splitJPEG cuts a file of Go's encoder into its header (SOI to the SOS segment's end) and its
// scan's entropy-coded bytes (before EOI). Go writes one scan and no restart markers.
func splitJPEG(data []byte) (head, scan []byte) {
	at := 2 // after SOI
	for at+4 <= len(data) {
		marker, n := data[at+1], int(binary.BigEndian.Uint16(data[at+2:]))
		at += 2 + n
		if marker == 0xDA {
			break
		}
	}
	return data[:at], data[at : len(data)-2]
}

// spliceHeader is a tile's header made the whole image's: SOF0's size set to w×h, and a DRI
// segment (a restart every interval MCUs) before the SOS.
func spliceHeader(head []byte, w, h, interval int) []byte {
	out := make([]byte, 0, len(head)+6)
	at := 2
	out = append(out, head[:2]...)
	for at+4 <= len(head) {
		marker, n := head[at+1], int(binary.BigEndian.Uint16(head[at+2:]))
		seg := head[at : at+2+n]
		switch marker {
		case 0xC0: // SOF0: FF C0, length, precision, height, width, …
			seg = bytes.Clone(seg)
			binary.BigEndian.PutUint16(seg[5:], uint16(h))
			binary.BigEndian.PutUint16(seg[7:], uint16(w))
		case 0xDA:
			out = append(out, 0xFF, 0xDD, 0, 4, byte(interval>>8), byte(interval))
		}
		out = append(out, seg...)
		at += 2 + n
	}
	return out
}

// spliced is the recipe's image from its size's bank: each tile from the photo its seed draws, a
// restart marker (RST0 to RST7 in turn) between tiles.
func (b *jpegBank) spliced(seed uint64) []byte {
	rnd := &pixRand{s: seed}
	photos := uint64(len(b.tiles))
	tiles := len(b.tiles[0])
	size := len(b.header) + 2*tiles
	picks := make([]uint8, tiles)
	var word uint64
	for t := range picks {
		if t%8 == 0 {
			word = rnd.next()
		}
		picks[t] = uint8(word % photos) // photos is a power of two: a byte's low bits
		word >>= 8
		size += len(b.tiles[picks[t]][t])
	}
	out := make([]byte, 0, size)
	out = append(out, b.header...)
	for t, p := range picks {
		if t > 0 {
			out = append(out, 0xFF, 0xD0+byte((t-1)%8))
		}
		out = append(out, b.tiles[p][t]...)
	}
	return append(out, 0xFF, 0xD9)
}
