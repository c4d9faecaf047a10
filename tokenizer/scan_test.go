package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

var scanRegexes = map[scanKind]string{
	scanCl100k: cl100kStyleRegex,
	scanQwen:   qwenRegex,
	scanO200k:  o200kPattern,
	scanGPT2:   gpt2Regex,
}

// soup is characters that exercise every branch of the split regexes.
var soup = []string{
	"a", "b", "Z", "Q", "é", "É", "ß", "ǅ", "ʰ", "ー", "中", "한", "ſ", "\u0301", "\u0903", "ﬁ",
	"0", "7", "٣", "Ⅻ", "½", "１",
	" ", " ", "  ", "\t", "\n", "\r", "\r\n", "\v", "\f", "\u00a0", "\u3000", "\u2028", "\u0085",
	"'", "'s", "'S", "'ſ", "'re", "'RE", "'Ve", "'ll", "'LL", "'d", "'m", "'t", "'x",
	"!", ".", ",", "/", "//", "-", "_", "(", ")", "😀", "👍🏽", "\u200d", "\x00", "\x7f", "\xff", "\xe2\x82",
	"hello", "World", "HTTPServer", "iPhone", "McDonald's", "123456", "3.14",
}

func randomSoup(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(soup[r.IntN(len(soup))])
	}
	return b.String()
}

func regexTiles(re *regexp2.Regexp, s string) [][2]int {
	var out [][2]int
	findAll(re, s, func(st, en int) { out = append(out, [2]int{st, en}) })
	return out
}

func scanTiles(k scanKind, s string) [][2]int {
	var out [][2]int
	scanPattern{k}.each(s, func(st, en int) { out = append(out, [2]int{st, en}) })
	return out
}

func checkScan(t *testing.T, k scanKind, re *regexp2.Regexp, s string) bool {
	want, got := regexTiles(re, s), scanTiles(k, s)
	if !slices.Equal(want, got) {
		t.Errorf("scanner %d on %q:\n got %v\nwant %v", k, s, got, want)
		return false
	}
	return true
}

func TestScannersMatchRegex(t *testing.T) {
	texts := readCorpus(t, "testdata/corpus.jsonl")
	texts = append(texts, readCorpus(t, "testdata/corpus2.jsonl")...)
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		texts = append(texts, randomSoup(r, 1+r.IntN(12)))
	}
	for k, expr := range scanRegexes {
		re := mustInterpreted(expr)
		bad := 0
		for _, s := range texts {
			if !checkScan(t, k, re, s) {
				if bad++; bad > 5 {
					break
				}
			}
		}
	}
}

func FuzzScanners(f *testing.F) {
	for _, s := range soup {
		f.Add(s + " x" + s + s)
	}
	res := map[scanKind]*regexp2.Regexp{}
	for k, expr := range scanRegexes {
		res[k] = mustInterpreted(expr)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for k, re := range res {
			checkScan(t, k, re, s)
		}
	})
}

// FuzzEncode: Qwen3's Encode never panics, and its tokens' bytes give back the text (as normalized
// piece by piece between added tokens), byte-level BPE being lossless.
func FuzzEncode(f *testing.F) {
	for _, s := range readCorpus(f, "testdata/corpus.jsonl") {
		f.Add(s)
	}
	tk, err := Load(qwen3Path(f))
	if err != nil {
		f.Fatal(err)
	}
	h := tk.(*hfTokenizer)
	dec := decoderFor(h)
	f.Fuzz(func(t *testing.T, s string) {
		ids := tk.Encode(s)
		if tk.Count(s) != len(ids) {
			t.Fatalf("Count != len(Encode)")
		}
		var want strings.Builder
		h.rawAdded.split(span{s: s, first: true}, func(sp span, id int) {
			if id >= 0 {
				want.WriteString(sp.s)
			} else {
				want.WriteString(h.normalizer.normalize(sp.s))
			}
		})
		var got strings.Builder
		for _, id := range ids {
			got.WriteString(dec[id])
		}
		if got.String() != want.String() {
			t.Fatalf("round trip of %q: got %q (ids %v)", s, got.String(), ids)
		}
	})
}

// decoderFor maps each id of a byte-level tokenizer to its bytes (added tokens: their content).
func decoderFor(h *hfTokenizer) map[int]string {
	inv := map[rune]byte{}
	for b := 0; b < 256; b++ {
		inv[byteChar[b]] = byte(b)
	}
	dec := map[int]string{}
	for tok, id := range h.model.vocab {
		var b []byte
		for _, r := range tok {
			b = append(b, inv[r])
		}
		dec[int(id)] = string(b)
	}
	for _, m := range []*addedMatcher{h.rawAdded, h.normAdded} {
		for _, t := range m.tokens {
			dec[t.ID] = t.Content
		}
	}
	_ = utf8.RuneError
	return dec
}

// mustInterpreted compiles expr with regexp2's interpreter: tiktoken-go registers generated engines
// for the o200k, cl100k and GPT-2 patterns, which differ from the interpreter (and from Oniguruma)
// on \s*[\r\n]+ (" \n \n \n" in three pieces) and leave DEL out of [^\s\p{L}\p{N}].
func mustInterpreted(expr string) *regexp2.Regexp {
	re, err := compileRegex(expr)
	if err != nil {
		panic(err)
	}
	return re
}

// FuzzLoadEncode: any tokenizer.json is loaded or refused, and any accepted one encodes any text
// without panicking.
func FuzzLoadEncode(f *testing.F) {
	seeds := []string{
		`{"added_tokens":[{"id":3,"content":"<x>","special":true,"lstrip":true,"rstrip":true,"single_word":true}],"normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"},{"type":"NFKC"}]},"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true},{"type":"Digits","individual_digits":true},{"type":"Split","pattern":{"Regex":"a+"},"behavior":"MergedWithNext","invert":true}]},"model":{"type":"BPE","unk_token":"<unk>","fuse_unk":true,"byte_fallback":true,"vocab":{"<unk>":0,"a":1,"b":2,"ab":3,"<0x41>":4,"▁":5},"merges":["a b"]}}`,
		`{"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":true,"use_regex":true},"model":{"type":"BPE","continuing_subword_prefix":"##","end_of_word_suffix":"</w>","vocab":{"a":0,"##b":1,"ab":2,"b</w>":3},"merges":[["a","##b"]]}}`,
		`{"pre_tokenizer":{"type":"Split","pattern":{"String":""},"behavior":"Contiguous"},"model":{"type":"BPE","ignore_merges":true,"vocab":{"a":0},"merges":[]}}`,
	}
	for _, s := range seeds {
		f.Add(s, "aab Ab <x> 12 ▁▁a\x00\xff")
	}
	f.Fuzz(func(t *testing.T, js, text string) {
		tk, err := parseHF([]byte(js))
		if err != nil {
			return
		}
		ids := tk.Encode(text)
		if tk.Count(text) != len(ids) {
			t.Fatalf("Count != len(Encode)")
		}
	})
}
