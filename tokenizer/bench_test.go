package tokenizer

import (
	"os"
	"strings"
	"testing"

	tiktoken "github.com/tiktoken-go/tokenizer"
)

// benchText is ~1 MB of the corpus lines repeated, each repetition with a counter so that the
// pieces are not all cache hits.
func benchText(b *testing.B) string {
	lines := readCorpus(b, "testdata/corpus.jsonl")
	lines = append(lines, readCorpus(b, "testdata/corpus2.jsonl")...)
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20; i++ {
		for _, l := range lines {
			sb.WriteString(l)
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

func BenchmarkLoadQwen3(b *testing.B) { benchmarkLoad(b, qwen3Path(b)) }

// BenchmarkLoadFile loads $PLLOAD_BENCH_TOKENIZER (e.g. Gemma 3's 33 MB tokenizer.json).
func BenchmarkLoadFile(b *testing.B) {
	p := os.Getenv("PLLOAD_BENCH_TOKENIZER")
	if p == "" {
		b.Skip("PLLOAD_BENCH_TOKENIZER not set")
	}
	benchmarkLoad(b, p)
}

// benchmarkLoad parses the tokenizer.json at path, its bytes already in memory.
func benchmarkLoad(b *testing.B, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := parseHF(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	text := benchText(b)
	run := func(b *testing.B, f func(string) int) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for b.Loop() {
			f(text)
		}
	}
	b.Run("qwen3", func(b *testing.B) {
		tk, err := Load(qwen3Path(b))
		if err != nil {
			b.Fatal(err)
		}
		tk.Count(text) // warm the cache, as in a long run
		run(b, tk.Count)
	})
	b.Run("o200k", func(b *testing.B) {
		tk, err := Load("o200k_base")
		if err != nil {
			b.Fatal(err)
		}
		run(b, tk.Count)
	})
	b.Run("o200k-encode", func(b *testing.B) {
		tk, err := Load("o200k_base")
		if err != nil {
			b.Fatal(err)
		}
		run(b, func(s string) int { return len(tk.Encode(s)) })
	})
	// Cold: a fresh piece cache for every pass over the text.
	b.Run("qwen3-cold", func(b *testing.B) {
		tk, err := Load(qwen3Path(b))
		if err != nil {
			b.Fatal(err)
		}
		h := tk.(*hfTokenizer)
		run(b, func(s string) int {
			m := h.model
			c := *h
			c.model = &bpeModel{vocab: m.vocab, merges: m.merges, unk: m.unk, fuseUnk: m.fuseUnk,
				byteFallback: m.byteFallback, ignoreMerges: m.ignoreMerges, prefix: m.prefix,
				suffix: m.suffix, byteLevel: m.byteLevel, byteIDs: m.byteIDs, fallbackIDs: m.fallbackIDs}
			return c.Count(s)
		})
	})
	b.Run("o200k-cold", func(b *testing.B) {
		tk, err := Load("o200k_base")
		if err != nil {
			b.Fatal(err)
		}
		e := tk.(*tiktokenEncoding)
		run(b, func(s string) int {
			c := &tiktokenEncoding{name: e.name, sha: e.sha, ranks: e.ranks, re: e.re, scan: e.scan}
			return c.Count(s)
		})
	})
	b.Run("tiktoken-go-o200k", func(b *testing.B) {
		c, err := tiktoken.Get(tiktoken.O200kBase)
		if err != nil {
			b.Fatal(err)
		}
		run(b, func(s string) int { n, _ := c.Count(s); return n })
	})
}
