package bench

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/sse"
)

// The hot paths of a run, one benchmark each (figures in bench/README.md):
//
//	go test ./bench -run '^$' -bench . -benchmem
//
// The engine's CPU per streamed chunk is measured against a mock in another process:
// go test ./engine -run '^$' -bench Engine1000 -benchtime 1x.

// repeating serves one chunk over and over, as a server streaming forever would.
type repeating struct {
	chunk []byte
	off   int
}

func (r *repeating) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.chunk[r.off:])
		n += c
		r.off = (r.off + c) % len(r.chunk)
	}
	return n, nil
}

// BenchmarkSSEReadChunk: reading and decoding one streamed chat chunk (ns and allocations per event).
func BenchmarkSSEReadChunk(b *testing.B) {
	one := "data: {\"id\":\"chatcmpl-1a2b3c\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"},\"finish_reason\":null}]}\n\n"
	rd := sse.NewReader(&repeating{chunk: []byte(one)}, 0)
	b.SetBytes(int64(len(one)))
	b.ReportAllocs()
	for b.Loop() {
		ev, err := rd.Next()
		if err != nil || ev.Content != " word" {
			b.Fatal(err, ev)
		}
	}
}

func record(start int64, gaps []float64) *metrics.Record {
	lat := 200.0
	for _, g := range gaps {
		lat += g
	}
	return &metrics.Record{XRequestID: "0b7c2b8e-6f0a-4c52-9d7e-3a1f2b4c5d6e", XCorrelationID: "c", ConversationID: "s01-000001",
		CreditIssuedNs: start, RequestStartNs: start, RequestEndNs: metrics.Some(start + int64(lat*1e6)),
		BenchmarkPhase: metrics.PhaseProfiling, TTFT: metrics.Some(200.0), RequestLatency: metrics.Some(lat),
		InterChunkLatency: gaps, OutputSequenceLength: metrics.Some(len(gaps) + 1), InputSequenceLength: metrics.Some(900),
		UsagePromptTokens: metrics.Some(900), UsageCompletionTokens: metrics.Some(len(gaps) + 1), UsageCachedTokens: metrics.Some(640)}
}

func gaps(n int) []float64 {
	g := make([]float64, n)
	for i := range g {
		g[i] = 20 + float64(i%7)/3
	}
	return g
}

// BenchmarkRecordEncode: one AIPerf record with 63 inter-chunk gaps to a JSON line.
func BenchmarkRecordEncode(b *testing.B) {
	r := record(1_800_000_000_000_000_000, gaps(63))
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = r.AppendJSON(buf[:0])
	}
}

// BenchmarkRecordParse: one such line back into a record (the reader's cost per record, one core).
func BenchmarkRecordParse(b *testing.B) {
	line := record(1_800_000_000_000_000_000, gaps(63)).AppendJSON(nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := metrics.ParseRecord(line); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStageSummaryPerRecord: the stage computation (window, percentiles, pooled ITL, SLO, cost)
// per record of 64 chunks, the summary of 1,000 records included.
func BenchmarkStageSummaryPerRecord(b *testing.B) {
	const t0 = int64(1_800_000_000_000_000_000)
	recs := make([]*metrics.Record, 1000)
	for i := range recs {
		recs[i] = record(t0+int64(time.Second)+int64(i)*int64(time.Millisecond), gaps(63))
	}
	in := metrics.StageInput{Warmup: time.Second, Duration: time.Minute, T0Ns: metrics.Some(t0), NeverStarted: -1,
		SLO: metrics.SLOLimits{TTFTP95Ms: 500, ITLP95Ms: 50, ErrorRateMax: 0.01}}
	b.ReportAllocs()
	for b.Loop() {
		s := metrics.NewStage(in)
		for _, r := range recs {
			s.Add(r)
		}
		if sum := s.Summary(); sum.Requests.Succeeded != len(recs) {
			b.Fatalf("%+v", sum.Requests)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
}

// BenchmarkLoopbackChunkFloor measures the floor under the engine's CPU per chunk: the bare cost of
// moving one SSE-sized chunk across a loopback TCP connection in Go, with no HTTP, SSE or records.
// Each op is a ping-pong — the server writes a 300-byte chunk, the client's blocked Read wakes
// through the netpoller and returns it, the client writes one byte back — so the process CPU per op
// covers two such deliveries; half of it is what receiving one chunk can cost at the least.
func BenchmarkLoopbackChunkFloor(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	chunk := make([]byte, 300)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		ack := make([]byte, 1)
		for {
			if _, err := c.Write(chunk); err != nil {
				return
			}
			if _, err := io.ReadFull(c, ack); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, len(chunk))
	cpu0 := engine.ProcessCPU()
	b.ResetTimer()
	for b.Loop() {
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(buf[:1]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((engine.ProcessCPU()-cpu0).Nanoseconds())/float64(b.N)/2/1000, "µs-CPU/delivery")
}
