package llamaserver

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// GGUF is llama.cpp's model file: a header, key-value metadata, tensor descriptions, then the tensors'
// data, each aligned. This writer knows only what a tiny test model needs: scalars, strings, arrays
// of strings, integers and floats, and f32 tensors. The layout is version 3 of the format, little-endian.

const (
	ggufMagic     = 0x46554747 // "GGUF" read as a little-endian uint32
	ggufVersion   = 3
	ggufAlignment = 32
)

// GGUF metadata value types.
const (
	ggufUint32  uint32 = 4
	ggufInt32   uint32 = 5
	ggufFloat32 uint32 = 6
	ggufBool    uint32 = 7
	ggufString  uint32 = 8
	ggufArray   uint32 = 9
)

const ggmlTypeF32 uint32 = 0

// kv is one metadata entry; value is uint32, int32, float32, bool, string, []string, []int32 or
// []float32.
type kv struct {
	key   string
	value any
}

// tensor is an f32 tensor; dims are ggml's ne order: dims[0] is the contiguous one.
type tensor struct {
	name string
	dims []uint64
	data []float32
}

func (t tensor) size() uint64 { return uint64(len(t.data)) * 4 }

// ggufWriter writes little-endian values, keeping the first error.
type ggufWriter struct {
	w   *bufio.Writer
	n   uint64
	err error
}

func (g *ggufWriter) raw(b []byte) {
	if g.err != nil {
		return
	}
	var n int
	n, g.err = g.w.Write(b)
	g.n += uint64(n)
}

func (g *ggufWriter) u32(v uint32) { g.raw(binary.LittleEndian.AppendUint32(nil, v)) }
func (g *ggufWriter) u64(v uint64) { g.raw(binary.LittleEndian.AppendUint64(nil, v)) }
func (g *ggufWriter) str(s string) { g.u64(uint64(len(s))); g.raw([]byte(s)) }

func (g *ggufWriter) pad() {
	if r := g.n % ggufAlignment; r != 0 {
		g.raw(make([]byte, ggufAlignment-r))
	}
}

func (g *ggufWriter) value(key string, v any) {
	switch v := v.(type) {
	case uint32:
		g.u32(ggufUint32)
		g.u32(v)
	case int32:
		g.u32(ggufInt32)
		g.u32(uint32(v))
	case float32:
		g.u32(ggufFloat32)
		g.u32(math.Float32bits(v))
	case bool:
		g.u32(ggufBool)
		b := byte(0)
		if v {
			b = 1
		}
		g.raw([]byte{b})
	case string:
		g.u32(ggufString)
		g.str(v)
	case []string:
		g.u32(ggufArray)
		g.u32(ggufString)
		g.u64(uint64(len(v)))
		for _, s := range v {
			g.str(s)
		}
	case []int32:
		g.u32(ggufArray)
		g.u32(ggufInt32)
		g.u64(uint64(len(v)))
		for _, x := range v {
			g.u32(uint32(x))
		}
	case []float32:
		g.u32(ggufArray)
		g.u32(ggufFloat32)
		g.u64(uint64(len(v)))
		for _, x := range v {
			g.u32(math.Float32bits(x))
		}
	default:
		if g.err == nil {
			g.err = fmt.Errorf("gguf: metadata %s: no encoding for %T", key, v)
		}
	}
}

// writeGGUF writes a complete GGUF file.
func writeGGUF(w io.Writer, meta []kv, tensors []tensor) error {
	g := &ggufWriter{w: bufio.NewWriterSize(w, 1<<20)}
	g.u32(ggufMagic)
	g.u32(ggufVersion)
	g.u64(uint64(len(tensors)))
	g.u64(uint64(len(meta)))
	for _, m := range meta {
		g.str(m.key)
		g.value(m.key, m.value)
	}
	var offset uint64
	for _, t := range tensors {
		g.str(t.name)
		g.u32(uint32(len(t.dims)))
		n := uint64(1)
		for _, d := range t.dims {
			g.u64(d)
			n *= d
		}
		if n != uint64(len(t.data)) {
			return fmt.Errorf("gguf: tensor %s: dims %v hold %d values, data has %d", t.name, t.dims, n, len(t.data))
		}
		g.u32(ggmlTypeF32)
		g.u64(offset)
		offset += (t.size() + ggufAlignment - 1) / ggufAlignment * ggufAlignment
	}
	g.pad()
	buf := make([]byte, 0, 1<<16)
	for _, t := range tensors {
		for i, f := range t.data {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(f))
			if len(buf) == cap(buf) || i == len(t.data)-1 {
				g.raw(buf)
				buf = buf[:0]
			}
		}
		g.pad()
	}
	if g.err != nil {
		return g.err
	}
	return g.w.Flush()
}

// writeGGUFFile writes a GGUF file at out through a temporary file renamed into place: test
// processes running side by side may write the same model at once, and a reader must never see half
// of one.
func writeGGUFFile(out string, meta []kv, tensors []tensor) error {
	f, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := writeGGUF(f, meta, tensors); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", out, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, out)
}
