// Package tokenizer counts and encodes text as a model's own tokenizer does (docs/tokenizers.md): the embedded
// o200k_base and cl100k_base, or a Hugging Face tokenizer.json (a file, a directory holding one, or a
// repo id resolved through the Hugging Face cache and hub by package hfhub). It imports nothing else
// of this module: workload asks it for counts and nothing else knows which tokenizer is in use.
package tokenizer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/plload/plload/tokenizer/hfhub"
)

// Tokenizer encodes text exactly as Hugging Face's tokenizers library does with
// encode(text, add_special_tokens=False): added tokens found in the text are matched as tokens.
// Implementations are safe for concurrent use.
type Tokenizer interface {
	// Name is what the user chose, normalised: "o200k_base", "cl100k_base", a file path, or a
	// repo id with the commit it resolved to ("Qwen/Qwen3-8B@<commit>").
	Name() string
	// SHA256 is the hex sha256 of the tokenizer's definition (the tokenizer.json bytes; for the
	// embedded encodings, of their rank tables), so a report names exactly what counted.
	SHA256() string
	// Encode returns the token ids of text.
	Encode(text string) []int
	// Count returns len(Encode(text)), without keeping the ids where that is cheaper.
	Count(text string) int
}

// Load returns the tokenizer that spec names (docs/tokenizers.md):
//   - "", "o200k_base" or "builtin": the embedded o200k_base; "cl100k_base": the embedded cl100k_base;
//   - a path to a tokenizer.json, or to a directory holding one;
//   - a Hugging Face repo id "org/name" or "org/name@revision" (when no such path exists), resolved by
//     package hfhub; its Name is then "org/name@commit".
//
// A tokenizer.json that uses a component this package does not implement exactly is refused with an
// error naming it. Loaded tokenizers are cached per spec.
func Load(spec string) (Tokenizer, error) {
	if v, ok := loaded.Load(spec); ok {
		return v.(Tokenizer), nil
	}
	t, err := load(spec)
	if err != nil {
		return nil, err
	}
	v, _ := loaded.LoadOrStore(spec, t)
	return v.(Tokenizer), nil
}

var loaded sync.Map // spec → Tokenizer

func load(spec string) (Tokenizer, error) {
	switch spec {
	case "", "o200k_base", "builtin":
		return o200kBase()
	case "cl100k_base":
		return cl100kBase()
	}
	if fi, err := os.Stat(spec); err == nil {
		path := spec
		if fi.IsDir() {
			path = filepath.Join(spec, "tokenizer.json")
			if _, err := os.Stat(path); err != nil {
				return nil, fmt.Errorf("tokenizer: directory %s holds no tokenizer.json", spec)
			}
		}
		return loadFile(path, spec)
	}
	if strings.HasSuffix(spec, ".json") || strings.HasPrefix(spec, ".") || strings.HasPrefix(spec, "/") || strings.HasPrefix(spec, "~") {
		return nil, fmt.Errorf("%s: no such file or directory; accepted: a path to a tokenizer.json or a directory holding one, a built-in encoding (o200k_base, cl100k_base), or a Hugging Face repo id (org/name or org/name@revision)", spec)
	}
	if repoIDRe.MatchString(spec) {
		path, commit, err := hfhub.Resolve(context.Background(), spec)
		if err != nil {
			return nil, err // it names the repo, the URL and the fix
		}
		repo, _, _ := strings.Cut(spec, "@")
		return loadFile(path, repo+"@"+commit)
	}
	hint := ""
	for _, b := range []string{"o200k_base", "cl100k_base"} {
		if strings.HasPrefix(b, strings.ToLower(spec)) || strings.HasPrefix(strings.ToLower(spec), strings.TrimSuffix(b, "_base")) {
			hint = fmt.Sprintf(" (did you mean %s?)", b)
		}
	}
	return nil, fmt.Errorf("%q is neither a built-in encoding (o200k_base, cl100k_base), an existing tokenizer.json or directory holding one, nor a Hugging Face repo id (org/name or org/name@revision)%s", spec, hint)
}

// repoIDRe is a Hugging Face repo id, with an optional revision.
var repoIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*(@[^\s@]+)?$`)
