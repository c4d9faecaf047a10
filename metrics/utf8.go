package metrics

import "unicode/utf8"

// decodeRune returns the rune at the start of s and its size, or -1 and 1 for an invalid byte.
func decodeRune(s string) (rune, int) {
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size == 1 {
		return -1, 1
	}
	return r, size
}
