package tokenizer

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/plload/plload/jsonstr"
)

// A minimal JSON scanner for the big parts of a tokenizer.json (the model's vocab and merges, tens
// of MB): encoding/json would scan them three times and allocate a string per key. Its strings are
// read by jsonstr. Everything else (normalizer, pre_tokenizer, added_tokens, the model's small
// fields) goes through encoding/json.

var errJSON = errors.New("malformed JSON")

func skipWS(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' || d[i] == '\t') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at d[i] == '"'.
func skipString(d []byte, i int) (int, error) {
	_, end, ok := jsonstr.Raw(d, i)
	if !ok {
		return 0, errJSON
	}
	return end, nil
}

// skipValue returns the index after the JSON value starting at d[i] (after white space).
func skipValue(d []byte, i int) (int, error) {
	i = skipWS(d, i)
	if i >= len(d) {
		return 0, errJSON
	}
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{', '[':
		depth := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				j, err := skipString(d, i)
				if err != nil {
					return 0, err
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errJSON
	default:
		for i < len(d) && d[i] != ',' && d[i] != '}' && d[i] != ']' && d[i] != ' ' && d[i] != '\n' && d[i] != '\r' && d[i] != '\t' {
			i++
		}
		return i, nil
	}
}

// readString decodes the string starting at d[i] == '"', appending its bytes to buf.
func readString(d []byte, i int, buf []byte) ([]byte, int, error) {
	buf, end, ok := jsonstr.AppendString(buf, d, i)
	if !ok {
		return nil, 0, errJSON
	}
	return buf, end, nil
}

// objectFields calls f with each key and raw value of the JSON object d.
func objectFields(d []byte, f func(key string, val []byte) error) error {
	i := skipWS(d, 0)
	if i >= len(d) || d[i] != '{' {
		return fmt.Errorf("%w: not an object", errJSON)
	}
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == '}' {
		return nil
	}
	var kb []byte
	for {
		var err error
		kb, i, err = readString(d, skipWS(d, i), kb[:0])
		if err != nil {
			return err
		}
		i = skipWS(d, i)
		if i >= len(d) || d[i] != ':' {
			return errJSON
		}
		vs := skipWS(d, i+1)
		ve, err := skipValue(d, vs)
		if err != nil {
			return err
		}
		if err := f(string(kb), d[vs:ve]); err != nil {
			return err
		}
		i = skipWS(d, ve)
		if i >= len(d) {
			return errJSON
		}
		if d[i] == '}' {
			return nil
		}
		if d[i] != ',' {
			return errJSON
		}
		i++
	}
}

// parseVocab reads {"token": id, ...} into a map whose keys share one backing string.
func parseVocab(d []byte) (map[string]int32, error) {
	i := skipWS(d, 0)
	if i >= len(d) || d[i] != '{' {
		return nil, fmt.Errorf("vocab is not an object")
	}
	var arena []byte
	type ent struct{ off, end, id int32 }
	ents := make([]ent, 0, len(d)/16)
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == '}' {
		return map[string]int32{}, nil
	}
	for {
		var err error
		off := len(arena)
		arena, i, err = readString(d, skipWS(d, i), arena)
		if err != nil {
			return nil, fmt.Errorf("vocab: %w", err)
		}
		i = skipWS(d, i)
		if i >= len(d) || d[i] != ':' {
			return nil, fmt.Errorf("vocab: %w", errJSON)
		}
		i = skipWS(d, i+1)
		j := i
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
		id, err := strconv.ParseUint(string(d[i:j]), 10, 31)
		if err != nil {
			return nil, fmt.Errorf("vocab: id of %q: %w", arena[off:], err)
		}
		ents = append(ents, ent{int32(off), int32(len(arena)), int32(id)})
		i = skipWS(d, j)
		if i >= len(d) {
			return nil, fmt.Errorf("vocab: %w", errJSON)
		}
		if d[i] == '}' {
			break
		}
		if d[i] != ',' {
			return nil, fmt.Errorf("vocab: %w", errJSON)
		}
		i++
	}
	all := string(arena)
	m := make(map[string]int32, len(ents))
	for _, e := range ents {
		m[all[e.off:e.end]] = e.id
	}
	return m, nil
}

// mergeStarts returns the offset of each element of the merges array.
func mergeStarts(d []byte) ([]int32, error) {
	i := skipWS(d, 0)
	if i >= len(d) || d[i] != '[' {
		return nil, fmt.Errorf("merges is not an array")
	}
	starts := make([]int32, 0, len(d)/16)
	i = skipWS(d, i+1)
	if i < len(d) && d[i] == ']' {
		return starts, nil
	}
	for {
		i = skipWS(d, i)
		starts = append(starts, int32(i))
		e, err := skipValue(d, i)
		if err != nil {
			return nil, fmt.Errorf("merge %d: %w", len(starts), err)
		}
		i = skipWS(d, e)
		if i >= len(d) {
			return nil, errJSON
		}
		if d[i] == ']' {
			return starts, nil
		}
		if d[i] != ',' {
			return nil, fmt.Errorf("merge %d: %w", len(starts), errJSON)
		}
		i++
	}
}

// parseMerge reads the merge at d[i]: an "a b" string or an [a, b] pair. a and b point into buf or
// buf2, which are returned for reuse.
func parseMerge(d []byte, i, n int, buf, buf2 []byte) (a, b, _, _ []byte, err error) {
	if i >= len(d) {
		return nil, nil, buf, buf2, errJSON
	}
	switch d[i] {
	case '"':
		buf, _, err = readString(d, i, buf)
		if err != nil {
			return nil, nil, buf, buf2, err
		}
		sp := -1
		for k, c := range buf {
			if c == ' ' {
				if sp >= 0 {
					sp = -2
					break
				}
				sp = k
			}
		}
		if sp < 0 {
			return nil, nil, buf, buf2, fmt.Errorf("merge %d %q is not two tokens separated by one space", n+1, buf)
		}
		return buf[:sp], buf[sp+1:], buf, buf2, nil
	case '[':
		i = skipWS(d, i+1)
		buf, i, err = readString(d, i, buf)
		if err != nil {
			return nil, nil, buf, buf2, err
		}
		i = skipWS(d, i)
		if i >= len(d) || d[i] != ',' {
			return nil, nil, buf, buf2, fmt.Errorf("merge %d is not a pair", n+1)
		}
		buf2, i, err = readString(d, skipWS(d, i+1), buf2)
		if err != nil {
			return nil, nil, buf, buf2, err
		}
		i = skipWS(d, i)
		if i >= len(d) || d[i] != ']' {
			return nil, nil, buf, buf2, fmt.Errorf("merge %d is not a pair", n+1)
		}
		return buf, buf2, buf, buf2, nil
	}
	return nil, nil, buf, buf2, fmt.Errorf("merge %d is neither a string nor a pair", n+1)
}
