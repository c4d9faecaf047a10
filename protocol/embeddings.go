package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/plload/plload/sse"
)

// embeddings is OpenAI's embeddings API (POST /embeddings), which vLLM, llama.cpp's server
// (--embedding) and most gateways serve: the inputs go as a list of strings, and the answer's data
// has a vector per input, data[i].index naming the input it is for.
type embeddings struct{}

func (embeddings) Name() string { return "embeddings" }

func (embeddings) Path() string { return "/embeddings" }

func (embeddings) SetHeaders(h http.Header, apiKey string) { setBearer(h, apiKey) }

// embeddingsOwn are the body's keys Body sets from the query.
var embeddingsOwn = []string{"model", "input"}

// Body is {"model", "input": [...], "encoding_format": "float"}. The input is a list even for one
// input, so that every answer is read the same way. encoding_format is said rather than left to
// the server's default, so the answer's size does not depend on the server; extra may set it
// (base64, as OpenAI's SDKs ask for: a smaller answer).
func (embeddings) Body(model string, q RetrievalQuery, extra map[string]any) ([]byte, error) {
	buf := append(make([]byte, 0, 64+len(model)+stringsSize(q.Inputs)), `{"model":`...)
	buf = appendString(buf, model)
	buf = append(buf, `,"input":`...)
	buf = appendStrings(buf, q.Inputs)
	if _, set := extra["encoding_format"]; !set {
		buf = append(buf, `,"encoding_format":"float"`...)
	}
	buf, err := appendExtra(buf, extra, embeddingsOwn)
	if err != nil {
		return nil, err
	}
	return append(buf, '}'), nil
}

// embeddingsJSON is the part of the answer ParseAnswer reads. A vector is kept raw: only its
// length is wanted, and a long list of floats is not worth decoding.
type embeddingsJSON struct {
	retrievalEnvelope
	Data []struct {
		Index     *float64        `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
}

// ParseAnswer checks that every input has exactly one vector: as many vectors as inputs, indexes
// 0..n-1 each once (an item without an index stands for its place in the list, as the reference
// never omits it but a few gateways do), and every vector the same length, not zero.
func (embeddings) ParseAnswer(body []byte, q RetrievalQuery) (RetrievalAnswer, error) {
	var out RetrievalAnswer
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return out, errors.New("empty response body")
	}
	var a embeddingsJSON
	if err := json.Unmarshal(trimmed, &a); err != nil {
		return out, sse.NewMalformed("response is not the JSON of an embeddings answer", trimmed, err)
	}
	out.Usage = a.Usage.usage()
	if out.Err = a.serverError(trimmed, a.Data != nil); out.Err != nil {
		return out, nil
	}
	if a.Data == nil {
		return out, sse.NewMalformed(`response is not an embeddings answer (expected "data", a list of vectors)`, trimmed, nil)
	}
	n := len(q.Inputs)
	out.Items = len(a.Data)
	if out.Items != n {
		return out, fmt.Errorf("the answer has %s for %s", plural(out.Items, "vector"), plural(n, "input"))
	}
	seen := make([]bool, n)
	first := -1 // the index of the first vector, whose length the others must have
	byIndex := make([]json.RawMessage, n)
	for i, d := range a.Data {
		idx := i
		if d.Index != nil {
			var err error
			if idx, err = itemIndex(*d.Index, n, "vector", "input"); err != nil {
				return out, err
			}
		}
		if seen[idx] {
			return out, fmt.Errorf("vector index %d comes twice: each of the %s has one vector", idx, plural(n, "input"))
		}
		seen[idx], byIndex[idx] = true, d.Embedding
		dims, err := vectorLength(d.Embedding)
		if err != nil {
			return out, fmt.Errorf("vector %d: %w", idx, err)
		}
		switch {
		case dims == 0:
			return out, fmt.Errorf("vector %d is empty", idx)
		case emptyVector(d.Embedding, dims):
			// No embedding model gives a zero vector (they are normalised and dense); a server that
			// computed none does: llama-server started with --reranking answers /v1/embeddings with
			// zeros, or with its rank scores in the first numbers and zeros after.
			some := ""
			if n := nonZeros(d.Embedding, dims); n > 0 {
				some = fmt.Sprintf(" but %d of its %d numbers", n, dims)
			}
			return out, fmt.Errorf("vector %d is all zeros%s: the server computed no embedding (is it serving an embedding model? a llama-server started with --reranking answers zeros, or its rank scores padded with zeros)", idx, some)
		case hasSubnormal(d.Embedding):
			// A float32 below the normal range is no model's output (embeddings are of order 1e-2)
			// but memory the server never wrote: llama-server under --reranking copies past its
			// rank scores into leftovers, which read as garbage with subnormals among it.
			return out, fmt.Errorf("vector %d holds subnormal numbers (below %g), which no model computes: the server returned memory it never wrote (is it serving an embedding model? a llama-server started with --reranking does so)", idx, smallestNormalFloat32)
		case first < 0:
			first, out.Dimensions = idx, dims
		case dims != out.Dimensions:
			return out, fmt.Errorf("vector %d has %d dimensions, vector %d has %d", idx, dims, first, out.Dimensions)
		}
	}
	if !q.Agree {
		return out, nil
	}
	return out, sameTextsAgree(q.Inputs, byIndex)
}

// sameTextsAgree checks the first two inputs of the same text (RetrievalQuery.Agree) for
// vectors that point the same way (cosine ≥ 0.99): a model computes the same embedding of the same
// text, give or take rounding, and a server that computed none — llama-server under --reranking,
// whose leftovers can look like numbers of real size — hands out two unrelated vectors.
func sameTextsAgree(inputs []string, vectors []json.RawMessage) error {
	firstOf := make(map[string]int, len(inputs))
	for j, text := range inputs {
		i, again := firstOf[text]
		if !again {
			firstOf[text] = j
			continue
		}
		a, b := decodeVector(vectors[i]), decodeVector(vectors[j])
		if len(a) == 0 || len(a) != len(b) {
			return nil // lengths were checked; a vector that does not decode is not this check's
		}
		var dot, na, nb float64
		for k := range a {
			dot, na, nb = dot+a[k]*b[k], na+a[k]*a[k], nb+b[k]*b[k]
		}
		if cos := dot / math.Sqrt(na*nb); !(cos >= 0.99) {
			return fmt.Errorf("vectors %d and %d of the same text differ (cosine %.2f): the server did not compute them from the text (is it serving an embedding model? a llama-server started with --reranking answers leftovers of memory)", i, j, cos)
		}
		return nil
	}
	return nil
}

// decodeVector is a vector's numbers (nil when it does not decode).
func decodeVector(raw json.RawMessage) []float64 {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		json.Unmarshal(raw, &s)
		b, _ := base64.StdEncoding.DecodeString(s)
		out := make([]float64, len(b)/4)
		for i := range out {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
		return out
	}
	var out []float64
	if json.Unmarshal(raw, &out) != nil {
		return nil
	}
	return out
}

// vectorLength is how many numbers an embedding has: a list of numbers (encoding_format float), or
// a base64 string of little-endian float32s (base64), 4 bytes each. The list is counted, not
// decoded; the body has been checked to be JSON, so a list holds only numbers, commas and spaces
// once every element is found to begin as a number.
func vectorLength(raw json.RawMessage) (int, error) {
	if !present(raw) {
		return 0, errors.New(`it has no "embedding"`)
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return 0, fmt.Errorf("its embedding is a string that is not base64: %w", err)
		}
		if len(b)%4 != 0 {
			return 0, fmt.Errorf("its base64 embedding has %d bytes, not whole float32s (4 bytes each)", len(b))
		}
		return len(b) / 4, nil
	case '[':
		n, elem := 0, true // elem: the next byte that is not a space begins an element
		for _, c := range raw[1:] {
			switch {
			case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			case c == ',':
				elem = true
			case !elem:
			case c == '-' || '0' <= c && c <= '9':
				n, elem = n+1, false
			case c == ']': // the list is empty
				return n, nil
			case c == '[':
				// A list of lists: llama.cpp's server sends a vector per token of the input when its
				// pooling is none.
				return 0, errors.New("per-token vectors: the server's pooling is none; an embeddings answer needs one pooled vector per input (llama-server --pooling mean, cls or last)")
			default:
				return 0, fmt.Errorf("element %d of its embedding is %s, not a number", n, jsonKind(c))
			}
		}
		return n, nil
	}
	return 0, fmt.Errorf("its embedding is %s, not a list of numbers or a base64 string", jsonKind(raw[0]))
}

// jsonKind names the JSON value that begins with c.
func jsonKind(c byte) string {
	switch c {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '{':
		return "an object"
	}
	return "a number"
}

// stringsSize is about how many bytes ss take as a JSON list, so a body's buffer is allocated once.
func stringsSize(ss []string) int {
	n := 0
	for _, s := range ss {
		n += len(s) + 3
	}
	return n
}

// emptyVector says whether a vector that vectorLength accepted (dims numbers) holds no embedding:
// all zeros, or all but a few — at most 8, and fewer than 1 in 8 — where a dense embedding has
// hardly a zero. Numbers too small for a float32's normal range count as zeros: a server that
// pads a short output hands out uninitialised memory as such. It stops at the first number over
// the bound, so a real vector costs a few numbers' parse.
func emptyVector(raw json.RawMessage, dims int) bool {
	return nonZerosUpTo(raw, sparseBound(dims)+1) <= sparseBound(dims)
}

// sparseBound is how many numbers of real size a vector of dims may have and still hold no
// embedding.
func sparseBound(dims int) int { return min(8, dims/8) }

// nonZeros counts a vector's numbers of real size (its dims numbers, parsed whole).
func nonZeros(raw json.RawMessage, dims int) int { return nonZerosUpTo(raw, dims) }

// nonZerosUpTo counts a vector's numbers of real size (a float32's normal range), stopping at limit.
func nonZerosUpTo(raw json.RawMessage, limit int) int {
	n := 0
	if raw[0] == '"' {
		var s string
		json.Unmarshal(raw, &s)
		b, _ := base64.StdEncoding.DecodeString(s)
		for i := 0; i+4 <= len(b) && n < limit; i += 4 {
			if binary.LittleEndian.Uint32(b[i:])&0x7f800000 != 0 { // a zero exponent: ±0 or subnormal
				n++
			}
		}
		return n
	}
	rest := bytes.Trim(raw, "[] \t\r\n")
	for len(rest) > 0 && n < limit {
		field := rest
		if i := bytes.IndexByte(rest, ','); i >= 0 {
			field, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if v, err := strconv.ParseFloat(string(bytes.TrimSpace(field)), 64); err != nil || math.Abs(v) >= smallestNormalFloat32 {
			n++
		}
	}
	return n
}

// smallestNormalFloat32 is the least float32 of full precision: below it, only subnormals and 0.
const smallestNormalFloat32 = 0x1p-126

// hasSubnormal says whether a vector holds a number other than 0 below a float32's normal range.
// In JSON text only a number written with an exponent of -38 or below can be one, so only those
// are parsed: a real vector costs a scan of its bytes.
func hasSubnormal(raw json.RawMessage) bool {
	if raw[0] == '"' {
		var s string
		json.Unmarshal(raw, &s)
		b, _ := base64.StdEncoding.DecodeString(s)
		for i := 0; i+4 <= len(b); i += 4 {
			if bits := binary.LittleEndian.Uint32(b[i:]); bits&0x7f800000 == 0 && bits&0x007fffff != 0 {
				return true
			}
		}
		return false
	}
	for rest := raw; ; {
		i := bytes.Index(rest, []byte("e-"))
		if i < 0 {
			i = bytes.Index(rest, []byte("E-"))
		}
		if i < 0 {
			return false
		}
		digits := rest[i+2:]
		end := 0
		for end < len(digits) && digits[end] >= '0' && digits[end] <= '9' {
			end++
		}
		if exp, err := strconv.Atoi(string(digits[:end])); err == nil && exp >= 38 {
			start := bytes.LastIndexAny(rest[:i], "[, \t\r\n") + 1
			if v, err := strconv.ParseFloat(string(rest[start:i+2+end]), 64); err == nil && v != 0 && math.Abs(v) < smallestNormalFloat32 {
				return true
			}
		}
		rest = digits[end:]
	}
}
