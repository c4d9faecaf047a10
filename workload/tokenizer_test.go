package workload

import (
	"compress/gzip"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plload/plload/tokenizer"
)

// o200kForTest is the embedded o200k_base tokenizer.
func o200kForTest(tb testing.TB) tokenizer.Tokenizer {
	tb.Helper()
	tok, err := tokenizer.Load(DefaultTokenizerName)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// TestMain keeps every test of the package off the network: a scenario naming a Hugging Face repo
// id resolves from an empty cache in offline mode (an error), never from the public hub.
func TestMain(m *testing.M) {
	cache, err := os.MkdirTemp("", "plload-hf-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HF_HUB_CACHE", cache)
	os.Setenv("HF_HUB_OFFLINE", "1")
	code := m.Run()
	os.RemoveAll(cache)
	os.Exit(code)
}

// qwen3Dir gunzips the tokenizer package's Qwen3 tokenizer.json (Apache-2.0, committed as testdata)
// into a folder of the test's, as a user's download would lie.
func qwen3Dir(tb testing.TB) string {
	tb.Helper()
	in, err := os.Open(filepath.Join("..", "tokenizer", "testdata", "qwen3", "tokenizer.json.gz"))
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	out, err := os.Create(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// sp32kPath is the 32k SentencePiece-style tokenizer.json that $PLLOAD_SP32K names (not committed:
// its licence is not the project's to give), or "" when it names none.
func sp32kPath() string {
	p := os.Getenv("PLLOAD_SP32K")
	if p == "" {
		return ""
	}
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// testTokenizers are the tokenizers the length tests run in: the embedded two, Qwen3 (byte-level
// BPE with a Split regex) and, where present, sp32k (SentencePiece-style, whole-text BPE).
func testTokenizers(t *testing.T) map[string]tokenizer.Tokenizer {
	out := map[string]tokenizer.Tokenizer{}
	for _, spec := range []string{"o200k_base", "cl100k_base", qwen3Dir(t), sp32kPath()} {
		if spec == "" {
			t.Log("sp32k: not here (set PLLOAD_SP32K to its tokenizer.json); its case is skipped")
			continue
		}
		tok, err := tokenizer.Load(spec)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(filepath.Dir(spec))+"/"+filepath.Base(spec)] = tok
	}
	return out
}

// TestProseLengthsInEveryTokenizer: synthetic prose of n tokens counts n in the chosen tokenizer,
// exactly where its pieces add up (the byte-level ones) and within ±2 % (±1 for short texts) where
// the whole text is one BPE sequence (sp32k), in English and Korean.
func TestProseLengthsInEveryTokenizer(t *testing.T) {
	for name, tok := range testTokenizers(t) {
		for _, lang := range []string{"en", "ko"} {
			g, err := NewTextGen(lang, tok)
			if strings.HasPrefix(name, "sp32k") && lang == "ko" {
				// No Korean word, nor syllable after a space, is one token of a 32k SentencePiece
				// vocabulary ("▁" is a token of its own): refused, naming the tokenizer.
				if err == nil || !strings.Contains(err.Error(), "synthetic text cannot be sized in it") {
					t.Errorf("sp32k Korean: %v, want the refusal", err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s %s: %v", name, lang, err)
			}
			worst := 0.0
			for seed := range uint64(6) {
				r := rand.New(rand.NewPCG(seed, 3))
				for _, n := range []int{1, 2, 3, 7, 20, 64, 200, 400, 1000, 2500} {
					text := g.Prose(r, n)
					got := tok.Count(text)
					bound := max(1, int(0.02*float64(n)))
					if g.additive {
						bound = 0
					}
					if abs(got-n) > bound {
						t.Errorf("%s %s: prose of %d tokens counts %d (bound ±%d): %.80q", name, lang, n, got, bound, text)
					}
					worst = max(worst, float64(abs(got-n))/float64(n))
				}
			}
			t.Logf("%s %s: additive %v, worst miss %.2f %%", name, lang, g.additive, 100*worst)
		}
	}
}

// TestKoreanPersonasInQwen3: a Korean scenario whose target.tokenizer is Qwen3's tokenizer.json
// writes personas of 400 ± 2 % Qwen3 tokens (o200k_base lengths are 9–14 % short of it) and user
// turns of their drawn lengths, counted by a second, independent load of the same file.
func TestKoreanPersonasInQwen3(t *testing.T) {
	dir := qwen3Dir(t)
	path := filepath.Join(t.TempDir(), "ko.yaml")
	text := `name: ko
seed: 7
target: {base_url: mock, tokenizer: ` + dir + `}
personas: {count: 6, system_prompt_tokens: {dist: constant, value: 400}}
session:
  language: ko
  turns: {dist: constant, value: 2}
  user_input_tokens: {min: 50, max: 300}
  max_output_tokens: {dist: constant, value: 20}
  think_time: {dist: constant, value: 1s}
load: {mode: concurrency, stages: [{concurrency: 2, duration: 5s}]}
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s := loadFile(t, path)
	if s.Tokenizer().Name() != dir {
		t.Fatalf("the scenario counts in %s, want %s", s.Tokenizer().Name(), dir)
	}
	w, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	qwen, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	o200k := o200kForTest(t)
	for _, p := range w.Personas {
		n := qwen.Count(p.SystemPrompt)
		if n < 392 || n > 408 || p.Tokens != n {
			t.Errorf("persona %s: %d Qwen3 tokens (recorded %d), want 400 ± 2 %%", p.Name, n, p.Tokens)
		}
		if o := o200k.Count(p.SystemPrompt); o >= n {
			t.Errorf("persona %s: o200k_base counts %d, Qwen3 %d: Korean should cost Qwen3 more", p.Name, o, n)
		}
	}
	for i := range w.Stages[0].Sessions {
		cur := w.Stages[0].Cursor(i)
		for turn, text, ok := cur.Next(); ok; turn, text, ok = cur.Next() {
			if got := qwen.Count(text); got != int(turn.UserTokens) {
				t.Fatalf("a user turn counts %d Qwen3 tokens, drawn %d", got, turn.UserTokens)
			}
		}
	}
}

// TestMooncakeBlocksInQwen3: with Qwen3 as the scenario's tokenizer, a Mooncake trace's hash-id
// blocks are exactly 512 Qwen3 tokens each: every prompt counts its input_length, and every cut at
// a block boundary counts the blocks before it.
func TestMooncakeBlocksInQwen3(t *testing.T) {
	tok, err := tokenizer.Load(qwen3Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.jsonl")
	writeTraceLines(t, path,
		`{"timestamp": 0, "input_length": 1536, "output_length": 5, "hash_ids": [0, 1, 2]}`,
		`{"timestamp": 1, "input_length": 2000, "output_length": 5, "hash_ids": [0, 1, 2, 9]}`,
		`{"timestamp": 2, "input_length": 1100, "output_length": 5, "hash_ids": [0, 1, 2]}`)
	for _, lang := range []string{"en", "ko"} {
		s := traceScenario(3, lang)
		s.tok = tok
		src := mustReadTrace(t, s, path, TraceSpec{Format: FormatMooncake})
		for i, n := range []int{1536, 2000, 1100} {
			prompt := src.Sessions[i].Turns[0].User
			if got := tok.Count(prompt); got != n {
				t.Errorf("%s request %d: %d Qwen3 tokens, want %d", lang, i, got, n)
			}
			for k := 512; k < n; k += 512 {
				if got := tok.Count(cutPieces(" "+prompt, k)[1:]); got != k {
					t.Errorf("%s request %d: the first %d blocks' text counts %d Qwen3 tokens, want %d", lang, i, k/512, got, k)
				}
			}
		}
		first := src.Sessions[0].Turns[0].User
		if !strings.HasPrefix(src.Sessions[1].Turns[0].User, first) {
			t.Errorf("%s: requests over the same blocks do not share their text", lang)
		}
	}
}
