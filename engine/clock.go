// Package engine drives a scenario's stages against a server: one goroutine per session, real history,
// think time, warmup, duration and drain, and one record per request. Each load.mode is a loadModel
// in its own file, registered from there (load_concurrency.go, load_arrival_rate.go,
// load_request_rate.go, load_replay.go, load_batch.go; the registry is load.go): when to start
// sessions is the model's (the open-loop ones precompute a Schedule, schedule.go, and share one
// dispatcher, load_open.go); sending them is runSession's, the same for all.
package engine

import (
	"crypto/rand"
	"time"
)

// clock turns monotonic readings into wall-clock epoch nanoseconds from a single anchor, so record
// times never go backwards and latencies never mix in wall-clock steps (NTP, DST).
type clock struct {
	anchor   time.Time // carries a monotonic reading
	anchorNs int64
}

func newClock() clock {
	now := time.Now()
	return clock{anchor: now, anchorNs: now.UnixNano()}
}

// ns is t as epoch nanoseconds: the anchor's wall time plus the monotonic time since the anchor.
func (c clock) ns(t time.Time) int64 { return c.anchorNs + int64(t.Sub(c.anchor)) }

// at turns epoch nanoseconds from ns back into a time with a monotonic reading.
func (c clock) at(ns int64) time.Time { return c.anchor.Add(time.Duration(ns - c.anchorNs)) }

// newUUID returns a random RFC 4122 version 4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	out := make([]byte, 36)
	j := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j], out[j+1] = hex[c>>4], hex[c&0xf]
		j += 2
	}
	return string(out)
}
