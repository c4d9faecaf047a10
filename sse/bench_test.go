package sse

import "testing"

// repeating serves one message over and over, as a server streaming forever would.
type repeating struct {
	msg []byte
	off int
}

func (r *repeating) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.msg[r.off:])
		n += c
		r.off = (r.off + c) % len(r.msg)
	}
	return n, nil
}

// BenchmarkReadContentChunk: one streamed chat chunk of content (the same chunk as
// bench.BenchmarkSSEReadChunk), the path every token takes.
func BenchmarkReadContentChunk(b *testing.B) {
	one := "data: {\"id\":\"chatcmpl-1a2b3c\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"},\"finish_reason\":null}]}\n\n"
	rd := NewReader(&repeating{msg: []byte(one)}, 0)
	b.SetBytes(int64(len(one)))
	b.ReportAllocs()
	for b.Loop() {
		ev, err := rd.Next()
		if err != nil || ev.Content != " word" {
			b.Fatal(err, ev.Content)
		}
	}
}

// BenchmarkReadToolCallChunk: one vLLM chunk carrying a tool call's argument piece.
func BenchmarkReadToolCallChunk(b *testing.B) {
	one := "data: {\"id\":\"chatcmpl-1a2b3c\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"city\\\": \"}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
	rd := NewReader(&repeating{msg: []byte(one)}, 0)
	b.SetBytes(int64(len(one)))
	b.ReportAllocs()
	for b.Loop() {
		ev, err := rd.Next()
		if err != nil || ev.ToolCall != `"city": ` {
			b.Fatal(err, ev.ToolCall)
		}
	}
}
