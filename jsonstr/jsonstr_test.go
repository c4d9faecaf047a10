package jsonstr

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestAppendString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // decoded contents
		end  int    // index past the closing quote; 0: refused
	}{
		{`""`, "", 2},
		{`"abc" tail`, "abc", 5},
		{`"a\"b\\c\/d"`, `a"b\c/d`, 12},
		{`"\b\f\n\r\t"`, "\b\f\n\r\t", 12},
		{`"\u00e9\u00E9\u0000"`, "éé\x00", 20},
		{`"\ud83d\ude00"`, "😀", 14},            // a surrogate pair
		{`"\ud83d"`, "\uFFFD", 8},              // a lone high half
		{`"\ude00\ud83d"`, "\uFFFD\uFFFD", 14}, // halves the wrong way round
		{`"\ud83dx"`, "\uFFFDx", 9},
		{`"\ud83d\u0041"`, "\uFFFDA", 14}, // a high half, then an escape that is no low half
		{`"\ud83d\n"`, "\uFFFD\n", 10},
		{"\"raw é \xff\"", "raw é \xff", 10}, // bytes copied as they are, invalid UTF-8 included
		{`x"a"`, "", 0},
		{`"abc`, "", 0},
		{`"a\"`, "", 0},
		{`"a\`, "", 0},
		{`"\x"`, "", 0},
		{`"\'"`, "", 0},
		{`"\u12"`, "", 0},
		{`"\u12g4"`, "", 0},
		{"\"a\nb\"", "", 0}, // a control character unescaped
		{"\"\x1f\"", "", 0},
		{"", "", 0},
	} {
		got, end, ok := AppendString([]byte("pre:"), []byte(tc.in), 0)
		if tc.end == 0 {
			if ok || string(got) != "pre:" {
				t.Errorf("%q: accepted (%q, %d), want refused with dst as it came", tc.in, got, end)
			}
			if _, _, ok := Raw([]byte(tc.in), 0); ok {
				t.Errorf("%q: Raw accepted it", tc.in)
			}
			continue
		}
		if !ok || string(got) != "pre:"+tc.want || end != tc.end {
			t.Errorf("%q: got (%q, %d, %v), want (%q, %d)", tc.in, got, end, ok, "pre:"+tc.want, tc.end)
		}
		raw, rend, ok := Raw([]byte(tc.in), 0)
		if !ok || rend != tc.end || string(raw) != tc.in[1:tc.end-1] {
			t.Errorf("%q: Raw got (%q, %d, %v)", tc.in, raw, rend, ok)
		}
	}
}

// A string in the middle of a document is read from its index, and reading stops at its end.
func TestAppendStringAtAnIndex(t *testing.T) {
	d := []byte(`{"key":"v\talue","n":1}`)
	got, end, ok := AppendString(nil, d, 7)
	if !ok || string(got) != "v\talue" || end != 16 || d[end] != ',' {
		t.Fatalf("got (%q, %d, %v)", got, end, ok)
	}
	if _, _, ok := AppendString(nil, d, 6); ok {
		t.Fatal("read a string where there is a colon")
	}
	if _, _, ok := AppendString(nil, d, len(d)); ok {
		t.Fatal("read a string past the end")
	}
}

func TestAppendUnescapedRefusesBadEscapes(t *testing.T) {
	for _, raw := range []string{`\`, `a\`, `\q`, `\u`, `\u00`, `\uzzzz`, `ok\u00e9\`} {
		if got, ok := AppendUnescaped([]byte("pre"), []byte(raw)); ok || string(got) != "pre" {
			t.Errorf("%q: got (%q, %v), want refused with dst as it came", raw, got, ok)
		}
	}
}

// asEncodingJSON replaces each byte that is not part of valid UTF-8 with U+FFFD, as encoding/json
// does when it decodes a string.
func asEncodingJSON(b []byte) string {
	out := make([]rune, 0, len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		out = append(out, r)
		b = b[size:]
	}
	return string(out)
}

// FuzzAppendString: the string AppendString reads at the start of the input is the one encoding/json
// reads there (the shortest prefix that is a valid JSON string), decoded to the same text up to
// encoding/json's replacement of invalid UTF-8; where there is none, AppendString refuses.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{`""`, `"abc"`, `"a\"b" rest`, `"\u00e9\ud83d\ude00\udc00\ud83d"`, `"\/\b\f\n\r\t\\"`,
		"\"\xff\xe2\x82\"", `"\ud800\u0041"`, `"unterminated`, `"\x"`, "\"\x01\"", `x`, `"\u00e"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		if len(d) > 4096 {
			return
		}
		want := -1 // the end of the shortest prefix that is a valid JSON string
		if len(d) > 0 && d[0] == '"' {
			for k := 2; k <= len(d); k++ {
				if d[k-1] == '"' && json.Valid(d[:k]) {
					want = k
					break
				}
			}
		}
		got, end, ok := AppendString(nil, d, 0)
		if want < 0 {
			if ok {
				t.Fatalf("%q: read %q (end %d) where encoding/json reads no string", d, got, end)
			}
			return
		}
		if !ok || end != want {
			t.Fatalf("%q: got end %d ok %v, encoding/json's string ends at %d", d, end, ok, want)
		}
		var s string
		if err := json.Unmarshal(d[:end], &s); err != nil {
			t.Fatal(err)
		}
		if asEncodingJSON(got) != s {
			t.Fatalf("%q: decoded %q, encoding/json %q", d, got, s)
		}
		raw, rend, rok := Raw(d, 0)
		if !rok || rend != end {
			t.Fatalf("%q: Raw got end %d ok %v, AppendString %d", d, rend, rok, end)
		}
		if again, ok := AppendUnescaped(nil, raw); !ok || string(again) != string(got) {
			t.Fatalf("%q: AppendUnescaped of Raw %q (%v), AppendString %q", d, again, ok, got)
		}
	})
}

func BenchmarkAppendString(b *testing.B) {
	for _, bc := range []struct{ name, s string }{
		{"plain", `" word, and a few more words of a streamed answer"`},
		{"escaped", `"{\"city\": \"Lisbon\", \"unit\": \"celsius\"}\n"`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			d := []byte(bc.s)
			buf := make([]byte, 0, 128)
			b.SetBytes(int64(len(d)))
			for b.Loop() {
				var ok bool
				if buf, _, ok = AppendString(buf[:0], d, 0); !ok {
					b.Fatal("refused")
				}
			}
		})
	}
}
