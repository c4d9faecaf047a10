package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestVariants: Qwen3's vocabulary and merges under other normalizers, pre-tokenizers and added
// tokens (testdata/variants/vN.patch.json: NFKC/NFD/NFKD, Prepend, Replace with a regex, Strip,
// Metaspace with each prepend_scheme and split, Digits, Split with each behavior and invert,
// ByteLevel with add_prefix_space and use_regex, ignore_merges, and added tokens with lstrip,
// rstrip, single_word and normalized), against ids from Hugging Face tokenizers (tokref) on
// corpus.jsonl and corpus3.jsonl.
func TestVariants(t *testing.T) {
	data, err := os.ReadFile(qwen3Path(t))
	if err != nil {
		t.Fatal(err)
	}
	var base map[string]json.RawMessage
	if err := json.Unmarshal(data, &base); err != nil {
		t.Fatal(err)
	}
	var added []json.RawMessage
	if err := json.Unmarshal(base["added_tokens"], &added); err != nil {
		t.Fatal(err)
	}
	corpus := readCorpus(t, "testdata/corpus.jsonl")
	corpus3 := readCorpus(t, "testdata/corpus3.jsonl")
	for _, v := range []string{"v1", "v2", "v3", "v4", "v5"} {
		t.Run(v, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "variants", v+".patch.json"))
			if err != nil {
				t.Fatal(err)
			}
			var patch struct {
				Normalizer   json.RawMessage   `json:"normalizer"`
				PreTokenizer json.RawMessage   `json:"pre_tokenizer"`
				ExtraAdded   []json.RawMessage `json:"extra_added"`
				IgnoreMerges bool              `json:"ignore_merges"`
			}
			if err := json.Unmarshal(raw, &patch); err != nil {
				t.Fatal(err)
			}
			doc := map[string]json.RawMessage{}
			for k, x := range base {
				doc[k] = x
			}
			doc["normalizer"], doc["pre_tokenizer"] = patch.Normalizer, patch.PreTokenizer
			all, _ := json.Marshal(append(append([]json.RawMessage{}, added...), patch.ExtraAdded...))
			doc["added_tokens"] = all
			if patch.IgnoreMerges {
				var m map[string]json.RawMessage
				if err := json.Unmarshal(base["model"], &m); err != nil {
					t.Fatal(err)
				}
				m["ignore_merges"] = json.RawMessage("true")
				doc["model"], _ = json.Marshal(m)
			}
			out, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), "tokenizer.json")
			if err := os.WriteFile(p, out, 0o644); err != nil {
				t.Fatal(err)
			}
			tk, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			checkCorpus(t, tk, corpus, readIDs(t, filepath.Join("testdata", "variants", v+".ids.jsonl")))
			checkCorpus(t, tk, corpus3, readIDs(t, filepath.Join("testdata", "variants", v+".ids3.jsonl")))
		})
	}
}
