// Package jsonstr reads JSON strings (RFC 8259, section 7) in place in a byte slice, without
// reflection and without allocating: it finds where a string ends, checking it on the way, and
// decodes its escapes as encoding/json does. It is the one JSON string scanner of this module: sse's
// fast decoder of streamed chunks and tokenizer's reader of large tokenizer.json files both use it.
// It imports nothing of this module.
//
// A string's bytes that are not valid UTF-8 are accepted and copied as they are; encoding/json
// replaces each with U+FFFD. A caller that must answer as encoding/json does checks utf8.Valid.
package jsonstr

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Raw returns the contents of the JSON string that starts at d[i] (its opening quote): the bytes
// between its quotes, escapes as written, and the index just past its closing quote. ok is false
// when d[i] is not a quote or the string is not valid JSON: unterminated, holding a control
// character (below U+0020), or with an escape JSON does not define (\u takes four hex digits).
func Raw(d []byte, i int) (raw []byte, end int, ok bool) {
	if i >= len(d) || d[i] != '"' {
		return nil, 0, false
	}
	j := i + 1
	for {
		for j < len(d) && plain[d[j]] {
			j++
		}
		if j >= len(d) {
			return nil, 0, false
		}
		switch d[j] {
		case '"':
			return d[i+1 : j], j + 1, true
		case '\\':
			if j+1 >= len(d) {
				return nil, 0, false
			}
			switch d[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if _, ok := hex4(d, j+2); !ok {
					return nil, 0, false
				}
				j += 6
			default:
				return nil, 0, false
			}
		default: // a control character, which JSON requires escaped
			return nil, 0, false
		}
	}
}

// plain marks the bytes a string holds as they are: all but the quote, the backslash and the
// control characters. One look-up a byte is faster than the three comparisons it replaces (sse's
// chunk benchmarks, about 7 % a chunk).
var plain = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

// AppendString appends the decoded contents of the JSON string that starts at d[i] to dst, and
// returns the extended buffer and the index just past the string's closing quote; ok is false
// where Raw's is, and dst is then returned as it came. A string without escapes is copied in one
// piece.
func AppendString(dst, d []byte, i int) (_ []byte, end int, ok bool) {
	if i >= len(d) || d[i] != '"' {
		return dst, 0, false
	}
	j := i + 1
	for j < len(d) && plain[d[j]] {
		j++
	}
	if j < len(d) && d[j] == '"' { // no escapes: one pass
		return append(dst, d[i+1:j]...), j + 1, true
	}
	raw, end, ok := Raw(d, i)
	if !ok {
		return dst, 0, false
	}
	dst, _ = AppendUnescaped(dst, raw) // Raw has checked every escape
	return dst, end, true
}

// AppendUnescaped appends raw, the contents of a JSON string as Raw returns them, to dst with its
// escapes decoded as encoding/json decodes them: a \u escape of a UTF-16 surrogate pair becomes the
// pair's rune, and a surrogate that is not half of a pair becomes U+FFFD. Every other byte is
// copied as it is. ok is false when raw has an escape JSON does not define, and dst is then
// returned as it came.
func AppendUnescaped(dst, raw []byte) (_ []byte, ok bool) {
	n := len(dst)
	// Byte by byte: the strings that have escapes (a tool call's arguments) have them every few
	// bytes, where copying runs costs more than it saves.
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		if i >= len(raw) {
			return dst[:n], false
		}
		switch e := raw[i]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(raw, i+1)
			if !ok {
				return dst[:n], false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				// A pair is two escapes in a row; anything else leaves this half alone, and the
				// next escape is read on its own (as encoding/json reads them).
				r2, ok2 := rune(0), false
				if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					r2, ok2 = hex4(raw, i+3)
				}
				if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst[:n], false
		}
	}
	return dst, true
}

// hex4 reads the four hex digits at d[i:i+4].
func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
