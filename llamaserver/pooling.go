package llamaserver

import (
	"fmt"
	"slices"
)

// Pooling turns the tiny chat model into an embedding model or a reranker, the way llama.cpp's
// converter marks Qwen3-Embedding and Qwen3-Reranker: a pooling type in the metadata, and for the
// reranker a two-row classifier head with a "rerank" prompt template. The chat model carries none of
// it, so its file stays what it always was.

// The pooling types ModelOptions.Pooling accepts, and llama.cpp's numbers for them
// (enum llama_pooling_type).
var poolingTypes = map[string]uint32{"mean": 1, "last": 3, "rank": 4}

// poolingNames are the values ModelOptions.Pooling accepts besides "" (a chat model), for errors.
var poolingNames = []string{"mean", "last", "rank"}

// rerankLabels are the classifier's outputs. llama.cpp soft-maxes a qwen3 reranker's head and serves
// the first output as the score, so the head needs two rows: with one, every score would be 1.
var rerankLabels = []string{"yes", "no"}

// RerankTemplate is the prompt llama-server builds for each document of a rerank request, the one
// llama.cpp's converter writes for Qwen3-Reranker; the server fills in {query} and {document}. A
// request's prompt tokens are the sum of this, filled, over its documents.
const RerankTemplate = "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n" +
	"<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n<Query>: {query}\n<Document>: {document}<|im_end|>\n" +
	"<|im_start|>assistant\n<think>\n\n</think>\n\n"

// checkPooling says what is wrong with a ModelOptions.Pooling value.
func checkPooling(p string) error {
	if _, ok := poolingTypes[p]; p != "" && !ok {
		return fmt.Errorf("model options: pooling %q: accepted are \"\" (a chat model), %q", p, poolingNames)
	}
	return nil
}

// poolingMeta is the metadata a pooling model adds to the chat model's.
func poolingMeta(p string) []kv {
	if p == "" {
		return nil
	}
	meta := []kv{{"qwen3.pooling_type", poolingTypes[p]}}
	if p == "rank" {
		meta = append(meta,
			kv{"qwen3.classifier.output_labels", rerankLabels},
			kv{"tokenizer.chat_template.rerank", RerankTemplate},
			kv{"tokenizer.chat_templates", []string{"rerank"}})
	}
	return meta
}

// classifierHead is the reranker's cls.output.weight: the rows of the (tied) output layer for the
// tokens "yes" and "no", as the converter takes them from Qwen3-Reranker's LM head.
func classifierHead(tokens []string, tensors []tensor) (tensor, error) {
	at := slices.IndexFunc(tensors, func(t tensor) bool { return t.name == "token_embd.weight" })
	if at < 0 {
		return tensor{}, fmt.Errorf("no token_embd.weight to take the reranker's head from")
	}
	embed := tensors[at]
	head := tensor{name: "cls.output.weight", dims: []uint64{width, uint64(len(rerankLabels))}}
	for _, label := range rerankLabels {
		id := slices.Index(tokens, label)
		if id < 0 {
			return tensor{}, fmt.Errorf("the vocabulary has no token %q for the reranker's head", label)
		}
		head.data = append(head.data, embed.data[id*width:(id+1)*width]...)
	}
	return head, nil
}
