package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/timingtier"
)

func num(t *testing.T, v any) int64 {
	t.Helper()
	n, err := v.(json.Number).Int64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestOutageIsBackedOffAndRecovered: a closed-loop stage of 64 sessions across a 5 s outage (the
// server gone, its port refusing) sends at most 1,000 requests while it lasts — each slot backs off,
// doubling up to 1.6 s — is back to full load within 2 s of the server's return, and stage results
// list the outage with its kind. Without the backoff, each slot starts its next session at once:
// thousands of refused connections a second. How soon full load is back is a timing claim: the
// timing tier judges the 2 s (timingtier); by default it must come back before the stage ends.
func TestOutageIsBackedOffAndRecovered(t *testing.T) {
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.TPS = 200*time.Millisecond, 1000
	m, err := mock.Start(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	addr := m.Addr()
	var down, up time.Time
	// The outage begins once the stage is under way: every slot has had an answer.
	var answered atomic.Int64
	underWay := make(chan struct{})
	restarted := make(chan *mock.Running, 1)
	go func() {
		select {
		case <-underWay:
		case <-time.After(30 * time.Second):
			t.Errorf("no 64 answers within 30 s of the stage's start (%d): the outage starts anyway", answered.Load())
		}
		down = time.Now()
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		m.Close(closeCtx)
		cancel()
		time.Sleep(5 * time.Second) // not a wait for anything: the outage's length
		up = time.Now()
		m2, err := mock.Start(cfg, addr)
		if err != nil {
			t.Errorf("restarting the mock on %s: %v", addr, err)
		}
		restarted <- m2
	}()
	session := "  turns: 20\n  user_input_tokens: 5\n  max_output_tokens: 10\n  think_time: 0s"
	text := scenarioYAML("http://"+addr+"/v1", session, "  mode: concurrency\n  drain_timeout: 5s\n  stages:\n    - {concurrency: 64, duration: 11s}")
	res, dir, err := runScenarioConfig(t, context.Background(), text, func(c *Config) {
		c.StopWhen = func(_ int, rec *metrics.Record) string {
			if rec.Error == nil && answered.Add(1) == 64 {
				close(underWay)
			}
			return ""
		}
	})
	if m2 := <-restarted; m2 != nil {
		t.Cleanup(func() { m2.Close(context.Background()) })
	}
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	var during, refused int
	type span struct{ start, end int64 }
	var okAfter []span
	for _, rec := range readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl")) {
		md := rec["metadata"].(map[string]any)
		start := num(t, md["request_start_ns"])
		if start >= down.UnixNano() && start < up.UnixNano() {
			during++
			if e, ok := rec["error"].(map[string]any); ok && strings.Contains(fmt.Sprint(e["message"]), "refused") {
				refused++
			}
		}
		if rec["error"] == nil && start >= up.UnixNano() {
			okAfter = append(okAfter, span{start, num(t, md["request_end_ns"])})
		}
	}
	// Full load again: the first moment 60 of the 64 slots have a successful request in flight
	// (a slot is between two turns for microseconds now and then).
	sort.Slice(okAfter, func(i, j int) bool { return okAfter[i].start < okAfter[j].start })
	var back time.Duration = -1
	for i, s := range okAfter {
		active := 0
		for _, o := range okAfter[:i+1] {
			if o.end > s.start {
				active++
			}
		}
		if active >= 60 {
			back = time.Duration(s.start - up.UnixNano())
			break
		}
	}
	t.Logf("%d requests in all; %d started during the %.1f s outage (%d refused); full load %v after the server returned; outages %+v",
		r.Issued, during, up.Sub(down).Seconds(), refused, back, r.Outages)
	if during > 1000 || refused == 0 {
		t.Errorf("%d requests during the outage (want ≤ 1000, some refused: %d)", during, refused)
	}
	if back < 0 {
		t.Errorf("never back to full load after the server returned")
	} else if timingtier.Judge(t, "back to full load within 2 s of the server's return") && back > 2*time.Second {
		t.Errorf("back to full load %v after the server returned (want ≤ 2 s)", back)
	}
	found := false
	for _, o := range r.Outages {
		if o.Kind == "refused" && o.To.Sub(o.From) > 3*time.Second && strings.Contains(o.FirstMessage, "refused") {
			found = true
		}
	}
	if !found || r.Aborted != "" {
		t.Errorf("outages %+v, aborted %q: want one refused outage of over 3 s and no abort", r.Outages, r.Aborted)
	}
}

// TestDeadTargetAbortsTheStage: with nothing listening, every request is refused; after
// load.abort_after the stage stops as failed, saying since when and why, and later stages do not run.
func TestDeadTargetAbortsTheStage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a port nobody listens on
	check := leakCheck(t)
	text := scenarioYAML("http://"+addr+"/v1", shortSessions,
		"  mode: concurrency\n  drain_timeout: 5s\n  abort_after: 1s\n  stages:\n    - {concurrency: 16, duration: 30s}\n    - {concurrency: 32, duration: 30s}")
	began := time.Now()
	res, _, err := runScenario(t, context.Background(), text)
	took := time.Since(began)
	check()
	if err == nil || errors.Is(err, ErrInterrupted) || len(res) != 1 {
		t.Fatalf("err %v, %d stage results: want the run stopped after stage 1", err, len(res))
	}
	r := res[0]
	t.Logf("%v: %d requests in %v; %s", err, r.Issued, took, r.Aborted)
	if !strings.Contains(r.Aborted, "target unreachable since") || !strings.Contains(r.Aborted, "refused") {
		t.Errorf("aborted %q", r.Aborted)
	}
	// 1 s of refusals, then the abort (checked every 100 ms); the RTT probe is first. Each of 16 slots
	// backs off from 50 ms: about 5 requests each in the first second.
	if took > 5*time.Second || r.Issued > 16*8 || r.Issued < 16 {
		t.Errorf("%d requests in %v", r.Issued, took)
	}
	if r.InterruptNs == 0 {
		t.Error("the stage's window does not end where it was stopped")
	}
}

func TestBackoffDoublesCapsAndResets(t *testing.T) {
	refused := &exchange{}
	refused.rec.Error = errorRecordConnect()
	var b backoff
	prev := time.Duration(0)
	for i := range 12 {
		w := b.after(refused)
		step := min(backoffBase<<i, backoffMax)
		if w < step*3/4 || w > step {
			t.Fatalf("wait %d: %v, want within [¾, 1] of %v", i, w, step)
		}
		if i > 0 && step < backoffMax && w <= prev/2 {
			t.Fatalf("wait %d did not grow: %v after %v", i, w, prev)
		}
		prev = w
	}
	if w := b.after(&exchange{}); w != 0 {
		t.Fatalf("a success waits %v", w)
	}
	if w := b.after(refused); w > backoffBase {
		t.Fatalf("after a success the backoff starts over; got %v", w)
	}
	limited := &exchange{retryAfter: 3 * time.Second}
	limited.rec.Error = errorRecordHTTP(429)
	if w := b.after(limited); w != 3*time.Second {
		t.Fatalf("a 429 with Retry-After 3 s waits %v", w)
	}
	limited.retryAfter = time.Hour
	if w := b.after(limited); w != retryAfterMax {
		t.Fatalf("Retry-After 1 h waits %v, want the cap %v", w, retryAfterMax)
	}
	b = backoff{}
	notFound := &exchange{}
	notFound.rec.Error = errorRecordHTTP(404)
	if w := b.after(notFound); w < backoffBase*3/4 || w > backoffBase {
		t.Fatalf("a 404 waits %v: a wrong URL must not be hammered either", w)
	}
	cancelled := &exchange{}
	cancelled.rec.WasCancelled, cancelled.rec.Error = true, &metrics.RecordError{Type: metrics.ErrTypeCancelled}
	if w := b.after(cancelled); w != 0 {
		t.Fatalf("a cancelled request waits %v", w)
	}
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{"2": 2 * time.Second, "0.5": 500 * time.Millisecond, "": 0, "soon": 0, "-3": 0,
		"Wed, 02 Dec 2026 10:00:07 GMT": 7 * time.Second, "Wed, 02 Dec 2026 09:00:00 GMT": 0} {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", in, got, want)
		}
	}
}

func errorRecordConnect() *metrics.RecordError {
	return &metrics.RecordError{Type: metrics.ErrTypeConnect, Message: "cannot connect to 127.0.0.1:9: connection refused"}
}

func errorRecordHTTP(code int) *metrics.RecordError {
	return &metrics.RecordError{Code: metrics.Some(code), Type: "HTTP", Message: "x"}
}

// TestStopWhenEndsTheStageEarly: a StopWhen that answers on the fifth finished request ends the
// stage's issuing there, the stage drains, its window ends at the stop, and the next stage runs.
func TestStopWhenEndsTheStageEarly(t *testing.T) {
	m, _ := startMock(t, func(c *mock.Config) { c.TTFT, c.TPS = 20*time.Millisecond, 500 })
	text := scenarioYAML(m, shortSessions, "  mode: concurrency\n  drain_timeout: 5s\n  stages:\n    - {concurrency: 2, duration: 20s}\n    - {concurrency: 2, duration: 1s}")
	var seen atomic.Int64
	began := time.Now()
	res, _, err := runScenarioConfig(t, context.Background(), text, func(c *Config) {
		c.StopWhen = func(stage int, _ *metrics.Record) string {
			if stage == 1 && seen.Add(1) == 5 {
				return "five is enough"
			}
			return ""
		}
	})
	if err != nil || len(res) != 2 {
		t.Fatalf("err %v, %d stages; want both stages run", err, len(res))
	}
	r := res[0]
	t.Logf("stage 1: %d requests, stopped %q after %v", r.Issued, r.Stopped, time.Since(began))
	if r.Stopped != "five is enough" || r.InterruptNs == 0 || r.Partial || time.Since(began) > 10*time.Second {
		t.Fatalf("stage 1: stopped %q, interrupt %d, partial %v after %v", r.Stopped, r.InterruptNs, r.Partial, time.Since(began))
	}
	if r.Issued > 5+2+2 { // the five, what was in flight, and at most one more turn per session
		t.Errorf("stage 1 issued %d requests after the stop was asked for on the fifth", r.Issued)
	}
	if res[1].Stopped != "" || res[1].OK == 0 {
		t.Errorf("stage 2: stopped %q, %d ok", res[1].Stopped, res[1].OK)
	}
}
