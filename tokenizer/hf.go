package tokenizer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"

	"github.com/dlclark/regexp2/v2"
	"golang.org/x/text/unicode/norm"
)

// hfTokenizer encodes as Hugging Face tokenizers' TokenizerImpl::encode(text, add_special_tokens=false).
type hfTokenizer struct {
	name, sha  string
	normalizer normalizer // nil: none
	pre        []preTokenizer
	model      *bpeModel
	rawAdded   *addedMatcher // added tokens with normalized=false, matched in the raw text
	normAdded  *addedMatcher // normalized=true, matched in the normalized text
}

func (t *hfTokenizer) Name() string   { return t.name }
func (t *hfTokenizer) SHA256() string { return t.sha }

func (t *hfTokenizer) Count(text string) int {
	bp := countBufPool.Get().(*[]int)
	ids := t.encode(text, (*bp)[:0])
	n := len(ids)
	*bp = ids[:0]
	countBufPool.Put(bp)
	return n
}

var countBufPool = sync.Pool{New: func() any { b := make([]int, 0, 1024); return &b }}

var preStatePool = sync.Pool{New: func() any { return &hfScratch{} }}

type hfScratch struct {
	st   preState
	a, b []span
}

func (t *hfTokenizer) Encode(text string) []int {
	return t.encode(text, make([]int, 0, len(text)/4+1))
}

func (t *hfTokenizer) encode(text string, out []int) []int {
	sc := preStatePool.Get().(*hfScratch)
	t.rawAdded.split(span{s: text, first: true}, func(sp span, id int) {
		if id >= 0 {
			out = append(out, id)
			return
		}
		if t.normalizer != nil {
			sp.s = t.normalizer.normalize(sp.s)
		}
		t.normAdded.split(sp, func(sp span, id int) {
			if id >= 0 {
				out = append(out, id)
				return
			}
			out = t.encodeText(sp, out, sc)
		})
	})
	preStatePool.Put(sc)
	return out
}

// encodeText pre-tokenizes one normalized piece and runs the model on each of its pieces.
func (t *hfTokenizer) encodeText(sp span, out []int, sc *hfScratch) []int {
	pieces := append(sc.a[:0], sp)
	for _, p := range t.pre {
		next := p.preTokenize(pieces, sc.b[:0], &sc.st)
		sc.a, sc.b = next, pieces
		pieces = next
	}
	for _, p := range pieces {
		out = t.model.tokenize(p.s, out)
	}
	for i := range pieces {
		pieces[i] = span{}
	}
	sc.a = pieces[:0]
	return out
}

// ---- loading ----

type typed struct {
	Type string `json:"type"`
}

// hfFile is what encoding reads of a tokenizer.json. decoder and post_processor play no part in
// encode(text, add_special_tokens=False); truncation and padding are ignored as transformers (and
// so the servers) turn them off unless a call asks for them.
type hfFile struct {
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        json.RawMessage `json:"model"`
	AddedTokens  []addedToken    `json:"added_tokens"`
}

type hfModel struct {
	Type                    string          `json:"type"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
}

// loadFile reads and compiles a tokenizer.json.
func loadFile(path, name string) (Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := parseHF(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	t.name = name
	return t, nil
}

func parseHF(data []byte) (t *hfTokenizer, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("invalid tokenizer.json: %v", r)
		}
	}()
	var f hfFile
	fields := map[string][]byte{}
	if err := objectFields(data, func(k string, v []byte) error { fields[k] = v; return nil }); err != nil {
		return nil, fmt.Errorf("not a valid tokenizer.json: %w", err)
	}
	f.Normalizer, f.PreTokenizer, f.Model = fields["normalizer"], fields["pre_tokenizer"], fields["model"]
	if v := fields["added_tokens"]; !isNull(v) {
		if err := json.Unmarshal(v, &f.AddedTokens); err != nil {
			return nil, fmt.Errorf("added_tokens: %w", err)
		}
	}
	sum := sha256.Sum256(data)
	t = &hfTokenizer{sha: hex.EncodeToString(sum[:])}
	if t.normalizer, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	byteLevelLast := false
	if t.pre, byteLevelLast, err = parsePreTokenizer(f.PreTokenizer, true); err != nil {
		return nil, err
	}
	if t.model, err = parseModel(f.Model); err != nil {
		return nil, err
	}
	t.model.byteLevel = byteLevelLast
	t.model.init()
	if err := t.buildAdded(f.AddedTokens); err != nil {
		return nil, err
	}
	return t, nil
}

func isNull(raw json.RawMessage) bool {
	r := bytes.TrimSpace(raw)
	return len(r) == 0 || string(r) == "null"
}

const (
	supportedNormalizers   = "NFC, NFKC, NFD, NFKD, Prepend, Replace, Strip, Sequence"
	supportedPreTokenizers = "Split, ByteLevel, Metaspace, Digits, Sequence"
)

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var ty typed
	if err := json.Unmarshal(raw, &ty); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch ty.Type {
	case "NFC":
		return unicodeNorm{norm.NFC}, nil
	case "NFKC":
		return unicodeNorm{norm.NFKC}, nil
	case "NFD":
		return unicodeNorm{norm.NFD}, nil
	case "NFKD":
		return unicodeNorm{norm.NFKD}, nil
	case "Prepend":
		var v struct {
			Prepend string `json:"prepend"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("normalizer Prepend: %w", err)
		}
		return prependNorm(v.Prepend), nil
	case "Strip":
		var v struct {
			Left  bool `json:"strip_left"`
			Right bool `json:"strip_right"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("normalizer Strip: %w", err)
		}
		return stripNorm{v.Left, v.Right}, nil
	case "Replace":
		var v struct {
			Pattern json.RawMessage `json:"pattern"`
			Content string          `json:"content"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("normalizer Replace: %w", err)
		}
		p, err := parsePattern(v.Pattern)
		if err != nil {
			return nil, fmt.Errorf("normalizer Replace: %w", err)
		}
		if sp, ok := p.(stringPattern); ok && sp == "" {
			return nil, fmt.Errorf("normalizer Replace with an empty pattern is not supported")
		}
		return replaceNorm{p, v.Content}, nil
	case "Sequence":
		var v struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("normalizer Sequence: %w", err)
		}
		var seq normSeq
		for _, r := range v.Normalizers {
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, err
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		if len(seq) == 0 {
			return nil, nil
		}
		return seq, nil
	}
	return nil, fmt.Errorf("normalizer type %q is not supported (supported: %s)", ty.Type, supportedNormalizers)
}

// parsePattern reads a Split/Replace pattern: {"String": "..."} or {"Regex": "..."}.
func parsePattern(raw json.RawMessage) (pattern, error) {
	var v struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("pattern: %w", err)
	}
	switch {
	case v.String != nil:
		return stringPattern(*v.String), nil
	case v.Regex != nil:
		if k, ok := knownScanners[*v.Regex]; ok {
			return scanPattern{k}, nil
		}
		re, err := compileRegex(*v.Regex)
		if err != nil {
			return nil, fmt.Errorf("regex %q: %w", *v.Regex, err)
		}
		return regexPattern{re}, nil
	}
	return nil, fmt.Errorf("pattern %s: neither String nor Regex", string(raw))
}

var regexCache sync.Map // pattern → *regexp2.Regexp

func compileRegex(expr string) (*regexp2.Regexp, error) {
	if v, ok := regexCache.Load(expr); ok {
		return v.(*regexp2.Regexp), nil
	}
	// "(?:…)" keeps regexp2 from using an engine that tiktoken-go generated for the same source:
	// those differ from Oniguruma (and regexp2's own interpreter) on \s*[\r\n]+ and on DEL.
	re, err := regexp2.Compile("(?:"+expr+")", regexp2.None)
	if err != nil {
		return nil, err
	}
	regexCache.Store(expr, re)
	return re, nil
}

// gpt2Regex is ByteLevel's use_regex pattern.
const gpt2Regex = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

func parseBehavior(s string) (behavior, error) {
	switch s {
	case "Removed":
		return removed, nil
	case "Isolated":
		return isolated, nil
	case "MergedWithPrevious":
		return mergedWithPrevious, nil
	case "MergedWithNext":
		return mergedWithNext, nil
	case "Contiguous":
		return contiguous, nil
	}
	return 0, fmt.Errorf("split behavior %q is not supported", s)
}

// parsePreTokenizer returns the steps, and whether the last step is ByteLevel (whose byte mapping is
// then left to the model). last says the pre-tokenizer is the last one of the whole chain.
func parsePreTokenizer(raw json.RawMessage, last bool) ([]preTokenizer, bool, error) {
	if isNull(raw) {
		return nil, false, nil
	}
	var ty typed
	if err := json.Unmarshal(raw, &ty); err != nil {
		return nil, false, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch ty.Type {
	case "Split":
		var v struct {
			Pattern  json.RawMessage `json:"pattern"`
			Behavior string          `json:"behavior"`
			Invert   bool            `json:"invert"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		p, err := parsePattern(v.Pattern)
		if err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		b, err := parseBehavior(v.Behavior)
		if err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		if v.Invert {
			p = invertPattern{p}
		}
		return []preTokenizer{splitPre{p, b}}, false, nil
	case "ByteLevel":
		v := struct {
			AddPrefixSpace *bool `json:"add_prefix_space"`
			UseRegex       *bool `json:"use_regex"`
		}{}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer ByteLevel: %w", err)
		}
		p := byteLevelPre{addPrefixSpace: v.AddPrefixSpace == nil || *v.AddPrefixSpace, mapBytes: !last}
		if v.UseRegex == nil || *v.UseRegex {
			p.re = scanPattern{scanGPT2}
		}
		return []preTokenizer{p}, last, nil
	case "Metaspace":
		var v struct {
			Replacement    string  `json:"replacement"`
			PrependScheme  *string `json:"prepend_scheme"`
			AddPrefixSpace *bool   `json:"add_prefix_space"`
			Split          *bool   `json:"split"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Metaspace: %w", err)
		}
		if len([]rune(v.Replacement)) != 1 {
			return nil, false, fmt.Errorf("pre_tokenizer Metaspace: replacement %q is not one character", v.Replacement)
		}
		p := metaspacePre{rep: v.Replacement, split: v.Split == nil || *v.Split}
		switch {
		case v.PrependScheme != nil:
			switch *v.PrependScheme {
			case "always":
				p.scheme = 0
			case "first":
				p.scheme = 1
			case "never":
				p.scheme = 2
			default:
				return nil, false, fmt.Errorf("pre_tokenizer Metaspace: prepend_scheme %q is not supported", *v.PrependScheme)
			}
		case v.AddPrefixSpace != nil && !*v.AddPrefixSpace:
			p.scheme = 2
		}
		return []preTokenizer{p}, false, nil
	case "Digits":
		var v struct {
			Individual bool `json:"individual_digits"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Digits: %w", err)
		}
		return []preTokenizer{digitsPre{v.Individual}}, false, nil
	case "Sequence":
		var v struct {
			PreTokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Sequence: %w", err)
		}
		var steps []preTokenizer
		bl := false
		for i, r := range v.PreTokenizers {
			s, b, err := parsePreTokenizer(r, last && i == len(v.PreTokenizers)-1)
			if err != nil {
				return nil, false, err
			}
			steps = append(steps, s...)
			bl = b
		}
		return steps, bl, nil
	}
	return nil, false, fmt.Errorf("pre_tokenizer type %q is not supported (supported: %s)", ty.Type, supportedPreTokenizers)
}

func parseModel(raw json.RawMessage) (*bpeModel, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("no model: a Hugging Face tokenizer.json has a \"model\" section (its vocabulary and merges); is this file one? accepted: the tokenizer.json of a model repository")
	}
	var v hfModel
	small := []byte{'{'}
	err := objectFields(raw, func(k string, val []byte) error {
		switch k {
		case "vocab":
			v.Vocab = val
		case "merges":
			v.Merges = val
		default:
			if len(small) > 1 {
				small = append(small, ',')
			}
			small = strconv.AppendQuote(small, k)
			small = append(small, ':')
			small = append(small, val...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	small = append(small, '}')
	if err := json.Unmarshal(small, &v); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if v.Type == "" && !isNull(v.Merges) {
		v.Type = "BPE"
	}
	if v.Type != "BPE" {
		return nil, fmt.Errorf("model type %q is not supported (supported: BPE)", v.Type)
	}
	if v.Dropout != nil && *v.Dropout != 0 {
		return nil, fmt.Errorf("model BPE with dropout %v is not supported (dropout must be null)", *v.Dropout)
	}
	m := &bpeModel{unk: -1, fuseUnk: v.FuseUnk, byteFallback: v.ByteFallback, ignoreMerges: v.IgnoreMerges}
	if v.ContinuingSubwordPrefix != nil {
		m.prefix = *v.ContinuingSubwordPrefix
	}
	if v.EndOfWordSuffix != nil {
		m.suffix = *v.EndOfWordSuffix
	}
	if isNull(v.Vocab) {
		return nil, fmt.Errorf("model: no vocab")
	}
	var err2 error
	if m.vocab, err2 = parseVocab(v.Vocab); err2 != nil {
		return nil, fmt.Errorf("model %w", err2)
	}
	if v.UnkToken != nil {
		id, ok := m.vocab[*v.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model unk_token %q is not in the vocabulary", *v.UnkToken)
		}
		m.unk = id
	}
	m.merges = newPairTable(len(v.Merges) / 24)
	if isNull(v.Merges) {
		return m, nil
	}
	if err := m.resolveMerges(v.Merges); err != nil {
		return nil, fmt.Errorf("model merges: %w", err)
	}
	return m, nil
}

// buildAdded resolves added-token ids as HF's AddedVocabulary::add_tokens does and builds the two
// matchers (normalized=false tokens on the raw text, normalized=true on the normalized text).
func (t *hfTokenizer) buildAdded(tokens []addedToken) error {
	t.rawAdded, t.normAdded = newAddedMatcher(), newAddedMatcher()
	seen := map[string]int{}
	maxID := -1
	vocabSize := len(t.model.vocab)
	for _, tk := range tokens {
		if tk.Content == "" {
			continue
		}
		id, ok := seen[tk.Content]
		if !ok {
			if mid, inVocab := t.model.vocab[tk.Content]; inVocab {
				id = int(mid)
			} else {
				if maxID < 0 {
					id = vocabSize
				} else {
					id = max(maxID, vocabSize-1) + 1
				}
			}
			seen[tk.Content] = id
			maxID = max(maxID, id)
		}
		tk.ID = id
		if tk.Normalized {
			key := tk.Content
			if t.normalizer != nil {
				key = t.normalizer.normalize(key)
			}
			t.normAdded.add(key, tk)
		} else {
			t.rawAdded.add(tk.Content, tk)
		}
	}
	return nil
}

// resolveMerges fills m.merges from the merges array: the elements are found in one pass, their
// tokens looked up in the vocabulary in parallel chunks (the slow part: three lookups per merge in a
// map of up to 262k strings), and the pairs inserted in order (a later duplicate wins, as in HF).
func (m *bpeModel) resolveMerges(d []byte) error {
	starts, err := mergeStarts(d)
	if err != nil {
		return err
	}
	n := len(starts)
	keys := make([]uint64, n)
	vals := make([]uint64, n)
	workers := min(runtime.GOMAXPROCS(0), 8, max(1, n/20000))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf, b1, b2 []byte
			for i := lo; i < hi; i++ {
				var pa, pb []byte
				var err error
				pa, pb, b1, b2, err = parseMerge(d, int(starts[i]), i, b1[:0], b2[:0])
				if err != nil {
					errs[w] = err
					return
				}
				a, ok := m.vocab[string(pa)]
				if !ok {
					errs[w] = fmt.Errorf("merge %d: token %q is not in the vocabulary", i+1, pa)
					return
				}
				b, ok := m.vocab[string(pb)]
				if !ok {
					errs[w] = fmt.Errorf("merge %d: token %q is not in the vocabulary", i+1, pb)
					return
				}
				if len(pb) < len(m.prefix) {
					errs[w] = fmt.Errorf("merge %d: token %q is shorter than continuing_subword_prefix", i+1, pb)
					return
				}
				buf = append(append(buf[:0], pa...), pb[len(m.prefix):]...)
				c, ok := m.vocab[string(buf)]
				if !ok {
					errs[w] = fmt.Errorf("merge %d: token %q is not in the vocabulary", i+1, buf)
					return
				}
				keys[i] = uint64(uint32(a))<<32 | uint64(uint32(b))
				vals[i] = uint64(i)<<32 | uint64(uint32(c))
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	m.merges = newPairTable(n)
	for i := range keys {
		m.merges.put(keys[i], vals[i])
	}
	return nil
}
