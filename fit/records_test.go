package fit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// rec is one synthetic plload/AIPerf record: times in seconds from an origin, -1 for a key left out.
type rec struct {
	conv, corr     string // conversation_id ("" for null) and x_correlation_id
	turn, round    int    // turn_index; tool_round (-1: not written)
	start, end     float64
	isl, osl       int
	prompt, cached int // usage_prompt_tokens and usage_prompt_cache_read_tokens (-1: not written)
	persona        int // -1: not written
	failed         bool
	cancelled      bool // was_cancelled: a failed record the run's end cancelled
}

// line writes r as a record line in the layout docs/records.md describes.
func (r rec) line() string {
	const origin = 1_762_551_534_000_000_000
	ns := func(s float64) int64 { return origin + int64(math.Round(s*1e9)) }
	var md []string
	conv := "null"
	if r.conv != "" {
		conv = fmt.Sprintf("%q", r.conv)
	}
	md = append(md, `"conversation_id": `+conv, fmt.Sprintf(`"x_correlation_id": %q`, r.corr), fmt.Sprintf(`"turn_index": %d`, r.turn),
		fmt.Sprintf(`"request_start_ns": %d`, ns(r.start)))
	if r.end >= 0 {
		md = append(md, fmt.Sprintf(`"request_end_ns": %d`, ns(r.end)))
	}
	if r.round >= 0 {
		md = append(md, fmt.Sprintf(`"tool_round": %d`, r.round))
	}
	if r.persona >= 0 {
		md = append(md, fmt.Sprintf(`"persona": %d`, r.persona))
	}
	if r.cancelled {
		md = append(md, `"was_cancelled": true`)
		return fmt.Sprintf(`{"metadata": {%s}, "metrics": {}, "error": {"code": 499, "type": "RequestCancelled", "message": "cancelled"}}`, strings.Join(md, ", "))
	}
	if r.failed {
		return fmt.Sprintf(`{"metadata": {%s}, "metrics": {}, "error": {"code": 500, "type": "x", "message": "boom"}}`, strings.Join(md, ", "))
	}
	m := []string{fmt.Sprintf(`"input_sequence_length": {"value": %d, "unit": "tokens"}`, r.isl),
		fmt.Sprintf(`"output_sequence_length": {"value": %d, "unit": "tokens"}`, r.osl)}
	if r.prompt >= 0 {
		m = append(m, fmt.Sprintf(`"usage_prompt_tokens": {"value": %d, "unit": "tokens"}`, r.prompt))
	}
	if r.cached >= 0 {
		m = append(m, fmt.Sprintf(`"usage_prompt_cache_read_tokens": {"value": %d, "unit": "tokens"}`, r.cached))
	}
	return fmt.Sprintf(`{"metadata": {%s}, "metrics": {%s}}`, strings.Join(md, ", "), strings.Join(m, ", "))
}

// turn is a record of session conv's turn k: start and end in seconds, no tool round, no usage.
func turn(conv string, k int, start, end float64) rec {
	return rec{conv: conv, corr: "c-" + conv, turn: k, round: -1, start: start, end: end, isl: 100, osl: 10, prompt: -1, cached: -1, persona: -1}
}

func readRecords(t *testing.T, recs []rec) *Summary {
	t.Helper()
	lines := make([]string, len(recs))
	for i, r := range recs {
		lines[i] = r.line()
	}
	l := NewLog()
	if err := l.Read("records.jsonl", strings.NewReader(strings.Join(lines, "\n")), ""); err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(l)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRecordsThinkGaps: in records, a think-time gap runs from turn k's last answer end to turn k+1's
// start, tool rounds give none, a missing turn breaks the chain, and without request_end_ns the gap
// is start to start.
func TestRecordsThinkGaps(t *testing.T) {
	toolRound := func(r rec, round int) rec { r.round = round; return r }
	tests := []struct {
		name        string
		recs        []rec
		wantGaps    []float64
		wantFromEnd int
	}{
		{"answer end to next start", []rec{
			turn("a", 0, 0, 3), turn("a", 1, 3.5, 6), turn("a", 2, 6.25, 9),
			turn("b", 0, 1, 2), turn("b", 1, 4, 5),
		}, []float64{0.25, 0.5, 2}, 3},
		{"lines in completion order", []rec{
			turn("a", 1, 3.5, 6), turn("b", 0, 1, 2), turn("a", 0, 0, 3), turn("b", 1, 4, 5),
		}, []float64{0.5, 2}, 2},
		{"tool rounds: from the turn's last answer", []rec{
			toolRound(turn("a", 0, 0, 2), 0), toolRound(turn("a", 0, 2.001, 4), 1), toolRound(turn("a", 1, 4.75, 6), 0),
		}, []float64{0.75}, 1},
		{"a failed turn is not bridged", []rec{
			turn("a", 0, 0, 1), func() rec { r := turn("a", 1, 1.5, 2); r.failed = true; return r }(), turn("a", 2, 3, 4), turn("a", 3, 4.5, 5),
		}, []float64{0.5}, 1},
		{"no request_end_ns: start to start", []rec{
			turn("a", 0, 0, -1), turn("a", 1, 3.5, -1), turn("a", 2, 6.25, -1),
		}, []float64{2.75, 3.5}, 0},
		{"two sessions replaying one conversation", []rec{
			turn("a", 0, 0, 1), turn("a", 1, 1.5, 2),
			func() rec { r := turn("a", 0, 0.2, 0.4); r.corr = "other"; return r }(),
			func() rec { r := turn("a", 1, 1.4, 2); r.corr = "other"; return r }(),
		}, []float64{0.5, 1}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := readRecords(t, tt.recs)
			if s.Sessions == nil {
				t.Fatal("sessions = nil")
			}
			st := s.Sessions
			if st.Gaps != len(tt.wantGaps) || st.GapsFromEnd != tt.wantFromEnd {
				t.Errorf("gaps %d (%d from an answer end), want %d (%d)", st.Gaps, st.GapsFromEnd, len(tt.wantGaps), tt.wantFromEnd)
			}
			slices.Sort(tt.wantGaps)
			want := quantiles(tt.wantGaps)
			if diff := cmp.Diff(want, st.ThinkTime, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
				t.Errorf("think time (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(mean(tt.wantGaps), st.ThinkMean, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
				t.Errorf("think mean (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRecordsThinkTimeMean: records of sessions whose answers take seconds and whose users pause for
// an exponential 0.5 s give a scenario whose think time has the pauses' mean within 10 %, where the
// start-to-start gap (what a log without answer ends shows) is four times too long.
func TestRecordsThinkTimeMean(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var recs []rec
	var pauses []float64
	startToStart := 0.0
	for s := range 400 {
		conv := fmt.Sprintf("s01-%06d", s)
		at := float64(s) * 0.7
		for k := range 2 + r.IntN(6) {
			latency := 1.5 * math.Exp(0.4*r.NormFloat64())
			recs = append(recs, turn(conv, k, at, at+latency))
			pause := 0.5 * r.ExpFloat64()
			if k > 0 {
				startToStart += recs[len(recs)-2].end - recs[len(recs)-2].start + pauses[len(pauses)-1]
			}
			pauses = append(pauses, pause)
			at += latency + pause
		}
		pauses = pauses[:len(pauses)-1] // the last turn's pause never ends in a turn
	}
	truth := mean(pauses)
	s := readRecords(t, recs)
	st := s.Sessions
	if st.Gaps != len(pauses) || st.GapsFromEnd != st.Gaps {
		t.Fatalf("gaps %d (%d from an answer end), want %d, all from an answer end", st.Gaps, st.GapsFromEnd, len(pauses))
	}
	sc := loadScenario(t, Scenario(s, ScenarioOptions{Sources: []string{"records.jsonl"}}))
	got := sc.Session.ThinkTime.MeanSeconds()
	within(t, "the scenario's think-time mean (s)", got, truth, 0.10)
	t.Logf("think time: true mean %.4g s, fitted %.4g s (%s); start to start %.4g s", truth, got, st.Think.Kind, startToStart/float64(len(pauses)))
	if st.Think.Kind != "exponential" {
		t.Errorf("exponential pauses fitted as %s (error %.2f)", st.Think.Kind, st.Think.Err)
	}
}

// TestRecordsCachedPrefix: records that carry the server's cached prompt tokens give the prefix share
// (cached ÷ prompt tokens) and the first turns' shared prefix; plload's persona index tells the
// shared prefixes apart, and without it (AIPerf) the scenario assumes one persona and says so.
func TestRecordsCachedPrefix(t *testing.T) {
	records := func(persona bool) []rec {
		var recs []rec
		for s := range 60 {
			conv := fmt.Sprintf("s01-%06d", s)
			for k := range 3 {
				r := turn(conv, k, float64(s)+float64(k)*0.3, float64(s)+float64(k)*0.3+0.1)
				r.prompt, r.isl = 400+100*k, 400+100*k
				r.cached = 300 + 100*k // first turns: a 300-token persona prompt; later ones their history too
				if s < 3 {
					r.cached = 0 // each persona's first use misses
				}
				if persona {
					r.persona = s % 3
				}
				recs = append(recs, r)
			}
		}
		// A record without usage counts (a server that sent none) is left out of the share.
		return append(recs, turn("s01-999999", 0, 70, 71))
	}
	// Σ cached ÷ Σ prompt over 180 records: 57 sessions × (300+400+500) of 60 × (400+500+600).
	wantShare := 57.0 * 1200 / (60 * 1500)
	for _, tc := range []struct {
		name      string
		persona   bool
		wantHeads int
		wantLine  string
	}{
		{"plload records", true, 3, "count: 3   # from logs (181 requests): first turns share 3 distinct prefixes with earlier requests (told apart by the persona index of the records with cached tokens"},
		{"AIPerf records", false, 0, "count: 1   # assumed: the records say how many prompt tokens the server had cached, not which prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := readRecords(t, records(tc.persona))
			if s.PrefixShare == nil || s.PrefixFrom != "cached_tokens" || s.CacheRecords != 180 {
				t.Fatalf("prefix_share %v from %q over %d records, want cached_tokens over 180", s.PrefixShare, s.PrefixFrom, s.CacheRecords)
			}
			within(t, "prefix_share", *s.PrefixShare, wantShare, 1e-9)
			sp := s.SharedPrefix
			if sp == nil {
				t.Fatal("no shared prefix from the first turns' cached tokens")
			}
			// 57 of 61 first turns had 300 of 400 tokens cached (the usage-less one counts no cache).
			want := SharedPrefix{Tokens: 57.0 * 300 / 60, Share: 57.0 * 300 / (60 * 400), Heads: tc.wantHeads, FirstTurns: 60}
			if diff := cmp.Diff(want, *sp, cmpopts.EquateApprox(1e-9, 0)); diff != "" {
				t.Errorf("shared prefix (-want +got):\n%s", diff)
			}
			yaml := Scenario(s, ScenarioOptions{Sources: []string{"records.jsonl"}})
			loadScenario(t, yaml)
			for _, w := range []string{tc.wantLine, "system_prompt_tokens: {dist: constant, value: 285}", "measured on the server's cached prompt tokens"} {
				if !strings.Contains(yaml, w) {
					t.Errorf("the scenario lacks %q:\n%s", w, yaml)
				}
			}
			var out strings.Builder
			s.Print(&out, []string{"records.jsonl"})
			if w := fmt.Sprintf("prefix sharing: %.1f %% of prompt tokens were answered from the server's prefix cache (cached_tokens in 180 records' usage)", 100*wantShare); !strings.Contains(out.String(), w) {
				t.Errorf("the summary lacks %q:\n%s", w, out.String())
			}
		})
	}

	// A server that caches nothing says so, rather than that the traffic shares nothing.
	none := records(true)
	for i := range none {
		none[i].cached = min(none[i].cached, 0)
	}
	s := readRecords(t, none)
	if yaml := Scenario(s, ScenarioOptions{}); !strings.Contains(yaml, "the server cached none of the records' prompt tokens") {
		t.Errorf("a server without a cache hit: the scenario lacks the reason:\n%s", yaml)
	}
}

// TestCutOffSessions: a session the log's end cut off (its last request cancelled, or its last answer
// ending within a think gap of the log's end) keeps its turns out of the turn count, so a run's own
// records fit its scenario's turns, not fewer; its requests still count in the rates.
func TestCutOffSessions(t *testing.T) {
	cancelled := func(r rec) rec { r.cancelled = true; return r }
	// complete is a 3-turn session starting at t with 1 s answers and 0.5 s pauses (ends at t+4).
	complete := func(conv string, t float64) []rec {
		return []rec{turn(conv, 0, t, t+1), turn(conv, 1, t+1.5, t+2.5), turn(conv, 2, t+3, t+4)}
	}
	var base []rec
	for i := range 4 {
		base = append(base, complete(fmt.Sprint("s", i), float64(5*i))...) // the last ends at 19
	}
	tests := []struct {
		name       string
		extra      []rec
		wantCutOff int
		wantTurns  Quantiles
	}{
		// A request without a session ends the log late enough that every session was seen to its end.
		{"none cut off: as before", []rec{turn("", 0, 19.5, 30)}, 0, Quantiles{P50: 3, P95: 3, P99: 3, Max: 3}},
		{"last request cancelled", []rec{turn("x", 0, 20, 21), cancelled(turn("x", 1, 21.5, 22)), turn("", 0, 21, 40)}, 1,
			Quantiles{P50: 3, P95: 3, P99: 3, Max: 3}},
		{"last answer within the p95 gap of the log's end", []rec{turn("x", 0, 20, 21), turn("x", 1, 21.5, 25.2)}, 1,
			Quantiles{P50: 3, P95: 3, P99: 3, Max: 3}},
		{"a cancelled request before the last is not a cut", []rec{cancelled(turn("x", 0, 20, 20.5)), turn("x", 1, 21, 22), turn("x", 2, 22.5, 23.5),
			turn("x", 3, 24, 25), turn("", 0, 24, 40)}, 0, Quantiles{P50: 3, P95: 3, P99: 3, Max: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := append(slices.Clone(base), tt.extra...)
			s := readRecords(t, recs)
			st := s.Sessions
			if st == nil {
				t.Fatal("sessions = nil")
			}
			if st.CutOff != tt.wantCutOff {
				t.Errorf("cut off = %d, want %d", st.CutOff, tt.wantCutOff)
			}
			if diff := cmp.Diff(tt.wantTurns, st.Turns, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("turns (-want +got):\n%s", diff)
			}
			kept := 0
			for _, r := range recs {
				if !r.cancelled {
					kept++
				}
			}
			if s.Requests != kept {
				t.Errorf("requests = %d, want every record with lengths (%d): cut-off sessions stay in the rates", s.Requests, kept)
			}
			var out strings.Builder
			s.Print(&out, []string{"records.jsonl"})
			yaml := Scenario(s, ScenarioOptions{Sources: []string{"records.jsonl"}})
			note := "cut off by the log's end"
			for name, text := range map[string]string{"summary": out.String(), "scenario": yaml} {
				if got := strings.Contains(text, note); got != (tt.wantCutOff > 0) {
					t.Errorf("%s mentions %q: %v, want %v:\n%s", name, note, got, tt.wantCutOff > 0, text)
				}
			}
		})
	}
}

// TestCutOffStartToStart: a request log without answer ends is cut at its last timestamp less the
// start-to-start gap's p95; when every session is cut off, the turns are theirs, marked a lower bound.
func TestCutOffStartToStart(t *testing.T) {
	line := func(ts float64, session string) string {
		return fmt.Sprintf(`{"timestamp": %g, "session_id": %q, "prompt_tokens": 10, "completion_tokens": 5}`, 1764547200+ts, session)
	}
	read := func(lines []string) *Summary {
		l := NewLog()
		if err := l.Read("log.jsonl", strings.NewReader(strings.Join(lines, "\n")), FormatRequestLog); err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(l)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Sessions a and b: turns 2 s apart; c starts 1 s before the log's last line (d at 30).
	s := read([]string{line(0, "a"), line(2, "a"), line(4, "a"), line(10, "b"), line(12, "b"), line(14, "b"),
		line(27, "c"), line(29, "c"), line(30, "d")})
	if st := s.Sessions; st.CutOff != 2 || st.Turns.Max != 3 || st.Turns.P50 != 3 || st.AllCutOff {
		t.Errorf("sessions = %+v, want c and d cut off (within the 2 s gap of 30), a and b's 3 turns", st)
	}
	s = read([]string{line(0, "a"), line(2, "a"), line(3, "b")})
	if st := s.Sessions; st.CutOff != 2 || !st.AllCutOff || st.Turns.Max != 2 {
		t.Errorf("sessions = %+v, want both cut off and their turns kept as a lower bound", st)
	}
	var out strings.Builder
	s.Print(&out, []string{"log.jsonl"})
	if !strings.Contains(out.String(), "every session was cut off by the log's end: a lower bound") {
		t.Errorf("summary lacks the lower-bound note:\n%s", out.String())
	}
}

// TestTurnsNeverUnderTheFewestSeen: of a few sessions of 2–4 turns the lognormal's 1st percentile
// rounds to 1; the fitted range starts at the fewest turns a session had, 2.
func TestTurnsNeverUnderTheFewestSeen(t *testing.T) {
	turns := []float64{2, 2, 2, 3, 4}
	f := fitLognormal(turns, 1)
	if got := countDist(f, quantiles(turns), maxTurns, 2); got != "{min: 2, max: 4}" {
		t.Errorf("turns %s, want {min: 2, max: 4}", got)
	}
	if got := countDist(f, quantiles(turns), maxTurns, 1); got != "{min: 1, max: 4}" {
		t.Errorf("with least 1: %s (the fit's own lower bound)", got)
	}
}
