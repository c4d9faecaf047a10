package engine

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plload/plload/metrics"
)

// TestApportion: whole numbers in proportion that add up to n, the remainders to the largest (the
// earlier on a tie), nothing to a weight of 0.
func TestApportion(t *testing.T) {
	for _, tc := range []struct {
		n       int
		weights []int
		want    []int
	}{
		{12, []int{0, 12}, []int{0, 12}},
		{12, []int{2, 5}, []int{3, 9}}, // 3.43 and 8.57
		{3, []int{1, 1, 1, 1}, []int{1, 1, 1, 0}},
		{2, []int{0, 3, 0, 3}, []int{0, 1, 0, 1}},
		{7, []int{1}, []int{7}},
	} {
		sum := 0
		for _, w := range tc.weights {
			sum += w
		}
		if diff := cmp.Diff(tc.want, apportion(tc.n, tc.weights, sum)); diff != "" {
			t.Errorf("apportion(%d, %v) (-want +got):\n%s", tc.n, tc.weights, diff)
		}
	}
}

// TestChunkTokens: the server's tokens beyond one per event go to the events whose text the client
// counts as several tokens, in proportion, but never more to a chunk than the client counts in it;
// reasoning the server counted but did not stream is taken out first; with no surplus, no such
// event or one event only, every event is one token (nil).
// Catches: an o-series answer's 500 unstreamed reasoning tokens (or a counted stop token) spread
// over the few chunks the client counts as 2 tokens, each then hundreds of tiny gaps.
func TestChunkTokens(t *testing.T) {
	// A stand-in tokenizer: one token per space-separated word.
	words := func(s string) int { return len(strings.Fields(s)) }
	letters := func(n int) []string { // n one-token events
		out := make([]string, n)
		for i := range out {
			out[i] = string(rune('a' + i))
		}
		return out
	}
	twoLong := letters(20)
	twoLong[3], twoLong[12] = "d e", "m n" // two chunks of 2 tokens: 22 tokens in 20 events
	for _, tc := range []struct {
		name              string
		events            []string
		total, unstreamed int
		want              []int
	}{
		{"a tool call's arguments in one chunk", []string{"Hi", "a b c d e f g h i j k l m"}, 14, 0, []int{1, 13}},
		{"the surplus the client's counts explain", []string{"x", "a b c", "y", "d e f g"}, 7, 0, []int{1, 2, 1, 3}},
		{"a surplus past the client's counts: each chunk at most its own count", []string{"x", "a b c", "y", "d e f g"}, 12, 0, []int{1, 3, 1, 4}},
		{"a counted stop token beyond the client's counts", []string{"a b", "c"}, 4, 0, []int{2, 1}},
		{"as many tokens as events", []string{"a b", "c d"}, 2, 0, nil},
		{"fewer tokens than events", []string{"a", "b", "c"}, 2, 0, nil},
		{"a surplus but no long chunk: one each", []string{"a", "b", "c"}, 5, 0, nil},
		{"one event", []string{"a b c"}, 3, 0, nil},
		{"o-series: 500 reasoning tokens not streamed, 20 one-token chunks", letters(20), 520, 500, nil},
		{"o-series and a stop token: 20 one-token chunks", letters(20), 521, 500, nil},
		{"o-series: 500 reasoning tokens not streamed, two 2-token chunks", twoLong, 522, 500,
			[]int{1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &streamRead{}
			for _, e := range tc.events {
				st.tokens = append(st.tokens, time.Time{})
				st.text = append(st.text, e...)
				st.ends = append(st.ends, len(st.text))
			}
			if diff := cmp.Diff(tc.want, st.chunkTokens(tc.total, tc.unstreamed, words)); diff != "" {
				t.Fatalf("chunkTokens (-want +got):\n%s", diff)
			}
		})
	}
}

// TestITLWeighsAChunkByItsTokens: a server that streams a one-token chunk and then a tool call's
// 13 tokens in one chunk, with usage completion_tokens 14 (llama.cpp's tool calls): the records say
// chunk_tokens [1, 13] beside their one chunk gap, and the stage's pooled ITL has 13 values per
// request whose mean is its TPOT; the chunk gaps stay in inter_chunk_latency and inter_chunk_ms.
// Without usage the client cannot know, and every chunk is one token.
// Catches: an ITL pooled over chunks, 13 × TPOT for this traffic.
func TestITLWeighsAChunkByItsTokens(t *testing.T) {
	call := `{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get_weather",` +
		`"arguments":"{\"city\": \"Paris\", \"unit\": \"celsius\", \"days\": 3}"}}]}}]}`
	for _, tc := range []struct {
		name     string
		usage    string
		want     []int
		itlCount int // pooled ITL values per request
	}{
		{"usage says 14 tokens", `data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":14,"total_tokens":23}}` + "\n\n", []int{1, 13}, 13},
		{"no usage", "", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := faultServer(t, func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"))
				http.NewResponseController(w).Flush() // two reads, so the chunk gap is the server's
				w.Write([]byte("data: " + call + "\n\n" + tc.usage + "data: [DONE]\n\n"))
			})
			sum := batchOfFour(t, base, func(r *metrics.Record) error {
				if diff := cmp.Diff(tc.want, r.ChunkTokens); diff != "" || len(r.InterChunkLatency) != 1 {
					return fmt.Errorf("chunk_tokens (-want +got):\n%s\n%d chunk gaps, want 1", diff, len(r.InterChunkLatency))
				}
				return nil
			})
			n := sum.Throughput.Requests
			if n == 0 || sum.ITL.N != n*tc.itlCount {
				t.Fatalf("pooled ITL over %d values for %d requests, want %d each", sum.ITL.N, n, tc.itlCount)
			}
			if tc.want == nil {
				if sum.InterChunk != nil {
					t.Fatalf("one token a chunk, yet inter_chunk_ms %+v", sum.InterChunk)
				}
				return
			}
			// Every request has 14 tokens and a one-token first chunk: the pooled mean is the mean TPOT.
			if d := sum.ITL.Mean - sum.TPOT.Mean; d > 1e-9 || d < -1e-9 || sum.InterChunk == nil || sum.InterChunk.N != n {
				t.Fatalf("ITL mean %v, TPOT mean %v; inter-chunk %+v", sum.ITL.Mean, sum.TPOT.Mean, sum.InterChunk)
			}
		})
	}
}

// TestUnstreamedReasoningLeavesITLAtTheChunkGaps: a server that streams 20 content chunks and counts
// 500 reasoning tokens it never streamed (OpenAI's o-series: reasoning_tokens 500 in usage). With 20
// one-token chunks (completion_tokens 520) the records have no chunk_tokens and the pooled ITL is
// the 19 chunk gaps of each request, no more; with one chunk of several words and a token more
// (521), that chunk alone carries 2 and each request pools 20 gaps. The 500 stay in
// output_sequence_length and reasoning_token_count.
// Catches: the 500 tokens spread over the chunks the client counts as several tokens, one chunk gap
// cut into hundreds and the ITL near 0.
func TestUnstreamedReasoningLeavesITLAtTheChunkGaps(t *testing.T) {
	for _, tc := range []struct {
		name        string
		long        bool // the sixth chunk is several words
		completion  int
		chunkTokens []int
		pooled      int // pooled ITL values per request
	}{
		{"20 one-token chunks", false, 520, nil, 19},
		{"a chunk of several words", true, 521, []int{1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := faultServer(t, func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				rc := http.NewResponseController(w)
				for i := range 20 {
					text := string(rune('a' + i))
					if tc.long && i == 5 {
						text = "alpha beta gamma delta"
					}
					fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", text)
					rc.Flush() // separate writes, so the chunk gaps are the server's
				}
				fmt.Fprintf(w, `data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":%d,"total_tokens":%d,`+
					`"completion_tokens_details":{"reasoning_tokens":500}}}`+"\n\ndata: [DONE]\n\n", tc.completion, tc.completion+9)
			})
			type counts struct {
				ChunkTokens                  []int
				Gaps, OSL, Reasoning, Output int
			}
			want := counts{tc.chunkTokens, 19, tc.completion, 500, tc.completion - 500}
			sum := batchOfFour(t, base, func(r *metrics.Record) error {
				got := counts{r.ChunkTokens, len(r.InterChunkLatency), r.OutputSequenceLength.V, r.ReasoningTokenCount.V, r.OutputTokenCount.V}
				if diff := cmp.Diff(want, got); diff != "" {
					return fmt.Errorf("record (-want +got):\n%s", diff)
				}
				return nil
			})
			if n := sum.Throughput.Requests; n == 0 || sum.ITL.N != n*tc.pooled {
				t.Fatalf("pooled ITL over %d values for %d requests, want %d each", sum.ITL.N, n, tc.pooled)
			}
			if tc.chunkTokens == nil && sum.InterChunk != nil {
				t.Fatalf("one token a chunk: the pooled ITL is the chunk gaps, yet inter_chunk_ms %+v", sum.InterChunk)
			}
		})
	}
}

// batchOfFour runs a batch of 4 single-turn requests against base, checks each record with check,
// and returns the stage's summary.
func batchOfFour(t *testing.T, base string, check func(*metrics.Record) error) *metrics.StageSummary {
	t.Helper()
	text := scenarioYAML(base, "  turns: {dist: constant, value: 1}\n  user_input_tokens: {min: 5, max: 10}\n  max_output_tokens: {min: 20, max: 30}",
		"  mode: batch\n  max_in_flight: 2\n  stages:\n    - {requests: 4}")
	res, dir, err := runScenario(t, context.Background(), text)
	if err != nil || res[0].Errors != 0 {
		t.Fatalf("run: %v, %d errors", err, res[0].Errors)
	}
	path := filepath.Join(dir, "stage_01", "profile_export.jsonl")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := metrics.ReadRecords(f, check); err != nil {
		t.Fatal(err)
	}
	sum, err := metrics.SummarizeFile(path, metrics.StageInput{Batch: true, T0Ns: metrics.Some(res[0].T0Ns), NeverStarted: -1, Duration: time.Hour}, false)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
