package workload

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The samples in testdata/traces are small real traces of every layout (see its README).
const traceSamples = "testdata/traces"

func traceScenario(seed uint64, lang string) *Scenario {
	s := &Scenario{Seed: seed}
	s.Session.Language = lang
	return s
}

func mustReadTrace(t testing.TB, s *Scenario, path string, spec TraceSpec) *Source {
	t.Helper()
	src, err := s.readTrace(path, &spec)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// traceTurnView is what a test compares of a turn: everything but the text.
type traceTurnView struct {
	Line, UserTokens, OutputTokens int
	AtMs                           float64
}

func traceViewTurns(ss SourceSession) []traceTurnView {
	var out []traceTurnView
	for _, t := range ss.Turns {
		out = append(out, traceTurnView{t.Line, t.UserTokens, t.OutputTokens, t.AtMs})
	}
	return out
}

// checkTraceText counts the text of every every-th turn with the real tokenizer: it must be the
// turn's UserTokens exactly (the ±2 % of docs/data.md with room to spare), and the turn must ask for its
// output exactly, without a system prompt.
func checkTraceText(t *testing.T, src *Source, every int) {
	t.Helper()
	g, err := NewTextGen("en", o200kForTest(t))
	if err != nil {
		t.Fatal(err)
	}
	k, checked, bad := 0, 0, 0
	for _, ss := range src.Sessions {
		if ss.System != "" || ss.SystemTokens != 0 {
			t.Fatalf("session %s has a system prompt; a trace has none", ss.ID)
		}
		for _, tu := range ss.Turns {
			if !tu.ExactOutput || tu.OutputTokens < 1 || tu.UserTokens < 1 || tu.DelayMs != -1 {
				t.Fatalf("line %d: %+v: want ExactOutput, lengths ≥ 1 and DelayMs −1", tu.Line, tu)
			}
			k++
			if k%every != 0 {
				continue
			}
			checked++
			if n := g.Count(tu.User); n != tu.UserTokens {
				bad++
				if bad < 5 {
					t.Errorf("line %d: the text counts %d tokens, want %d", tu.Line, n, tu.UserTokens)
				}
			}
		}
	}
	if checked == 0 || bad > 0 {
		t.Fatalf("%d of %d texts checked have the wrong length", bad, checked)
	}
}

// TestTraceSamples reads each format's sample: lines, the requests kept, their lengths and times on
// the trace's clock (hand-computed from the files), and the warnings.
func TestTraceSamples(t *testing.T) {
	tests := []struct {
		file, format        string
		filter              map[string]string
		lines, used, sess   int
		first               []traceTurnView // of the first session
		second              []traceTurnView // of the second
		warning             string
		sessionID, secondID string
	}{
		{file: "mooncake.jsonl", format: FormatMooncake, lines: 40, used: 40, sess: 40,
			first: []traceTurnView{{1, 2835, 69, 0}}, second: []traceTurnView{{2, 5989, 79, 18}}, sessionID: "line-1", secondID: "line-2"},
		// 2023: 7 fractional digits, no zone: 46.1458540 − 46.1178430 s = 28.011 ms.
		{file: "azure-2023.csv", format: FormatAzure, lines: 40, used: 40, sess: 40,
			first: []traceTurnView{{2, 1377, 48, 0}}, second: []traceTurnView{{3, 3170, 180, 28.011}}, sessionID: "line-2", secondID: "line-3"},
		// 2024: microseconds and +00:00: 0.011051 − 0.001291 s = 9.76 ms.
		{file: "azure-2024.csv", format: FormatAzure, lines: 40, used: 40, sess: 40,
			first: []traceTurnView{{2, 6050, 666, 0}}, second: []traceTurnView{{3, 6239, 143, 9.76}}, sessionID: "line-2", secondID: "line-3"},
		// One row (line 6) answered 0 tokens: a failed request, left out with a warning.
		{file: "burstgpt.csv", format: FormatBurstGPT, lines: 41, used: 40, sess: 40,
			first: []traceTurnView{{2, 1065, 413, 0}}, second: []traceTurnView{{3, 740, 326, 1000}}, warning: "1 rows with Response tokens 0 are left out",
			sessionID: "line-2", secondID: "line-3"},
		// The filter keeps GPT-4 conversation logs: lines 8, 15, 16, 21, 25, 30, 34, 37, 38, 40 and 42.
		{file: "burstgpt.csv", format: FormatBurstGPT, filter: map[string]string{"model": "GPT-4", "log_type": "Conversation log"},
			lines: 41, used: 11, sess: 11, first: []traceTurnView{{8, 182, 271, 0}}, second: []traceTurnView{{15, 1776, 124, 15000}},
			warning: `the filter model="GPT-4" log_type="Conversation log" leaves out 30 of its 41 rows`, sessionID: "line-8", secondID: "line-15"},
		// Eight chats (parent −1). Chat 1016 (first, 5.418 s): 216 → 697 − (216+77) = 404 → 1200 −
		// (697+196) = 307 → 1700 − (1200+211) = 289 new tokens; chat 1020 at 8.442 s.
		{file: "qwen-bailian.jsonl", format: FormatQwenBailian, lines: 24, used: 24, sess: 8,
			first:     []traceTurnView{{1, 216, 77, 0}, {14, 404, 196, 80383}, {18, 307, 211, 127704}, {21, 289, 240, 146224}},
			second:    []traceTurnView{{2, 221, 171, 3024}, {13, 30, 176, 79444}, {23, 106, 110, 155768}, {24, 183, 139, 237402}},
			sessionID: "chat-1016", secondID: "chat-1020"},
	}
	for _, tc := range tests {
		t.Run(tc.file+fmt.Sprint(len(tc.filter)), func(t *testing.T) {
			path := filepath.Join(traceSamples, tc.file)
			src := mustReadTrace(t, traceScenario(1, "en"), path, TraceSpec{File: tc.file, Format: tc.format, Filter: tc.filter})
			if src.File != tc.file || src.Path != path || src.Format != tc.format {
				t.Errorf("file, path, format = %q %q %q", src.File, src.Path, src.Format)
			}
			want, err := fileSHA256(path)
			if err != nil || src.SHA256 != want {
				t.Errorf("sha256 %s, want %s (%v)", src.SHA256, want, err)
			}
			if src.Lines != tc.lines || src.LinesUsed != tc.used || len(src.Sessions) != tc.sess {
				t.Errorf("lines %d, used %d, sessions %d; want %d, %d, %d", src.Lines, src.LinesUsed, len(src.Sessions), tc.lines, tc.used, tc.sess)
			}
			if diff := cmp.Diff(tc.first, traceViewTurns(src.Sessions[0]), traceFloatNear); diff != "" {
				t.Errorf("first session (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.second, traceViewTurns(src.Sessions[1]), traceFloatNear); diff != "" {
				t.Errorf("second session (-want +got):\n%s", diff)
			}
			if src.Sessions[0].ID != tc.sessionID || src.Sessions[1].ID != tc.secondID {
				t.Errorf("session ids %q %q, want %q %q", src.Sessions[0].ID, src.Sessions[1].ID, tc.sessionID, tc.secondID)
			}
			warnings := strings.Join(src.Warnings, "\n")
			if tc.warning == "" && warnings != "" || !strings.Contains(warnings, tc.warning) {
				t.Errorf("warnings %q, want %q", warnings, tc.warning)
			}
			checkTraceText(t, src, 1)
		})
	}
}

// traceFloatNear compares times to a microsecond: the CSV times go through float64 ms.
var traceFloatNear = cmp.Comparer(func(a, b float64) bool { return a-b < 1e-3 && b-a < 1e-3 })

// TestTraceSharedBlocks: equal hash ids are equal text, so the sample's shared three-block prefix
// (ids 0–2) is the same 1,536 tokens in every request that has it, and requests without it share
// nothing; a block cut short is the first tokens of the same block.
func TestTraceSharedBlocks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	writeTraceLines(t, path,
		`{"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [0, 1, 2]}`, // cuts block 2 at 76
		`{"timestamp": 1, "input_length": 1536, "output_length": 5, "hash_ids": [0, 1, 2]}`,
		`{"timestamp": 2, "input_length": 2000, "output_length": 5, "hash_ids": [0, 1, 2, 9]}`,
		`{"timestamp": 3, "input_length": 600, "output_length": 5, "hash_ids": [7, 1]}`, // block 1 second: no prefix
		`{"timestamp": 4, "input_length": 600, "output_length": 5}`,                     // no ids: its own text
		`{"timestamp": 5, "input_length": 700, "output_length": 5, "hash_ids": [0]}`)    // fewer blocks than tokens
	g, _ := NewTextGen("en", o200kForTest(t))
	src := mustReadTrace(t, traceScenario(3, "en"), path, TraceSpec{Format: FormatMooncake})
	text := func(i int) string { return src.Sessions[i].Turns[0].User }
	if !strings.HasPrefix(text(1), text(0)) || !strings.HasPrefix(text(2), text(1)) {
		t.Error("requests over blocks 0–2 do not share their text as a prefix")
	}
	// pieces is tokens [from, to) of a prompt (every piece is one token).
	pieces := func(prompt string, from, to int) string {
		s := " " + prompt
		return cutPieces(s, to)[len(cutPieces(s, from)):]
	}
	if pieces(text(5), 0, 512) != pieces(text(1), 0, 512) {
		t.Error("block 0 is not the same text in a request with more tokens than blocks")
	}
	// Block 1 is the second block of request 3, after block 7, cut to 88 tokens.
	if pieces(text(3), 512, 600) != pieces(text(1), 512, 600) {
		t.Error("block 1 is not the same text after another block")
	}
	if pieces(text(3), 0, 512) == pieces(text(1), 0, 512) {
		t.Error("blocks 7 and 0 are the same text")
	}
	if traceCommonPrefix(text(3), text(1)) > 20 || traceCommonPrefix(text(4), text(1)) > 20 {
		t.Errorf("requests with other first blocks share %d and %d bytes with block 0", traceCommonPrefix(text(3), text(1)), traceCommonPrefix(text(4), text(1)))
	}
	for i, n := range []int{1100, 1536, 2000, 600, 600, 700} {
		if got := g.Count(text(i)); got != n {
			t.Errorf("request %d counts %d tokens, want %d", i, got, n)
		}
	}
	// Every cut of a block at a block boundary and inside it counts exactly (additivity at joins).
	b1 := " " + text(1)
	for _, k := range []int{1, 2, 3, 17, 255, 511, 512, 513, 1023, 1024, 1025, 1535} {
		if got := g.Count(cutPieces(b1, k)[1:]); got != k {
			t.Errorf("the first %d pieces count %d tokens", k, got)
		}
	}
}

func traceCommonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func writeTraceLines(t testing.TB, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTraceTextCounts: trace text of any length, cut anywhere, in both languages, is exactly its
// token count by the real tokenizer, and draws for a stream equal s.rng's.
func TestTraceTextCounts(t *testing.T) {
	for _, lang := range []string{"en", "ko"} {
		g, err := NewTextGen(lang, o200kForTest(t))
		if err != nil {
			t.Fatal(err)
		}
		tt, err := newTraceText(g)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(9, uint64(len(lang))))
		for i := range 150 {
			n := 1 + r.IntN(600)
			text := string(tt.appendText(nil, r, n))
			for _, v := range "aeiou" {
				if lang == "en" && (strings.Contains(text, " a "+string(v)) || strings.Contains(text, " A "+string(v))) {
					t.Fatalf("%q: a before a vowel", text)
				}
			}
			if got := g.Count(text[1:]); got != n {
				t.Fatalf("%s text %d: %d tokens, want %d: %q", lang, i, got, n, text)
			}
			k := r.IntN(n + 1)
			if cut := cutPieces(text, k); k > 0 && g.Count(cut[1:]) != k {
				t.Fatalf("%s text %d cut at %d counts %d: %q", lang, i, k, g.Count(cut[1:]), cut)
			}
			// Two texts joined count as the sum: the join is a piece boundary.
			other := string(tt.appendText(nil, r, 1+r.IntN(40)))
			if got, want := g.Count((text + other)[1:]), n+g.Count(other[1:]); got != want {
				t.Fatalf("%s: joined texts count %d, want %d", lang, got, want)
			}
		}
	}
	s := traceScenario(42, "en")
	w := newTracePrompts(s, nil, 16).writer()
	for _, idx := range []uint64{0, 1, 1 << 40} {
		a, b := s.rng(streamTraceBlock, idx), w.rng(streamTraceBlock, idx)
		for range 5 {
			if x, y := a.Uint64(), b.Uint64(); x != y {
				t.Fatalf("index %d: reseeded generator draws %d, s.rng %d", idx, y, x)
			}
		}
	}
}

// TestTraceDeterminism: the same seed gives the same text on every read; another seed other text.
func TestTraceDeterminism(t *testing.T) {
	for _, f := range []struct{ file, format string }{{"mooncake.jsonl", FormatMooncake}, {"azure-2024.csv", FormatAzure}, {"qwen-bailian.jsonl", FormatQwenBailian}} {
		path := filepath.Join(traceSamples, f.file)
		spec := TraceSpec{Format: f.format}
		a := mustReadTrace(t, traceScenario(5, "en"), path, spec)
		b := mustReadTrace(t, traceScenario(5, "en"), path, spec)
		c := mustReadTrace(t, traceScenario(6, "en"), path, spec)
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("%s: two reads with seed 5 differ:\n%.2000s", f.file, diff)
		}
		if a.Sessions[0].Turns[0].User == c.Sessions[0].Turns[0].User {
			t.Errorf("%s: seeds 5 and 6 give the same text", f.file)
		}
		// A request's text does not depend on the slice: alone, its blocks are used once (and are
		// written straight into it), in the whole trace they are shared; the text is the same.
		spec.MaxRequests = 1
		alone := mustReadTrace(t, traceScenario(5, "en"), path, spec)
		if alone.Sessions[0].Turns[0].User != a.Sessions[0].Turns[0].User {
			t.Errorf("%s: the first request's text differs when it is read alone", f.file)
		}
	}
}

// TestTraceBadRows: a bad row is an error naming the file, the line and the column (CSV) or key
// (JSONL), what it found and what is accepted.
func TestTraceBadRows(t *testing.T) {
	const azureHead, burstHead = azureLayout, burstLayout
	tests := []struct {
		name, format string
		lines        []string
		want         []string
	}{
		{"mooncake not json", FormatMooncake, []string{`{"timestamp": 1, "input_length": 5, "output_length": 5}`, `{"timestamp": 2,`},
			[]string{"line 2", "not a JSON object", mooncakeAccepted}},
		{"mooncake length text", FormatMooncake, []string{``, `{"timestamp": 1, "input_length": "5", "output_length": 5}`},
			[]string{"line 2", `key "input_length"`, "found string", "a whole number of tokens"}},
		{"mooncake missing output", FormatMooncake, []string{`{"timestamp": 1, "input_length": 5}`},
			[]string{"line 1", `key "output_length" is missing`}},
		{"mooncake null time", FormatMooncake, []string{`{"timestamp": null, "input_length": 5, "output_length": 1}`},
			[]string{"line 1", `key "timestamp" is missing or null`, "ms from the trace's start"}},
		{"mooncake fraction", FormatMooncake, []string{`{"timestamp": 1, "input_length": 5.5, "output_length": 1}`},
			[]string{"line 1", `key "input_length": found 5.5`, "whole number of tokens from 0 to"}},
		{"mooncake negative", FormatMooncake, []string{`{"timestamp": 1, "input_length": 5, "output_length": -1}`},
			[]string{"line 1", `key "output_length": found -1`}},
		{"mooncake huge", FormatMooncake, []string{`{"timestamp": 1, "input_length": 20000000, "output_length": 1}`},
			[]string{"line 1", `key "input_length": found 2e+07`}},
		{"mooncake bad id", FormatMooncake, []string{`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1, "x"]}`},
			[]string{"line 1", `key "hash_ids"`, "a list of whole numbers"}},
		{"mooncake far time", FormatMooncake, []string{`{"timestamp": 1e300, "input_length": 5, "output_length": 1}`},
			[]string{"line 1", `key "timestamp": found 1e+300`}},
		{"qwen no parent", FormatQwenBailian, []string{`{"chat_id": 1, "timestamp": 1, "input_length": 5, "output_length": 1}`},
			[]string{"line 1", `key "parent_chat_id" is missing`, "-1 on a first turn"}},
		{"qwen chat id fraction", FormatQwenBailian, []string{`{"chat_id": 1.5, "parent_chat_id": -1, "timestamp": 1, "input_length": 5, "output_length": 1}`},
			[]string{"line 1", `key "chat_id"`, "a whole number"}},
		{"qwen duplicate", FormatQwenBailian, []string{`{"chat_id": 1, "parent_chat_id": -1, "timestamp": 1, "input_length": 5, "output_length": 1}`,
			`{"chat_id": 1, "parent_chat_id": -1, "timestamp": 2, "input_length": 5, "output_length": 1}`},
			[]string{"line 2", "chat_id 1 is already the chat_id of line 1", "one row per chat_id"}},
		{"azure bad time", FormatAzure, []string{azureHead, "2023-11-16 18:15:46.1178430,1377,48", "16/11/2023 18:15,10,10"},
			[]string{"line 3, column 1 (TIMESTAMP)", `found "16/11/2023 18:15"`, "2024-05-10 00:00:00.001291+00:00"}},
		{"azure bad length", FormatAzure, []string{azureHead, "2023-11-16 18:15:46.1178430,1377,many"},
			[]string{"line 2, column 3 (GeneratedTokens)", `found "many"`, "a whole number of tokens"}},
		{"azure short row", FormatAzure, []string{azureHead, "2023-11-16 18:15:46.1178430,1377"},
			[]string{"line 2: 2 columns, the header has 3", azureLayout}},
		{"azure no column", FormatAzure, []string{"TIMESTAMP,ContextTokens,Output", "2023-11-16 18:15:46,1,1"},
			[]string{"line 1: the header has no column \"GeneratedTokens\"", azureLayout}},
		{"azure empty", FormatAzure, []string{""}, []string{"empty", azureLayout}},
		{"azure quote", FormatAzure, []string{azureHead, `2023-11-16 18:15:46,"12,1`}, []string{"line 2, column"}},
		{"burst bad time", FormatBurstGPT, []string{burstHead, "3,GPT-4,10,10,20,API log", "x,GPT-4,10,10,20,API log"},
			[]string{"line 3, column 1 (Timestamp)", `found "x"`, "seconds from the trace's start"}},
		{"burst negative", FormatBurstGPT, []string{burstHead, "3,GPT-4,-10,10,20,API log"},
			[]string{"line 2, column 3 (Request tokens)", `found "-10"`}},
		{"no usable row", FormatBurstGPT, []string{burstHead, "3,GPT-4,10,0,10,API log", "4,GPT-4,0,5,5,API log"},
			[]string{"none of its 2 rows gives a request", "Request tokens and Response tokens ≥ 1"}},
		{"no line at all", FormatMooncake, []string{"", "  "}, []string{"none of its 0 rows gives a request"}},
		{"unknown format", "vidur", []string{"x"}, []string{`trace format "vidur"`, "accepted: mooncake, azure, burstgpt, qwen_bailian"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trace.txt")
			writeTraceLines(t, path, tc.lines...)
			_, err := traceScenario(1, "en").readTrace(path, &TraceSpec{Format: tc.format})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, path) {
				if tc.format == "vidur" && w == path {
					continue
				}
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestTraceMissingFile: a file that is not there is an error saying so.
func TestTraceMissingFile(t *testing.T) {
	_, err := traceScenario(1, "en").readTrace(filepath.Join(t.TempDir(), "nope.jsonl"), &TraceSpec{Format: FormatMooncake})
	if err == nil || !strings.Contains(err.Error(), "cannot read the trace") {
		t.Fatalf("err = %v", err)
	}
}

// TestTraceBurstFilter: each filter key alone and both; one that keeps nothing lists what the file
// has; an unknown key is refused.
func TestTraceBurstFilter(t *testing.T) {
	path := filepath.Join(traceSamples, "burstgpt.csv")
	for _, tc := range []struct {
		filter map[string]string
		used   int
	}{
		{nil, 40},
		{map[string]string{"model": "GPT-4"}, 21},
		{map[string]string{"model": "ChatGPT"}, 19},
		{map[string]string{"log_type": "API log"}, 22},
		{map[string]string{"model": "ChatGPT", "log_type": "API log"}, 12},
	} {
		src := mustReadTrace(t, traceScenario(1, "en"), path, TraceSpec{Format: FormatBurstGPT, Filter: tc.filter})
		if src.LinesUsed != tc.used {
			t.Errorf("filter %v keeps %d requests, want %d", tc.filter, src.LinesUsed, tc.used)
		}
	}
	_, err := traceScenario(1, "en").readTrace(path, &TraceSpec{Format: FormatBurstGPT, Filter: map[string]string{"model": "gpt-4"}})
	if err == nil || !strings.Contains(err.Error(), `keeps none of its 41 rows; accepted values: model "ChatGPT", "GPT-4", log_type "API log", "Conversation log"`) {
		t.Errorf("err = %v", err)
	}
	_, err = traceScenario(1, "en").readTrace(path, &TraceSpec{Format: FormatBurstGPT, Filter: map[string]string{"region": "eu"}})
	if err == nil || !strings.Contains(err.Error(), `filter key "region"; accepted: model, log_type`) {
		t.Errorf("err = %v", err)
	}
}

// TestTraceSlicing: start and duration on the trace's own clock from its first request, and
// max_requests; times are from the slice's start, so a replay of a slice starts at once.
func TestTraceSlicing(t *testing.T) {
	path := filepath.Join(traceSamples, "mooncake.jsonl") // first request at 97 ms
	lines := func(src *Source) []int {
		var out []int
		for _, ss := range src.Sessions {
			out = append(out, ss.Turns[0].Line)
		}
		return out
	}
	ms := func(d time.Duration) Duration { return Duration(d) }
	tests := []struct {
		name  string
		spec  TraceSpec
		lines []int
		at0   float64
	}{
		// [97+6000, 97+7000) ms = [6097, 7097): 6765, 6889 (lines 33, 34).
		{"start and duration", TraceSpec{Start: ms(6 * time.Second), Duration: ms(time.Second)}, []int{33, 34}, 6765 - 6097},
		{"max requests", TraceSpec{MaxRequests: 3}, []int{1, 2, 3}, 0},
		// From 7097 ms: 7140, 7285 (lines 35, 36), then max_requests.
		{"start, max", TraceSpec{Start: ms(7 * time.Second), MaxRequests: 2}, []int{35, 36}, 7140 - 7097},
		// A duration up to a request's own time leaves it out: [97, 115) holds line 1 only.
		{"end is open", TraceSpec{Duration: ms(18 * time.Millisecond)}, []int{1}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Format = FormatMooncake
			src := mustReadTrace(t, traceScenario(1, "en"), path, tc.spec)
			if diff := cmp.Diff(tc.lines, lines(src)); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if got := src.Sessions[0].Turns[0].AtMs; got != tc.at0 {
				t.Errorf("first AtMs %v, want %v", got, tc.at0)
			}
			if src.LinesUsed != len(tc.lines) || src.Lines != 40 {
				t.Errorf("lines %d used %d", src.Lines, src.LinesUsed)
			}
		})
	}
	_, err := traceScenario(1, "en").readTrace(path, &TraceSpec{Format: FormatMooncake, Start: ms(time.Hour)})
	if err == nil || !strings.Contains(err.Error(), "no request left in the slice start 1h") || !strings.Contains(err.Error(), "spans 7.652s") {
		t.Errorf("err = %v", err)
	}

	// Qwen: a session is in the slice when its first turn is, and keeps its turns up to the end.
	qpath := filepath.Join(traceSamples, "qwen-bailian.jsonl") // first at 5.418 s
	src := mustReadTrace(t, traceScenario(1, "en"), qpath, TraceSpec{Format: FormatQwenBailian, Start: ms(10 * time.Second), Duration: ms(80 * time.Second)})
	// [15.418, 95.418) s: chats 1009 (19.906, turn 2 at 25.966), 1002 (27.083; 73.673), 1004 (30.178;
	// its turn 2 at 98.565 is past the end), 1013 (46.03; 52.518), 1000 (54.593; 62.242).
	var got []string
	for _, ss := range src.Sessions {
		got = append(got, fmt.Sprintf("%s:%d", ss.ID, len(ss.Turns)))
	}
	if diff := cmp.Diff([]string{"chat-1009:2", "chat-1002:2", "chat-1004:1", "chat-1013:2", "chat-1000:2"}, got); diff != "" {
		t.Errorf("qwen slice (-want +got):\n%s", diff)
	}
	src = mustReadTrace(t, traceScenario(1, "en"), qpath, TraceSpec{Format: FormatQwenBailian, MaxRequests: 5})
	if src.LinesUsed != 5 || len(src.Sessions) != 4 { // 1016, 1020, 1006, 1009 and 1009's second turn
		t.Errorf("qwen max_requests 5: %d requests in %d sessions", src.LinesUsed, len(src.Sessions))
	}
}

// TestTraceUnsorted: rows out of time order are sorted (stably: equal times keep the file's order)
// with a warning that counts them and names the first.
func TestTraceUnsorted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.csv")
	writeTraceLines(t, path, burstLayout,
		"5,GPT-4,10,1,11,API log", // line 2
		"3,GPT-4,11,1,12,API log", // line 3: earlier than line 2
		"3,GPT-4,12,1,13,API log", // line 4: same time as line 3, stays after it
		"9,GPT-4,13,1,14,API log",
		"1,GPT-4,14,1,15,API log") // line 6: earlier than line 5
	src := mustReadTrace(t, traceScenario(1, "en"), path, TraceSpec{Format: FormatBurstGPT})
	var got []traceTurnView
	for _, ss := range src.Sessions {
		got = append(got, traceViewTurns(ss)...)
	}
	want := []traceTurnView{{6, 14, 1, 0}, {3, 11, 1, 2000}, {4, 12, 1, 2000}, {2, 10, 1, 4000}, {5, 13, 1, 8000}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if len(src.Warnings) != 1 || !strings.Contains(src.Warnings[0], "timestamps are not in order (2 rows are earlier than the row before them, the first at line 3): sorted by time") {
		t.Errorf("warnings %q", src.Warnings)
	}
	sorted := mustReadTrace(t, traceScenario(1, "en"), filepath.Join(traceSamples, "azure-2023.csv"), TraceSpec{Format: FormatAzure})
	if len(sorted.Warnings) != 0 {
		t.Errorf("a sorted trace warns %q", sorted.Warnings)
	}
}

// TestTraceQwenSessions: the cases a cut or odd multi-turn trace holds, each counted in a warning.
func TestTraceQwenSessions(t *testing.T) {
	row := func(chat, parent int, ts float64, in, out int, ids string) string {
		return fmt.Sprintf(`{"chat_id": %d, "parent_chat_id": %d, "timestamp": %g, "input_length": %d, "output_length": %d, "type": "text", "turn": 1, "hash_ids": [%s]}`,
			chat, parent, ts, in, out, ids)
	}
	path := filepath.Join(t.TempDir(), "q.jsonl")
	writeTraceLines(t, path,
		row(1, -1, 0, 40, 10, "1, 2, 3"),
		row(2, 1, 1, 70, 10, "1, 2, 3, 4, 5"),   // 70 − 50 = 20 new tokens from blocks 4, 5 (history 50 → block 3 on)
		row(3, 1, 2, 70, 10, "1, 2, 3, 4, 6"),   // a second answer to turn 1: a session of its own, 70 tokens
		row(4, 99, 3, 30, 10, "7, 8"),           // parent not in the file: a session, 30 tokens
		row(5, 2, 4, 60, 10, "1, 2, 3, 4, 5"),   // under its history 80: 1 new token
		row(6, -1, 5, 20, 0, "9, 10"),           // 0 output: left out, and its next turn with it
		row(7, 6, 6, 40, 5, "9, 10, 11"),        //
		row(8, 4, 7, 50, 5, "7, 8, 12, 13, 14"), // continues chat 4's session: 50 − 40 = 10
	)
	src := mustReadTrace(t, traceScenario(1, "en"), path, TraceSpec{Format: FormatQwenBailian, BlockTokens: 16})
	got := map[string][]traceTurnView{}
	for _, ss := range src.Sessions {
		got[ss.ID] = traceViewTurns(ss)
	}
	want := map[string][]traceTurnView{
		"chat-1": {{1, 40, 10, 0}, {2, 20, 10, 1000}, {5, 1, 10, 4000}},
		"chat-3": {{3, 70, 10, 2000}},
		"chat-4": {{4, 30, 10, 3000}, {8, 10, 5, 7000}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sessions (-want +got):\n%s", diff)
	}
	for _, w := range []string{
		"1 rows with output_length 0 are left out",
		"1 later turns of chats left out for a length of 0 are left out with them",
		"1 turns name a parent_chat_id that is not in the file",
		"1 turns continue a turn that another turn already continues",
		"1 turns have an input_length under their history",
	} {
		if !strings.Contains(strings.Join(src.Warnings, "\n"), w) {
			t.Errorf("no warning %q in %q", w, src.Warnings)
		}
	}
	// Turn 2's message is blocks 4 and 5 (16 tokens each, cut to 20): the text of block 4 is the
	// same as in chat 3's first message, where block 4 is the fourth block.
	turn2 := " " + src.Sessions[0].Turns[1].User
	chat3 := " " + src.Sessions[1].Turns[0].User
	block4 := cutPieces(turn2, 16)
	if !strings.HasPrefix(chat3[len(cutPieces(chat3, 48)):], block4) {
		t.Error("the new part of a later turn is not the text of its own blocks")
	}
	checkTraceText(t, src, 1)
}

// Generated traces of 100k rows, in each format's layout, with known lengths.

type traceGenRow struct {
	ms      float64
	in, out int
	ids     []int64
	chat    int64
	parent  int64
}

// genTraceSingle makes n single-request rows: Poisson arrivals at 50/s, input lengths from 1 to maxIn,
// half the requests opening with one of 20 shared 1–3 block prefixes (blocks of bt tokens).
func genTraceSingle(n, maxIn, bt int) []traceGenRow {
	r := rand.New(rand.NewPCG(11, 12))
	rows := make([]traceGenRow, n)
	ms, next := 0.0, int64(1000)
	for i := range rows {
		ms += r.ExpFloat64() * 20
		in := 1 + r.IntN(maxIn)
		nb := (in + bt - 1) / bt
		ids := make([]int64, nb)
		shared := 0
		if r.IntN(2) == 0 {
			shared = min(nb, 1+r.IntN(3))
		}
		prefix := int64(r.IntN(20)) * 3
		for k := range ids {
			if k < shared {
				ids[k] = prefix + int64(k)
			} else {
				ids[k] = next
				next++
			}
		}
		rows[i] = traceGenRow{ms: float64(int64(ms)), in: in, out: 1 + r.IntN(300), ids: ids}
	}
	return rows
}

func writeTraceGen(t testing.TB, path, format string, rows []traceGenRow) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	base := time.Date(2024, 5, 10, 0, 0, 0, 0, time.UTC)
	switch format {
	case FormatAzure:
		fmt.Fprintln(w, azureLayout)
	case FormatBurstGPT:
		fmt.Fprintln(w, burstLayout)
	}
	for i, r := range rows {
		var idb []byte
		for k, id := range r.ids {
			if k > 0 {
				idb = append(idb, ", "...)
			}
			idb = strconv.AppendInt(idb, id, 10)
		}
		ids := string(idb)
		switch format {
		case FormatMooncake:
			fmt.Fprintf(w, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [%s]}`+"\n", int64(r.ms), r.in, r.out, ids)
		case FormatAzure: // the 2024 layout on even rows, 2023 on odd ones: one file may mix them
			ts := base.Add(time.Duration(r.ms * float64(time.Millisecond)))
			if i%2 == 0 {
				fmt.Fprintf(w, "%s,%d,%d\n", ts.Format("2006-01-02 15:04:05.000000-07:00"), r.in, r.out)
			} else {
				fmt.Fprintf(w, "%s,%d,%d\n", ts.Format("2006-01-02 15:04:05.0000000"), r.in, r.out)
			}
		case FormatBurstGPT:
			model, log := []string{"ChatGPT", "GPT-4"}[i%2], []string{"API log", "Conversation log"}[i/2%2]
			fmt.Fprintf(w, "%g,%s,%d,%d,%d,%s\n", r.ms/1000, model, r.in, r.out, r.in+r.out, log)
		case FormatQwenBailian:
			fmt.Fprintf(w, `{"chat_id": %d, "parent_chat_id": %d, "timestamp": %g, "input_length": %d, "output_length": %d, "type": "text", "turn": 1, "hash_ids": [%s]}`+"\n",
				r.chat, r.parent, r.ms/1000, r.in, r.out, ids)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// genTraceQwen makes chats of 1–5 turns until n rows: each turn's input is the history (earlier input and
// output) plus a new message of 1–30 tokens, its hash ids the earlier ones extended (blocks of 16).
// It returns the rows in time order and each chat's expected new-message lengths by first chat id.
func genTraceQwen(n int) ([]traceGenRow, map[int64][]int) {
	r := rand.New(rand.NewPCG(13, 14))
	var rows []traceGenRow
	want := map[int64][]int{}
	chat, next := int64(0), int64(0)
	start := 0.0
	for len(rows) < n {
		start += r.ExpFloat64() * 100
		turns := min(1+r.IntN(5), n-len(rows))
		root := chat
		var ids []int64
		in, out, ms, parent := 0, 0, start, int64(-1)
		for range turns {
			msg := 1 + r.IntN(30)
			in = in + out + msg
			out = 1 + r.IntN(30)
			for len(ids)*16 < in {
				ids = append(ids, next)
				next++
			}
			rows = append(rows, traceGenRow{ms: ms, in: in, out: out, ids: slices.Clone(ids), chat: chat, parent: parent})
			want[root] = append(want[root], msg)
			parent = chat
			chat++
			ms += 1000 + r.ExpFloat64()*5000
		}
	}
	slices.SortStableFunc(rows, func(a, b traceGenRow) int {
		switch {
		case a.ms < b.ms:
			return -1
		case a.ms > b.ms:
			return 1
		}
		return 0
	})
	return rows, want
}

// TestTraceLarge reads 100k-row traces of each format: every request kept with its exact lengths and
// times, the text counted exactly on a sample of them.
func TestTraceLarge(t *testing.T) {
	const n = 100_000
	single := genTraceSingle(n, 48, 16)
	for _, format := range []string{FormatMooncake, FormatAzure, FormatBurstGPT} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "trace")
			writeTraceGen(t, path, format, single)
			src := mustReadTrace(t, traceScenario(2, "en"), path, TraceSpec{Format: format, BlockTokens: 16})
			if src.Lines != n || src.LinesUsed != n || len(src.Sessions) != n || len(src.Warnings) != 0 {
				t.Fatalf("lines %d, used %d, sessions %d, warnings %q; want %d each and none", src.Lines, src.LinesUsed, len(src.Sessions), src.Warnings, n)
			}
			for i, ss := range src.Sessions {
				tu, r := ss.Turns[0], single[i]
				at := r.ms - single[0].ms
				if tu.UserTokens != r.in || tu.OutputTokens != r.out || tu.AtMs-at > 1e-3 || at-tu.AtMs > 1e-3 {
					t.Fatalf("row %d: %d/%d at %v ms, want %d/%d at %v", i, tu.UserTokens, tu.OutputTokens, tu.AtMs, r.in, r.out, at)
				}
			}
			checkTraceText(t, src, 97)
		})
	}
	t.Run(FormatQwenBailian, func(t *testing.T) {
		t.Parallel()
		rows, want := genTraceQwen(n)
		path := filepath.Join(t.TempDir(), "trace.jsonl")
		writeTraceGen(t, path, FormatQwenBailian, rows)
		src := mustReadTrace(t, traceScenario(2, "en"), path, TraceSpec{Format: FormatQwenBailian})
		if src.LinesUsed != n || len(src.Sessions) != len(want) || len(src.Warnings) != 0 {
			t.Fatalf("used %d, sessions %d, warnings %q; want %d, %d, none", src.LinesUsed, len(src.Sessions), src.Warnings, n, len(want))
		}
		for _, ss := range src.Sessions {
			var root int64
			fmt.Sscanf(ss.ID, "chat-%d", &root)
			var got []int
			for _, tu := range ss.Turns {
				got = append(got, tu.UserTokens)
			}
			if !slices.Equal(got, want[root]) {
				t.Fatalf("%s: new messages %v, want %v", ss.ID, got, want[root])
			}
		}
		checkTraceText(t, src, 97)
	})
}

// BenchmarkReadTrace loads and prepares a generated 1M-line Mooncake trace (blocks of 64 tokens,
// prompts of 1–512 tokens, half of them opening with shared blocks): the time per load, and the
// heap it leaves (the prompts' text, mostly) as heap-MB.
func BenchmarkReadTrace(b *testing.B) {
	path := filepath.Join(b.TempDir(), "mooncake.jsonl")
	writeTraceGen(b, path, FormatMooncake, genTraceSingle(1_000_000, 512, 64))
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	s := traceScenario(1, "en")
	var src *Source
	for b.Loop() {
		src = nil
		src, err = s.readTrace(path, &TraceSpec{Format: FormatMooncake, BlockTokens: 64})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	tokens := 0
	for _, ss := range src.Sessions {
		tokens += ss.Turns[0].UserTokens
	}
	b.ReportMetric(float64(m.HeapAlloc)/(1<<20), "heap-MB")
	b.ReportMetric(float64(m.HeapAlloc)/float64(tokens), "heap-B/token")
	runtime.KeepAlive(src)
}

// TestTraceBlockReuse: each request of a trace knows its blocks and how many of them an earlier
// request (in time, whatever the file's order) read too; a stage sums them, for the report to set
// the trace's own reuse beside the cache hit the server gave.
func TestTraceBlockReuse(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	writeTraceLines(t, path,
		`{"timestamp": 1, "input_length": 1536, "output_length": 5, "hash_ids": [0, 1, 2]}`, // after the next line in time
		`{"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [0, 1, 2]}`,
		`{"timestamp": 2, "input_length": 2000, "output_length": 5, "hash_ids": [0, 1, 2, 9]}`,
		`{"timestamp": 3, "input_length": 600, "output_length": 5}`,                     // no ids
		`{"timestamp": 5, "input_length": 700, "output_length": 5, "hash_ids": [0, 4]}`) // reads block 0 only
	src := mustReadTrace(t, traceScenario(3, "en"), path, TraceSpec{Format: FormatMooncake})
	got := map[float64][2]int32{}
	for _, ss := range src.Sessions {
		for _, tr := range ss.Turns {
			got[tr.AtMs] = [2]int32{tr.Blocks, tr.ReusedBlocks}
		}
	}
	want := map[float64][2]int32{0: {3, 0}, 1: {3, 3}, 2: {4, 3}, 3: {0, 0}, 5: {2, 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("blocks and reused blocks by request time (-want +got):\n%s", diff)
	}
}
