package llamaserver

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTinyModelPoolingVariants: an embedding model carries only its pooling type beyond the chat
// model's metadata; the reranker adds rank pooling, the yes/no labels, the rerank template and a
// two-row head; the chat model carries none of them; an unknown pooling is refused by name.
func TestTinyModelPoolingVariants(t *testing.T) {
	tok, cfg, ok := Qwen3Files()
	if !ok {
		t.Skip("Qwen3's tokenizer files are not in this source tree")
	}
	dir := t.TempDir()
	poolingKeys := []string{"qwen3.pooling_type", "qwen3.classifier.output_labels", "tokenizer.chat_template.rerank", "tokenizer.chat_templates"}
	for _, tc := range []struct {
		pooling string
		want    map[string]any // the pooling keys present, with their values
	}{
		{"", map[string]any{}},
		{"mean", map[string]any{"qwen3.pooling_type": uint32(1)}},
		{"last", map[string]any{"qwen3.pooling_type": uint32(3)}},
		{"rank", map[string]any{"qwen3.pooling_type": uint32(4), "qwen3.classifier.output_labels": []any{"yes", "no"},
			"tokenizer.chat_template.rerank": RerankTemplate, "tokenizer.chat_templates": []any{"rerank"}}},
	} {
		out := filepath.Join(dir, "m-"+tc.pooling+".gguf")
		if err := WriteTinyQwen3(out, tok, cfg, ModelOptions{Pooling: tc.pooling}); err != nil {
			t.Fatalf("pooling %q: %v", tc.pooling, err)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		meta, dims, _ := readGGUFHeader(t, data)
		got := map[string]any{}
		for _, k := range poolingKeys {
			if v, ok := meta[k]; ok {
				got[k] = v
			}
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("pooling %q: pooling metadata (-want +got):\n%s", tc.pooling, d)
		}
		head, hasHead := dims["cls.output.weight"]
		if tc.pooling == "rank" && !slices.Equal(head, []uint64{width, 2}) || tc.pooling != "rank" && hasHead {
			t.Errorf("pooling %q: cls.output.weight dims %v (present %v)", tc.pooling, head, hasHead)
		}
	}
	err := WriteTinyQwen3(filepath.Join(dir, "bad.gguf"), tok, cfg, ModelOptions{Pooling: "cls"})
	if err == nil || !strings.Contains(err.Error(), `pooling "cls"`) || !strings.Contains(err.Error(), "rank") {
		t.Errorf("an unknown pooling: err %v", err)
	}
	if _, err := TinyModel(dir, ModelOptions{Pooling: "max"}); err == nil || !strings.Contains(err.Error(), `pooling "max"`) {
		t.Errorf("TinyModel with an unknown pooling: err %v", err)
	}
}

// TestClassifierHeadIsTheYesAndNoRows: the reranker's head is the tied output layer's rows for "yes"
// then "no", so its score (the first softmax output) is the model's own yes-probability.
func TestClassifierHeadIsTheYesAndNoRows(t *testing.T) {
	tokens := []string{"a", "no", "yes", "b"}
	ws := weights(tokens, ModelOptions{})
	head, err := classifierHead(tokens, ws)
	if err != nil {
		t.Fatal(err)
	}
	embed := ws[slices.IndexFunc(ws, func(t tensor) bool { return t.name == "token_embd.weight" })]
	want := slices.Concat(embed.data[2*width:3*width], embed.data[1*width:2*width])
	if head.name != "cls.output.weight" || !slices.Equal(head.dims, []uint64{width, 2}) || !slices.Equal(head.data, want) {
		t.Errorf("head %s %v: not the rows of yes then no", head.name, head.dims)
	}
	if _, err := classifierHead([]string{"a", "yes"}, ws); err == nil || !strings.Contains(err.Error(), `"no"`) {
		t.Errorf("a vocabulary without \"no\": err %v", err)
	}
}
