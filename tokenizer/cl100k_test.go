package tokenizer

import (
	"slices"
	"strings"
	"testing"

	"github.com/dlclark/regexp2/v2"

	tiktoken "github.com/tiktoken-go/tokenizer"
)

// cl100k_base has no Hugging Face reference here: compare with tiktoken-go on the corpora, except
// where its generated regex engine splits otherwise than the regex means (whitespace runs holding a
// line break followed by more whitespace; DEL).
func TestCl100kAgainstTiktokenGo(t *testing.T) {
	tk, err := Load("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	c, err := tiktoken.Get(tiktoken.Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	lines := readCorpus(t, "testdata/corpus.jsonl")
	lines = append(lines, readCorpus(t, "testdata/corpus2.jsonl")...)
	same, skipped := 0, 0
	for _, s := range lines {
		if strings.Contains(s, "\x7f") || strings.Contains(s, "<|") || tiktokenGoSplitsWrong(s) {
			skipped++
			continue
		}
		ref, _, err := c.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int, len(ref))
		for i, id := range ref {
			want[i] = int(id)
		}
		if got := tk.Encode(s); !slices.Equal(got, want) {
			t.Errorf("%q:\n got %v\nwant %v", trunc(s), got, want)
			continue
		}
		same++
	}
	t.Logf("cl100k_base: %d lines equal to tiktoken-go, %d skipped", same, skipped)
}

// tiktokenGoSplitsWrong: tiktoken-go's generated engine for the cl100k pattern splits s otherwise
// than regexp2's interpreter (and Oniguruma): " \n \n \n" in three pieces, not one.
func tiktokenGoSplitsWrong(s string) bool {
	gen := regexp2.MustCompile(cl100kPattern, regexp2.None) // finds tiktoken-go's registered engine
	return !slices.Equal(regexTiles(gen, s), regexTiles(mustInterpreted(cl100kPattern), s))
}
