package live

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestLine(t *testing.T) {
	s := Snapshot{Stage: 2, Stages: 3, Phase: "measuring", Elapsed: 15 * time.Second, Duration: 30 * time.Second,
		OK: 120, Errors: 3, RateLimited: 2, Cancel: 1, Active: 48, OutTokPerSec10s: 812.4, TTFTP95Ms10s: 231.5, ITLP95Ms10s: 27.25}
	got := Line(s, true)
	want := "stage 2/3 measuring [##########..........] 15s/30s | ok 120, errors 4, 429 2 | sessions 48 | last 10 s: 812.4 out tok/s, TTFT p95 231.5 ms, ITL p95 27.2 ms"
	if got != want {
		t.Fatalf("\ngot  %q\nwant %q", got, want)
	}
	if plain := Line(s, false); strings.Contains(plain, "[") {
		t.Fatalf("a log line has no bar: %q", plain)
	}
}

func TestDisplayLinesClearTheStatusLine(t *testing.T) {
	var buf bytes.Buffer
	p := &Display{out: &buf, terminal: true, stop: make(chan struct{}), done: make(chan struct{})}
	close(p.done)
	p.draw("stage 1/1 warmup")
	p.Println(&buf, "stage 01/01 done")
	p.draw("stage 1/1 measuring")
	p.Stop()
	want := "\r\033[Kstage 1/1 warmup\r\033[Kstage 01/01 done\n\r\033[Kstage 1/1 measuring\r\033[K"
	if buf.String() != want {
		t.Fatalf("\ngot  %q\nwant %q", buf.String(), want)
	}
}
