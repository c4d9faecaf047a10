package llamaserver

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
)

// A tiny model for a real llama.cpp server: Qwen3's architecture at width 64 with 2 layers and random
// f32 weights, carrying Qwen3's real vocabulary, merges and chat template. Its text is gibberish, but
// everything plload measures is llama.cpp's own: streaming, usage, the prefix cache, the chat
// template's tokens, tool-call parsing and errors. It is written in a fraction of a second and weighs
// about 40 MB, so no model is ever downloaded.

// ModelOptions shape the tiny model.
type ModelOptions struct {
	// Seed picks the random weights (0 is a fixed default).
	Seed uint64
	// Pooling makes an embedding model ("mean" or "last": llama-server's /v1/embeddings, with
	// --embeddings) or a reranker ("rank": /v1/rerank, with --reranking) of the same weights; "" is the
	// chat model.
	Pooling string
}

// Architecture of the tiny model.
const (
	width     = 64
	layers    = 2
	heads     = 4
	kvHeads   = 2
	headDim   = width / heads
	ffnWidth  = 128
	maxContxt = 40960
)

// hfTokenizer is the part of a Hugging Face tokenizer.json the model needs.
type hfTokenizer struct {
	Model struct {
		Vocab  map[string]int    `json:"vocab"`
		Merges []json.RawMessage `json:"merges"` // "a b" or ["a", "b"]
	} `json:"model"`
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
}

// Qwen3Files are the paths of Qwen3's tokenizer.json and tokenizer_config.json (gzip-compressed) that
// the tokenizer package's tests keep; ok is false when the source tree is not at hand.
func Qwen3Files() (tokenizerJSON, configJSON string, ok bool) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", "", false
	}
	dir := filepath.Join(filepath.Dir(self), "..", "tokenizer", "testdata", "qwen3")
	tokenizerJSON, configJSON = filepath.Join(dir, "tokenizer.json.gz"), filepath.Join(dir, "tokenizer_config.json.gz")
	for _, p := range []string{tokenizerJSON, configJSON} {
		if _, err := os.Stat(p); err != nil {
			return "", "", false
		}
	}
	return tokenizerJSON, configJSON, true
}

// readMaybeGzip reads a file, uncompressing it when its name ends in .gz.
func readMaybeGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if filepath.Ext(path) == ".gz" {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = gz
	}
	return io.ReadAll(r)
}

// WriteTinyQwen3 writes the tiny model to out, from a tokenizer.json and a tokenizer_config.json
// (either may be gzip-compressed, by the .gz suffix).
func WriteTinyQwen3(out, tokenizerJSON, configJSON string, opt ModelOptions) error {
	if err := checkPooling(opt.Pooling); err != nil {
		return err
	}
	meta, err := tokenizerMeta(tokenizerJSON, configJSON)
	if err != nil {
		return err
	}
	tokens := meta[2].value.([]string)
	tensors := weights(tokens, opt)
	if opt.Pooling == "rank" {
		head, err := classifierHead(tokens, tensors)
		if err != nil {
			return fmt.Errorf("%s: %w", tokenizerJSON, err)
		}
		tensors = append(tensors, head)
	}
	arch := []kv{
		{"general.architecture", "qwen3"},
		{"general.name", "plload tiny qwen3"},
		{"qwen3.context_length", uint32(maxContxt)},
		{"qwen3.embedding_length", uint32(width)},
		{"qwen3.block_count", uint32(layers)},
		{"qwen3.feed_forward_length", uint32(ffnWidth)},
		{"qwen3.attention.head_count", uint32(heads)},
		{"qwen3.attention.head_count_kv", uint32(kvHeads)},
		{"qwen3.attention.key_length", uint32(headDim)},
		{"qwen3.attention.value_length", uint32(headDim)},
		{"qwen3.rope.freq_base", float32(1e6)},
		{"qwen3.attention.layer_norm_rms_epsilon", float32(1e-6)},
	}
	meta = append(meta, poolingMeta(opt.Pooling)...)
	return writeGGUFFile(out, append(arch, meta...), tensors)
}

// llama.cpp's token types.
const (
	tokenNormal      int32 = 1
	tokenControl     int32 = 3
	tokenUserDefined int32 = 4
	tokenUnused      int32 = 5
)

// tokenizerMeta is the tokenizer's metadata: model, pre-tokenizer, tokens (index 2), types, merges,
// special ids and the chat template.
func tokenizerMeta(tokenizerJSON, configJSON string) ([]kv, error) {
	data, err := readMaybeGzip(tokenizerJSON)
	if err != nil {
		return nil, err
	}
	var tok hfTokenizer
	if err := json.Unmarshal(data, &tok); err != nil {
		return nil, fmt.Errorf("%s: %w", tokenizerJSON, err)
	}
	n := 0
	for _, id := range tok.Model.Vocab {
		n = max(n, id+1)
	}
	for _, a := range tok.AddedTokens {
		n = max(n, a.ID+1)
	}
	tokens, types := make([]string, n), make([]int32, n)
	for i := range tokens {
		tokens[i], types[i] = fmt.Sprintf("[PAD%d]", i), tokenUnused
	}
	for s, id := range tok.Model.Vocab {
		tokens[id], types[id] = s, tokenNormal
	}
	ids := map[string]int{}
	for _, a := range tok.AddedTokens {
		tokens[a.ID], types[a.ID] = a.Content, tokenUserDefined
		if a.Special {
			types[a.ID] = tokenControl
		}
		ids[a.Content] = a.ID
	}
	merges := make([]string, 0, len(tok.Model.Merges))
	for _, m := range tok.Model.Merges {
		var s string
		if json.Unmarshal(m, &s) == nil {
			merges = append(merges, s)
			continue
		}
		var pair [2]string
		if err := json.Unmarshal(m, &pair); err != nil {
			return nil, fmt.Errorf("%s: a merge is neither \"a b\" nor [a, b]: %s", tokenizerJSON, m)
		}
		merges = append(merges, pair[0]+" "+pair[1])
	}
	cfgData, err := readMaybeGzip(configJSON)
	if err != nil {
		return nil, err
	}
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
		EOS          string `json:"eos_token"`
		Pad          string `json:"pad_token"`
	}
	if err := json.Unmarshal(cfgData, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", configJSON, err)
	}
	eos, okE := ids[cfg.EOS]
	pad, okP := ids[cfg.Pad]
	if !okE || !okP || cfg.ChatTemplate == "" {
		return nil, fmt.Errorf("%s: needs eos_token and pad_token among the added tokens, and a chat_template", configJSON)
	}
	return []kv{
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", "qwen2"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.merges", merges},
		{"tokenizer.ggml.eos_token_id", uint32(eos)},
		{"tokenizer.ggml.padding_token_id", uint32(pad)},
		{"tokenizer.ggml.bos_token_id", uint32(pad)},
		{"tokenizer.ggml.add_bos_token", false},
		{"tokenizer.chat_template", cfg.ChatTemplate},
	}, nil
}

// weights are the model's tensors: small random values, norms of one.
func weights(tokens []string, opt ModelOptions) []tensor {
	r := rand.New(rand.NewPCG(opt.Seed, 0x706c6c6f6164))
	random := func(name string, dims ...uint64) tensor {
		t := tensor{name: name, dims: dims, data: make([]float32, dims[0]*dims[1])}
		for i := range t.data {
			t.data[i] = float32(r.NormFloat64() * 0.02)
		}
		return t
	}
	ones := func(name string, n uint64) tensor {
		t := tensor{name: name, dims: []uint64{n}, data: make([]float32, n)}
		for i := range t.data {
			t.data[i] = 1
		}
		return t
	}
	vocab := uint64(len(tokens))
	embed := random("token_embd.weight", width, vocab)
	out := []tensor{embed, ones("output_norm.weight", width)}
	for l := range layers {
		p := fmt.Sprintf("blk.%d.", l)
		out = append(out,
			ones(p+"attn_norm.weight", width),
			random(p+"attn_q.weight", width, heads*headDim),
			random(p+"attn_k.weight", width, kvHeads*headDim),
			random(p+"attn_v.weight", width, kvHeads*headDim),
			random(p+"attn_output.weight", heads*headDim, width),
			ones(p+"attn_q_norm.weight", headDim),
			ones(p+"attn_k_norm.weight", headDim),
			ones(p+"ffn_norm.weight", width),
			random(p+"ffn_gate.weight", width, ffnWidth),
			random(p+"ffn_up.weight", width, ffnWidth),
			random(p+"ffn_down.weight", ffnWidth, width),
		)
	}
	return out
}
