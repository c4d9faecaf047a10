package workload

import (
	"os"
	"strings"

	"github.com/plload/plload/tokenizer"
)

// DefaultTokenizerName is the tokenizer used when target.tokenizer is not set: the embedded o200k_base.
// ("builtin", personaload's word for it, is read as the same.)
const DefaultTokenizerName = "o200k_base"

// TokenizerAccepted says what target.tokenizer (and --tokenizer) takes.
const TokenizerAccepted = "o200k_base (the default), cl100k_base, a path to a Hugging Face tokenizer.json or to a directory holding one, or a Hugging Face repo id org/name[@revision]"

// Tokenizer is the tokenizer every length of the scenario is counted in (target.tokenizer), loaded
// when the scenario was checked; o200k_base for a scenario whose tokenizer could not be loaded (it
// has an error then, and never runs).
func (s *Scenario) Tokenizer() tokenizer.Tokenizer {
	if s.tok != nil {
		return s.tok
	}
	tok, _ := tokenizer.Load(DefaultTokenizerName)
	return tok
}

// tokenizerSpec is target.tokenizer as tokenizer.Load takes it: a path relative to the scenario
// file when one exists there, "builtin" (personaload's word) as o200k_base.
func (s *Scenario) tokenizerSpec() string {
	spec := strings.TrimSpace(s.Target.Tokenizer)
	switch spec {
	case "", "builtin":
		return DefaultTokenizerName
	}
	if p := s.resolvePath(spec); p != spec {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return spec
}

// loadTokenizer loads target.tokenizer, or reports why it cannot be used: never a silent o200k_base.
func (c *checker) loadTokenizer() {
	tok, err := tokenizer.Load(c.s.tokenizerSpec())
	if err != nil {
		c.errorf("target.tokenizer", "%v", err) // it says what is accepted, or the fix
		return
	}
	c.s.tok = tok
}

// newTextGen is a text generator for the scenario's language and tokenizer.
func (s *Scenario) newTextGen() (*TextGen, error) {
	return NewTextGen(s.Session.Language, s.Tokenizer())
}
