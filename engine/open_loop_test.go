package engine

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/timingtier"
	"github.com/plload/plload/workload"
)

// sent is one record's times, in ns from the stage's t0.
type sent struct {
	intended, credit, start, end int64
	turn                         int
	conv                         string
}

// sentTimes reads a stage's records as times from its t0, sorted by intended time.
func sentTimes(t *testing.T, dir string, t0 int64) []sent {
	t.Helper()
	var out []sent
	for _, r := range readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl")) {
		md := r["metadata"].(map[string]any)
		s := sent{intended: integer(md["intended_start_ns"]) - t0, credit: integer(md["credit_issued_ns"]) - t0,
			start: integer(md["request_start_ns"]) - t0, end: integer(md["request_end_ns"]) - t0,
			turn: int(integer(md["turn_index"])), conv: md["conversation_id"].(string)}
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b sent) int { return int(a.intended - b.intended) })
	return out
}

// neverEarly fails when a request was issued or started before its intended time.
func neverEarly(t *testing.T, recs []sent) {
	t.Helper()
	for _, r := range recs {
		if r.credit < r.intended || r.start < r.intended {
			t.Fatalf("a request went early: intended %d ns, credit %d, start %d (from t0)", r.intended, r.credit, r.start)
		}
	}
}

func requestRateYAML(base, load string) string {
	return scenarioYAML(base, "  user_input_tokens: {min: 5, max: 10}\n  max_output_tokens: {min: 2, max: 4}", load)
}

// TestRequestRateSendsTheSchedule: every record of a request_rate stage is on the seed's
// precomputed schedule from t0 (the schedule's origin), none early, and a second run sends on the
// same schedule. In the timing tier (timingtier) also: small lag at low load, and the realized start
// gaps reproduce the schedule's rate within 2 % and CV within 5 %. The realized CV carries the
// client's wake-up jitter on top of the schedule's (CI saw 1.111 against 1.050 with other packages'
// tests sharing the 2 cores, 1.179 on a machine at load 5–11), so each run is judged and one of up to
// four runs must meet the bound: a dispatcher that does not send the schedule misses it in every run,
// a busy moment of the machine in one.
func TestRequestRateSendsTheSchedule(t *testing.T) {
	base, _ := startMock(t, nil)
	text := requestRateYAML(base, "  mode: request_rate\n  stages:\n    - {rate: 300, warmup: 200ms, duration: 2s}")
	var schedules [2][]time.Duration
	var misses []string // runs whose realized starts missed the schedule's rate or CV
	judge := timingtier.Judge(t, "send lag p50 ≤ 5 ms; realized rate within 2 % and CV within 5 % of the schedule's; arrivals never started only in the stage's last 50 ms")
	for run := 0; run < 4; run++ {
		if run >= 2 && (!judge || len(misses) < run) { // one of the runs so far met the bound, or none is judged
			break
		}
		var sc *workload.Scenario
		res, dir, err := runScenarioConfig(t, context.Background(), text, func(c *Config) { sc = c.Scenario })
		if err != nil {
			t.Fatal(err)
		}
		r := res[0]
		want := RequestSchedule(*sc.Load.Stages[0].Rate, sc.Load.Arrival, sc.Load.CV, 2200*time.Millisecond, sc.StageRNG(1))
		if run < 2 {
			schedules[run] = want.Offsets
		}
		recs := sentTimes(t, dir, r.T0Ns)
		if r.Scheduled != want.Len() || len(recs)+r.NotStarted != want.Len() || r.Errors != 0 {
			t.Fatalf("run %d: %d scheduled, %d records + %d never started, %d errors; the schedule holds %d", run, r.Scheduled, len(recs), r.NotStarted, r.Errors, want.Len())
		}
		neverEarly(t, recs)
		// The records are the schedule's arrivals, in order, each at its offset exactly; those the
		// stage ended before starting are its never started. Which ones those are depends on how late
		// the dispatcher woke (under -race, or on a busy machine, an arrival due 50 ms before the end
		// can be one): that they are the stage's last is the tier's to judge.
		lags := make([]float64, len(recs))
		var unsent []time.Duration
		next := 0
		for i, rec := range recs {
			for next < want.Len() && int64(want.Offsets[next]) < rec.intended {
				unsent = append(unsent, want.Offsets[next])
				next++
			}
			if next == want.Len() || int64(want.Offsets[next]) != rec.intended {
				t.Fatalf("run %d: request %d intended at %d ns from t0, not an arrival of the schedule", run, i, rec.intended)
			}
			next++
			lags[i] = float64(rec.credit - rec.intended)
		}
		unsent = append(unsent, want.Offsets[next:]...)
		if len(unsent) != r.NotStarted {
			t.Fatalf("run %d: %d arrivals of the schedule have no record, %d counted as never started", run, len(unsent), r.NotStarted)
		}
		for _, o := range unsent {
			if end := 2200 * time.Millisecond; judge && o < end-50*time.Millisecond {
				t.Errorf("run %d: the arrival at %v was never started, %v before the stage's end", run, o, end-o)
			}
		}
		slices.Sort(lags)
		if p50 := time.Duration(lags[len(lags)/2]); judge && p50 > 5*time.Millisecond {
			t.Errorf("run %d: send lag p50 %v at 300 req/s with free slots", run, p50)
		}
		starts := make([]time.Duration, len(recs))
		for i, rec := range recs {
			starts[i] = time.Duration(rec.start)
		}
		slices.Sort(starts)
		wantRate, wantCV := gapStats(want.Offsets)
		gotRate, gotCV := gapStats(starts)
		line := fmt.Sprintf("run %d: realized starts %.1f req/s, CV %.3f; the schedule %.1f req/s, CV %.3f", run, gotRate, gotCV, wantRate, wantCV)
		switch {
		case !judge:
			t.Log(line)
		case math.Abs(gotRate-wantRate)/wantRate > 0.02 || math.Abs(gotCV-wantCV)/wantCV > 0.05:
			misses = append(misses, line)
			t.Log(line + ": outside 2 %, 5 %")
		}
	}
	if judge && len(misses) == 4 {
		t.Errorf("realized starts missed the schedule's rate (2 %%) or CV (5 %%) in every run:\n%s", strings.Join(misses, "\n"))
	}
	// One seed, one schedule: both runs drew the same offsets, and each sent its records at them.
	if diff := cmp.Diff(schedules[0], schedules[1]); diff != "" {
		t.Fatalf("two runs of one seed drew different schedules:\n%s", diff)
	}
}

// TestRequestRateRampCounts: a ramp of constant-gap arrivals (0 → 400 req/s over 1.5 s, then held)
// starts, in each 250 ms window, the ramp's integral over it — within two requests. A dispatcher woken
// a few ms late on a busy machine moves a request or two across a window's edge (CI saw 73 against
// 75.0), so one of up to three runs must meet the bound in every window: a wrong ramp misses in all.
// When the requests were sent is a timing claim, which the timing tier judges (timingtier); by default
// the same count is taken of their intended times, which are the schedule's whatever the machine (the
// arrivals still unsent at the stage's end are its last).
func TestRequestRateRampCounts(t *testing.T) {
	judge := timingtier.Judge(t, "requests sent in each 250 ms window within 2 of the ramp's integral")
	base, _ := startMock(t, nil)
	text := requestRateYAML(base, "  mode: request_rate\n  arrival: constant\n  stages:\n    - {rate: {from: 0, to: 400, over: 1500ms}, duration: 2s}")
	rate := workload.Rate{From: 0, To: 400, Over: workload.Duration(1500 * time.Millisecond)}
	lambda := func(t time.Duration) float64 { // ∫ rate, closed form
		if t <= rate.Over.D() {
			return 400 / 1.5 * t.Seconds() * t.Seconds() / 2
		}
		return 300 + 400*(t-rate.Over.D()).Seconds()
	}
	var misses []string
	for run := range 3 {
		res, dir, err := runScenario(t, context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		recs := sentTimes(t, dir, res[0].T0Ns)
		const w = 250 * time.Millisecond
		missed := false
		for from := time.Duration(0); from < 2*time.Second; from += w {
			n := 0
			for _, r := range recs {
				at := r.intended
				if judge {
					at = r.credit
				}
				if at >= int64(from) && at < int64(from+w) {
					n++
				}
			}
			if !judge && from+w == 2*time.Second {
				n += res[0].NotStarted // the schedule's last arrivals, due before the end, that a late dispatcher left unsent
			}
			if want := lambda(from+w) - lambda(from); math.Abs(float64(n)-want) > 2 {
				misses = append(misses, fmt.Sprintf("run %d [%v, %v): %d requests sent, the ramp's integral is %.1f", run, from, from+w, n, want))
				missed = true
			}
		}
		if !missed {
			if len(misses) > 0 {
				t.Logf("met in run %d after: %s", run, strings.Join(misses, "; "))
			}
			return
		}
	}
	t.Errorf("every run missed the ramp:\n%s", strings.Join(misses, "\n"))
}

// TestMaxInFlightQueuesRequests: at 200 req/s against answers that take ~100 ms, max_in_flight 4
// is never exceeded (overlap of the records' [request_start, request_end]); requests that found every
// slot taken waited — kept, their intended time the schedule's, their lag growing — and those still
// queued at the stage's end are counted as never started, so records + never started = scheduled.
func TestMaxInFlightQueuesRequests(t *testing.T) {
	base, _ := startMock(t, func(c *mock.Config) { c.TTFT = 100 * time.Millisecond })
	text := requestRateYAML(base, "  mode: request_rate\n  max_in_flight: 4\n  stages:\n    - {rate: 200, duration: 1s}")
	res, dir, err := runScenario(t, context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	recs := sentTimes(t, dir, r.T0Ns)
	var edges []edge
	lagged := 0
	for _, rec := range recs {
		edges = append(edges, edge{rec.start, 1}, edge{rec.end, -1})
		if rec.credit-rec.intended > int64(50*time.Millisecond) {
			lagged++
		}
	}
	most := mostOpen(edges)
	if most > 4 || most < 3 {
		t.Errorf("%d requests in flight at most, max_in_flight 4", most)
	}
	if r.WaitedForSlot == 0 || lagged == 0 || r.NotStarted == 0 || len(recs)+r.NotStarted != r.Scheduled {
		t.Errorf("%d waited for a slot, %d sent > 50 ms late, %d records + %d never started of %d scheduled", r.WaitedForSlot, lagged, len(recs), r.NotStarted, r.Scheduled)
	}
	neverEarly(t, recs)
}

// writeTrace writes a trace file and returns its path.
func writeTrace(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReplaySendsTheTracesTimes: a bursty Mooncake trace (bursts of five requests at one
// millisecond) is replayed at its own times × time_scale from t0 — intended_start_ns is the trace's
// time exactly — never early, every request once; time_scale 0.5 halves every offset.
func TestReplaySendsTheTracesTimes(t *testing.T) {
	var trace strings.Builder
	var want []int64 // ms
	for burst := range 12 {
		ms := int64(burst * 70)
		for range 5 {
			fmt.Fprintf(&trace, `{"timestamp": %d, "input_length": 20, "output_length": 3, "hash_ids": [%d]}`+"\n", 1000+ms, len(want))
			want = append(want, ms)
		}
	}
	path := writeTrace(t, "burst.jsonl", trace.String())
	base, _ := startMock(t, nil)
	for _, scale := range []float64{1, 0.5} {
		text := scenarioYAML(base, "  think_time: 0s", fmt.Sprintf("  mode: replay\n  time_scale: %g\n  stages:\n    - {duration: 1s}", scale))
		text = withSource(text, "workload:\n  trace: {file: "+path+", format: mooncake}\n")
		res, dir, err := runScenario(t, context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		recs := sentTimes(t, dir, res[0].T0Ns)
		if len(recs) != len(want) || res[0].Reused != 0 || res[0].Errors != 0 {
			t.Fatalf("time_scale %g: %d requests of the trace's %d (%d reused, %d errors)", scale, len(recs), len(want), res[0].Reused, res[0].Errors)
		}
		neverEarly(t, recs)
		for i, rec := range recs {
			if w := int64(float64(want[i]) * scale * float64(time.Millisecond)); rec.intended != w {
				t.Fatalf("time_scale %g: request %d intended at %v from t0, the trace says %v", scale, i, time.Duration(rec.intended), time.Duration(w))
			}
		}
	}
}

// TestReplayMultiTurnFollowsTheTrace: a qwen_bailian session (turns at 0, 300 ms and 900 ms) and a
// second one starting 200 ms later are replayed on the trace's clock: each session's first request
// at its own time from t0, its later turns at the trace's gaps from it.
func TestReplayMultiTurnFollowsTheTrace(t *testing.T) {
	path := writeTrace(t, "q.jsonl", `{"chat_id": 1, "parent_chat_id": -1, "timestamp": 10.0, "input_length": 40, "output_length": 5, "type": "text", "turn": 1, "hash_ids": [1, 2, 3]}
{"chat_id": 4, "parent_chat_id": -1, "timestamp": 10.2, "input_length": 40, "output_length": 5, "type": "text", "turn": 1, "hash_ids": [9]}
{"chat_id": 2, "parent_chat_id": 1, "timestamp": 10.3, "input_length": 70, "output_length": 5, "type": "text", "turn": 2, "hash_ids": [1, 2, 3, 4, 5]}
{"chat_id": 3, "parent_chat_id": 2, "timestamp": 10.9, "input_length": 100, "output_length": 5, "type": "text", "turn": 3, "hash_ids": [1, 2, 3, 4, 5, 6, 7]}
`)
	base, _ := startMock(t, nil)
	text := scenarioYAML(base, "  think_time: 5s", "  mode: replay\n  stages:\n    - {duration: 1500ms}")
	text = withSource(text, "workload:\n  trace: {file: "+path+", format: qwen_bailian}\n")
	res, dir, err := runScenario(t, context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	recs := sentTimes(t, dir, res[0].T0Ns)
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s turn %d at %v", r.conv, r.turn, time.Duration(r.intended)))
	}
	want := []string{"s01-000000 turn 0 at 0s", "s01-000001 turn 0 at 200ms", "s01-000000 turn 1 at 300ms", "s01-000000 turn 2 at 900ms"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("replayed turns (-trace +sent):\n%s", diff)
	}
	neverEarly(t, recs)
}

// TestSessionHeader: target.session_header sends the session's id on every turn of it (the same id
// across turns, another for each session); without the key no such header goes out. Every answer's
// output_char_count is the characters the mock streamed.
func TestSessionHeader(t *testing.T) {
	for _, header := range []string{"X-Session-ID", ""} {
		base, cap := startMock(t, nil)
		text := scenarioYAML(base, shortSessions, "  mode: concurrency\n  stages:\n    - {concurrency: 3, duration: 800ms}")
		if header != "" {
			text = strings.Replace(text, "  model: m\n", "  model: m\n  session_header: "+header+"\n", 1)
		}
		_, dir, err := runScenario(t, context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		chars := map[string]int64{}
		for _, r := range readRecords(t, filepath.Join(dir, "stage_01", "profile_export.jsonl")) {
			if m, ok := r["metrics"].(map[string]any)["output_char_count"].(map[string]any); ok {
				chars[r["metadata"].(map[string]any)["x_request_id"].(string)] = integer(m["value"])
			}
		}
		cap.mu.Lock()
		multi, ids := 0, map[string]string{}
		for corr, reqs := range cap.requests {
			if len(reqs) > 1 {
				multi++
			}
			for _, req := range reqs {
				got := req.header.Get("X-Session-ID")
				if header == "" && got != "" || header != "" && (got == "" || got != corr) {
					t.Errorf("session_header %q: session %s sent X-Session-ID %q", header, corr, got)
				}
				if other, seen := ids[got]; header != "" && seen && other != corr {
					t.Errorf("sessions %s and %s sent one id %q", corr, other, got)
				}
				ids[got] = corr
				if want := int64(utf8.RuneCountInString(req.answer)); chars[req.header.Get("X-Request-ID")] != want || want == 0 {
					t.Errorf("output_char_count %d, the mock streamed %d characters", chars[req.header.Get("X-Request-ID")], want)
				}
			}
		}
		cap.mu.Unlock()
		if multi == 0 {
			t.Fatal("no session had two turns")
		}
	}
}

// TestOutputCharsCountsEveryTextKind: output_char_count counts Unicode characters, not bytes, of the
// streamed reasoning, content and tool-call text (name and arguments): "думаю" 5 + "한국어" 3 +
// `get{"q":"é"}` 12 = 20 characters in 32 bytes.
func TestOutputCharsCountsEveryTextKind(t *testing.T) {
	base := faultServer(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"думаю\"}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{\"content\":\"한국어\"}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"get\",\"arguments\":\"{\\\"q\\\":\\\"é\\\"}\"}}]}}]}\n\n" +
			"data: [DONE]\n\n"))
	})
	recs, _, _ := runShort(t, base, 0)
	for _, r := range recs {
		m, _ := r["metrics"].(map[string]any)["output_char_count"].(map[string]any)
		if m == nil || integer(m["value"]) != 20 {
			t.Fatalf("output_char_count %v, want 20", m)
		}
	}
}

// TestRequestRateMultiTurnSessions: with multi-turn sessions each arrival of the schedule starts a
// session (its first request on the schedule's offset), and its later turns follow its own timing:
// the previous answer's end plus the turn's think time, never on the schedule.
func TestRequestRateMultiTurnSessions(t *testing.T) {
	base, _ := startMock(t, nil)
	text := scenarioYAML(base, shortSessions, "  mode: request_rate\n  stages:\n    - {rate: 30, duration: 1s}")
	var sc *workload.Scenario
	res, dir, err := runScenarioConfig(t, context.Background(), text, func(c *Config) { sc = c.Scenario })
	if err != nil {
		t.Fatal(err)
	}
	want := RequestSchedule(*sc.Load.Stages[0].Rate, sc.Load.Arrival, sc.Load.CV, time.Second, sc.StageRNG(1))
	recs := sentTimes(t, dir, res[0].T0Ns)
	var firsts []int64
	prevEnd, later := map[string]int64{}, 0
	slices.SortStableFunc(recs, func(a, b sent) int { return a.turn - b.turn })
	for _, r := range recs {
		if r.turn == 0 {
			firsts = append(firsts, r.intended)
		} else {
			end, ok := prevEnd[r.conv]
			if !ok || r.intended <= end || r.intended > end+int64(61*time.Millisecond) {
				t.Fatalf("%s turn %d intended %v from t0; the previous answer ended at %v (think 10–60 ms)", r.conv, r.turn, time.Duration(r.intended), time.Duration(end))
			}
			later++
		}
		prevEnd[r.conv] = r.end
	}
	slices.Sort(firsts)
	var offs []int64
	for _, o := range want.Offsets[:len(firsts)] {
		offs = append(offs, int64(o))
	}
	if diff := cmp.Diff(offs, firsts); diff != "" || len(firsts)+res[0].NotStarted != want.Len() || later == 0 {
		t.Fatalf("%d sessions (+%d never started) of %d arrivals, %d later turns; first requests off the schedule:\n%s", len(firsts), res[0].NotStarted, want.Len(), later, diff)
	}
}

// edge is a request's start (+1) or end (−1), for counting how many were open at once.
type edge struct {
	at    int64
	delta int
}

// mostOpen is the most intervals open at once; an end and a start at the same instant do not
// overlap.
func mostOpen(edges []edge) int {
	slices.SortFunc(edges, func(a, b edge) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return a.delta - b.delta
	})
	open, most := 0, 0
	for _, e := range edges {
		open += e.delta
		most = max(most, open)
	}
	return most
}
