package metrics

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/google/go-cmp/cmp"
)

// TestTokenGaps: a gap g before a chunk of k tokens is k values g/k; the first chunk's tokens add
// nothing (their wait is TTFT); without chunk_tokens, or with a list that does not fit the gaps, the
// gaps are the chunk gaps as they are.
func TestTokenGaps(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gaps   []float64
		chunks []int
		want   []float64
	}{
		{"one token a chunk: the gaps as they are", []float64{10, 20}, nil, []float64{10, 20}},
		{"a 13-token chunk after 1 token", []float64{130}, []int{1, 13}, []float64{10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10}},
		{"the first chunk's tokens add no gap", []float64{30, 8}, []int{5, 3, 1}, []float64{10, 10, 10, 8}},
		{"counts that do not fit the gaps are not used", []float64{30, 8}, []int{1, 3}, []float64{30, 8}},
		{"no gaps", nil, []int{4}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Record{InterChunkLatency: tc.gaps, ChunkTokens: tc.chunks}
			if diff := cmp.Diff(tc.want, r.TokenGaps()); diff != "" {
				t.Fatalf("TokenGaps (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(append([]float64{-1}, tc.want...), r.AppendTokenGaps([]float64{-1})); diff != "" {
				t.Fatalf("AppendTokenGaps (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPooledITLPerToken: llama.cpp's 14-token tool call in two chunks, one token then 13 after a
// 122 ms gap: the pooled ITL is 13 values of 122/13 ms, so its mean is TPOT's (the first chunk
// carried one token), its percentiles are over tokens, and an ITL limit of 50 ms passes, where the
// one chunk gap of 122 ms failed it. The chunk gaps as they are stay in inter_chunk_ms; a stage
// whose chunks all carried one token has none (itl_ms is the same). The windows of the absorption
// test are judged on the same per-token values.
// Catches: an ITL pooled over chunks (mean 122 ms against a TPOT of 9.4 ms).
func TestPooledITLPerToken(t *testing.T) {
	llama := ok(2, 100, []float64{122}, 14)
	llama.ChunkTokens = []int{1, 13}
	in := input()
	s := summary(in, llama, ok(3, 100, []float64{122}, 14)) // the same answer without chunk_tokens
	if s.ITL.N != 14 || s.InterChunk == nil || s.InterChunk.N != 2 {
		t.Fatalf("pooled ITL over %d values (want 13 + 1), inter-chunk %+v (want 2 gaps)", s.ITL.N, s.InterChunk)
	}
	near(t, "inter-chunk mean", s.InterChunk.Mean, 122)

	s = summary(in, llama, llama)
	near(t, "ITL mean", s.ITL.Mean, 122.0/13)
	near(t, "TPOT mean", s.TPOT.Mean, 122.0/13)
	near(t, "ITL p99", s.ITL.P99, 122.0/13)
	if s.ITL.N != 26 || s.InterChunk == nil || s.InterChunk.N != 2 || s.InterChunk.P50 != 122 {
		t.Fatalf("ITL over %d values, want 26; inter-chunk %+v, want 2 gaps of 122", s.ITL.N, s.InterChunk)
	}
	if s.SLO.Verdict != SLOPass {
		t.Fatalf("SLO %+v: an ITL p95 of 9.4 ms fails a 50 ms limit", s.SLO)
	}

	plain := summary(in, ok(2, 100, []float64{10, 10}, 3))
	if plain.InterChunk != nil || plain.ITL.N != 2 {
		t.Fatalf("one token a chunk: inter-chunk %+v (want absent), ITL over %d", plain.InterChunk, plain.ITL.N)
	}

	in.AbsorbWindow = 20 * time.Second // one window holds them all
	var recs []*Record
	for start := 2.0; start < 8; start++ {
		r := ok(start, 100, []float64{122}, 14)
		r.ChunkTokens = []int{1, 13}
		recs = append(recs, r)
	}
	s = summary(in, recs...)
	if s.Absorb == nil || len(s.Absorb.Windows) != 1 || s.Absorb.Windows[0].State != WindowMet {
		t.Fatalf("absorption windows %+v: want one, met (an ITL judged per chunk breaks it)", s.Absorb)
	}
}

// TestChunkTokensRoundTrip: chunk_tokens is written as a list of whole numbers after the gaps and
// read back; a list that is not whole numbers ≥ 1, one per token event, is an error naming it.
func TestChunkTokensRoundTrip(t *testing.T) {
	r := ok(2, 100, []float64{30, 8}, 9)
	r.ChunkTokens = []int{5, 3, 1}
	line := r.AppendJSON(nil)
	if !bytes.Contains(line, []byte(`"chunk_tokens":{"value":[5,3,1],"unit":"tokens"}`)) {
		t.Fatalf("written: %s", line)
	}
	back, err := ParseRecord(bytes.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r.ChunkTokens, back.ChunkTokens); diff != "" {
		t.Fatalf("read back (-want +got):\n%s", diff)
	}
	for value, want := range map[string]string{
		"[5,3]":     "2 counts for 3 token events",
		"[5,0,1]":   "item 1 is 0",
		"[5,2.5,1]": "item 1 is 2.5",
		`[5,"x",1]`: "metrics.chunk_tokens",
	} {
		bad := strings.Replace(string(line), "[5,3,1]", value, 1)
		if _, err := ParseRecord([]byte(strings.TrimSpace(bad))); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("chunk_tokens %s: error %v, want one saying %q", value, err, want)
		}
	}
}

// TestChunkGapsAfterHDR: a stage whose pooled ITL already went to its HDR histogram when the first
// record with chunk_tokens comes starts its chunk gaps from a copy of that histogram (until then the
// two are the same), and the two go on apart.
func TestChunkGapsAfterHDR(t *testing.T) {
	s := NewStage(input())
	s.itl.hdr = hdrhistogram.New(1, int64(time.Hour), 3)
	for range 5 {
		s.itl.hdr.RecordValue(nsOf(10))
	}
	r := &Record{InterChunkLatency: []float64{60}, ChunkTokens: []int{1, 6}}
	s.addRecordGaps(r)
	if s.chunkGaps == nil || s.chunkGaps.hdr == nil || s.chunkGaps.hdr.TotalCount() != 6 || s.itl.hdr.TotalCount() != 11 {
		t.Fatalf("chunk gaps %+v, pooled ITL over %d values: want 5 + 1 chunk gaps and 5 + 6 token gaps", s.chunkGaps, s.itl.hdr.TotalCount())
	}
	if d := s.chunkGaps.dist(); d.N != 6 || d.Max < 59.9 {
		t.Fatalf("chunk gaps %+v: want 6 up to 60 ms", d)
	}
}
