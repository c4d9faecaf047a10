package workload

import (
	"bytes"
	"image"
	"image/jpeg"
	"testing"
)

// A spliced JPEG decodes to its size, and its pixels are the bank's photos' tiles at their own
// places: each tile compared with the tile of every photo, the one it matches best must be far
// closer than the others. A wrong restart marker, DRI or SOF would fail the decode or garble the
// tiles after it.
func TestJPEGSplicedDecodes(t *testing.T) {
	for _, sz := range [][2]int{{1024, 1024}, {1000, 600}, {1072, 37}, {200, 120}} {
		w, h := sz[0], sz[1]
		r := ImageRecipe{Width: w, Height: h, Format: ImageJPEG, Quality: 85, Seed: 7}
		bank := jpegBankFor(r)
		if bank == nil {
			t.Fatalf("%d×%d: no bank", w, h)
		}
		img, err := jpeg.Decode(bytes.NewReader(r.encode().Data))
		if err != nil {
			t.Fatalf("%d×%d: spliced JPEG does not decode: %v", w, h, err)
		}
		if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
			t.Fatalf("%d×%d: decodes as %v", w, h, b)
		}
		photos := make([]image.Image, len(bank.tiles))
		for p := range photos {
			var buf bytes.Buffer
			src := drawImage(ImageRecipe{Width: w, Height: h, Format: ImageJPEG, Quality: 85, Seed: bankSeed(w, h, 85) + uint64(p)})
			_ = jpeg.Encode(&buf, src, &jpeg.Options{Quality: 85})
			photos[p], _ = jpeg.Decode(&buf)
		}
		tileW, seen := bank.interval*16, map[int]bool{}
		for y := 0; y < h; y += 16 {
			for x := 0; x < w; x += tileW {
				rect := image.Rect(x, y, min(x+tileW, w), min(y+16, h))
				best, second, pick := 1e18, 1e18, -1
				for p, ph := range photos {
					d := meanAbsDiff(img, ph, rect)
					if d < best {
						best, second, pick = d, best, p
					} else if d < second {
						second = d
					}
				}
				seen[pick] = true
				if best > 4 || second < 3*best {
					t.Fatalf("%d×%d tile at (%d,%d): closest photo %d differs by %.2f a channel, the next by %.2f", w, h, x, y, pick, best, second)
				}
			}
		}
		if len(seen) < 2 {
			t.Errorf("%d×%d: every tile from one photo", w, h)
		}
	}
}

// meanAbsDiff is the mean absolute difference of a and b's channels over rect.
func meanAbsDiff(a, b image.Image, rect image.Rectangle) float64 {
	sum, n := 0.0, 0
	for y := rect.Min.Y; y < rect.Max.Y; y++ {
		for x := rect.Min.X; x < rect.Max.X; x++ {
			r1, g1, b1, _ := a.At(x, y).RGBA()
			r2, g2, b2, _ := b.At(x, y).RGBA()
			for _, d := range []int{int(r1>>8) - int(r2>>8), int(g1>>8) - int(g2>>8), int(b1>>8) - int(b2>>8)} {
				sum += float64(max(d, -d))
			}
			n += 3
		}
	}
	return sum / float64(n)
}

// Seeds give different pixels, not only different bytes: a server's multimodal cache hashes what
// it decodes. The same seed gives the same bytes.
func TestJPEGSplicedSeedsDiffer(t *testing.T) {
	r := ImageRecipe{Width: 640, Height: 480, Format: ImageJPEG, Quality: 85}
	seen := map[string]uint64{}
	for seed := range uint64(200) {
		r.Seed = seed
		im := r.encode()
		if again := r.encode(); !bytes.Equal(im.Data, again.Data) {
			t.Fatalf("seed %d: two encodes differ", seed)
		}
		dec, err := jpeg.Decode(bytes.NewReader(im.Data))
		if err != nil {
			t.Fatal(err)
		}
		key := string(dec.(*image.YCbCr).Y)
		if other, ok := seen[key]; ok {
			t.Fatalf("seeds %d and %d decode to the same pixels", other, seed)
		}
		seen[key] = seed
	}
}

// The tiling gives at least 2^64 choices, or the image is encoded whole.
func TestJPEGTiling(t *testing.T) {
	for _, tc := range []struct {
		w, h                    int
		interval, tiles, photos int
	}{
		{1024, 1024, 16, 256, 4},
		{1072, 37, 1, 201, 4}, // 67 MCUs a row, a prime: one MCU a tile
		{200, 120, 1, 104, 4}, // 13 MCUs a row: 8 rows of 13 would be too few tiles
		{64, 48, 1, 12, 64},   // 12 tiles: 64 photos
		{16, 16, 1, 1, 0},     // one MCU: encoded whole
		{48, 32, 1, 6, 0},     // 6 tiles would need 2^11 photos
		{512, 128, 8, 32, 4},  // 32 MCUs a row, 8 rows: 4 tiles a row
		{256, 176, 4, 44, 4},  // 16 a row, 11 rows: 11 or 22 tiles are too few
	} {
		interval, tiles, photos := jpegTiling(tc.w, tc.h)
		if interval != tc.interval || tiles != tc.tiles || photos != tc.photos {
			t.Errorf("%d×%d: interval %d, tiles %d, photos %d; want %d, %d, %d", tc.w, tc.h, interval, tiles, photos, tc.interval, tc.tiles, tc.photos)
		}
	}
	// An image too small to splice is still made, whole.
	im, err := ImageRecipe{Width: 48, Height: 32, Format: ImageJPEG, Quality: 85, Seed: 1}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := jpeg.DecodeConfig(bytes.NewReader(im.Data)); err != nil || cfg.Width != 48 || cfg.Height != 32 {
		t.Fatalf("48×32 whole: %+v, %v", cfg, err)
	}
}
