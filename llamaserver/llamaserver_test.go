package llamaserver

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readGGUFHeader reads back what writeGGUF wrote: the metadata (scalars and arrays as Go values) and
// each tensor's dims and offset, then the first value of every tensor, from the data section.
func readGGUFHeader(t *testing.T, data []byte) (meta map[string]any, dims map[string][]uint64, first map[string]float32) {
	t.Helper()
	r := bytes.NewReader(data)
	u32 := func() uint32 { var v uint32; binary.Read(r, binary.LittleEndian, &v); return v }
	u64 := func() uint64 { var v uint64; binary.Read(r, binary.LittleEndian, &v); return v }
	str := func() string { b := make([]byte, u64()); io.ReadFull(r, b); return string(b) }
	if u32() != ggufMagic || u32() != ggufVersion {
		t.Fatal("bad magic or version")
	}
	nt, nkv := u64(), u64()
	var value func(typ uint32) any
	value = func(typ uint32) any {
		switch typ {
		case ggufUint32:
			return u32()
		case ggufInt32:
			return int32(u32())
		case ggufFloat32:
			return math.Float32frombits(u32())
		case ggufBool:
			b, _ := r.ReadByte()
			return b == 1
		case ggufString:
			return str()
		case ggufArray:
			et, n := u32(), u64()
			out := make([]any, n)
			for i := range out {
				out[i] = value(et)
			}
			return out
		}
		t.Fatalf("unknown type %d", typ)
		return nil
	}
	meta = map[string]any{}
	for range nkv {
		k := str()
		meta[k] = value(u32())
	}
	dims, offsets := map[string][]uint64{}, map[string]uint64{}
	var names []string
	for range nt {
		name := str()
		nd := u32()
		d := make([]uint64, nd)
		for i := range d {
			d[i] = u64()
		}
		if typ := u32(); typ != ggmlTypeF32 {
			t.Fatalf("%s: type %d", name, typ)
		}
		dims[name], offsets[name] = d, u64()
		names = append(names, name)
	}
	start := (len(data) - r.Len() + ggufAlignment - 1) / ggufAlignment * ggufAlignment
	first = map[string]float32{}
	for _, n := range names {
		at := start + int(offsets[n])
		if at%ggufAlignment != 0 {
			t.Errorf("%s: data at %d, not aligned", n, at)
		}
		first[n] = math.Float32frombits(binary.LittleEndian.Uint32(data[at:]))
	}
	return meta, dims, first
}

func TestGGUFWritesWhatItIsGiven(t *testing.T) {
	var buf bytes.Buffer
	meta := []kv{{"a.u", uint32(7)}, {"a.i", int32(-3)}, {"a.f", float32(0.5)}, {"a.b", true}, {"a.s", "héllo"},
		{"a.ss", []string{"x", "", "yz"}}, {"a.is", []int32{1, -2}}}
	tensors := []tensor{{name: "t1", dims: []uint64{3}, data: []float32{1.5, 2, 3}}, {name: "t2", dims: []uint64{2, 2}, data: []float32{-4, 5, 6, 7}}}
	if err := writeGGUF(&buf, meta, tensors); err != nil {
		t.Fatal(err)
	}
	gotMeta, dims, first := readGGUFHeader(t, buf.Bytes())
	want := map[string]any{"a.u": uint32(7), "a.i": int32(-3), "a.f": float32(0.5), "a.b": true, "a.s": "héllo",
		"a.ss": []any{"x", "", "yz"}, "a.is": []any{int32(1), int32(-2)}}
	if d := cmp.Diff(want, gotMeta); d != "" {
		t.Errorf("metadata (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string][]uint64{"t1": {3}, "t2": {2, 2}}, dims); d != "" {
		t.Errorf("dims (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]float32{"t1": 1.5, "t2": -4}, first); d != "" {
		t.Errorf("first values (-want +got):\n%s", d)
	}
	if err := writeGGUF(io.Discard, nil, []tensor{{name: "bad", dims: []uint64{2, 2}, data: []float32{1}}}); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Errorf("a tensor whose dims do not match its data: err %v", err)
	}
	if err := writeGGUF(io.Discard, []kv{{"x", 1.5}}, nil); err == nil || !strings.Contains(err.Error(), "float64") {
		t.Errorf("an unencodable value: err %v", err)
	}
}

func TestTinyModelCarriesQwen3sTokenizer(t *testing.T) {
	tok, cfg, ok := Qwen3Files()
	if !ok {
		t.Skip("Qwen3's tokenizer files are not in this source tree")
	}
	out := filepath.Join(t.TempDir(), "m.gguf")
	if err := WriteTinyQwen3(out, tok, cfg, ModelOptions{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	meta, dims, _ := readGGUFHeader(t, data)
	tokens := meta["tokenizer.ggml.tokens"].([]any)
	if len(tokens) != 151669 || tokens[151645] != "<|im_end|>" || tokens[151657] != "<tool_call>" {
		t.Errorf("%d tokens; 151645 %v, 151657 %v", len(tokens), tokens[151645], tokens[151657])
	}
	types := meta["tokenizer.ggml.token_type"].([]any)
	if types[151645] != tokenControl || types[151657] != tokenUserDefined || types[0] != tokenNormal {
		t.Errorf("token types: %v %v %v", types[151645], types[151657], types[0])
	}
	if meta["tokenizer.ggml.eos_token_id"] != uint32(151645) || !strings.Contains(meta["tokenizer.chat_template"].(string), "<|im_start|>") {
		t.Errorf("eos %v, template %.60q", meta["tokenizer.ggml.eos_token_id"], meta["tokenizer.chat_template"])
	}
	if merges := meta["tokenizer.ggml.merges"].([]any); len(merges) != 151387 || merges[0] != "Ġ Ġ" {
		t.Errorf("%d merges, first %q", len(merges), merges[0])
	}
	if d := cmp.Diff([]uint64{width, 151669}, dims["token_embd.weight"]); d != "" {
		t.Errorf("embedding dims: %s", d)
	}
}
