package metrics

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sloStage: five in-window successes with TTFT 100…500 ms, TTFO = TTFT + 5, three 20 ms gaps each
// (E2E = TTFT + 60, pooled ITL all 20) and OSL 4, 4, 7, 13, 61, so TPOT = 60 ÷ (OSL − 1) is 20, 20,
// 10, 5, 1. Worked by hand: TTFT mean 300, p90 460, p95 480; TTFO p95 485; E2E p90 520, max 560;
// TPOT mean 11.2, p50 10, p99 20; ITL p95 and max 20.
func sloStage(in StageInput, extra ...*Record) *StageSummary {
	var recs []*Record
	for i, osl := range []int{4, 4, 7, 13, 61} {
		r := ok(2+float64(i), 100*float64(i+1), []float64{20, 20, 20}, osl)
		r.TTFO = Some(r.TTFT.V + 5)
		// The record's own inter_token_latency 1 ms off: tpot is computed from E2E, TTFT and OSL.
		r.InterTokenLatency.V++
		recs = append(recs, r)
	}
	return summary(in, append(recs, extra...)...)
}

// checkLines writes each check as "name limit value verdict" (value and verdict "?" when unknown).
func checkLines(r SLOResult) []string {
	out := []string{}
	for _, c := range r.Checks {
		v, p := "?", "?"
		if c.Value != nil {
			v, p = fmt.Sprintf("%g", *c.Value), fmt.Sprint(*c.Pass)
		}
		out = append(out, fmt.Sprintf("%s %g %s %s", c.Name, c.Limit, v, p))
	}
	return out
}

// TestSLOJudgesEachMetricAndStat: each metric × a statistic passes at its value (limits are
// inclusive) and fails just under it, a metric with no values is N/A, the turn-1 fields are the
// same checks under their old names and fold with a block that sets the same bound (the stricter
// one stays), and the error rate comes last. Catches: a limit read from the wrong distribution or
// statistic (itl must be the pooled gaps, tpot the per-request TPOT), < for ≤, a fold that keeps the
// looser bound or checks twice, and N/A winning over FAIL.
func TestSLOJudgesEachMetricAndStat(t *testing.T) {
	lat := func(metric, stat string, ms float64) []LatencyLimit { return []LatencyLimit{{metric, stat, ms}} }
	cases := []struct {
		name    string
		slo     SLOLimits
		noTTFO  bool // the records carry no TTFO
		verdict string
		checks  []string
	}{
		{"ttft p95 at its value", SLOLimits{ErrorRateUnset: true, Latency: lat("ttft", "p95", 480)}, false, SLOPass, []string{"ttft_p95_ms 480 480 true"}},
		{"ttft p95 just under", SLOLimits{ErrorRateUnset: true, Latency: lat("ttft", "p95", 479.9)}, false, SLOFail, []string{"ttft_p95_ms 479.9 480 false"}},
		{"ttft mean", SLOLimits{ErrorRateUnset: true, Latency: lat("ttft", "mean", 299)}, false, SLOFail, []string{"ttft_mean_ms 299 300 false"}},
		{"ttft p90", SLOLimits{ErrorRateUnset: true, Latency: lat("ttft", "p90", 460)}, false, SLOPass, []string{"ttft_p90_ms 460 460 true"}},
		{"ttfo p95", SLOLimits{ErrorRateUnset: true, Latency: lat("ttfo", "p95", 484)}, false, SLOFail, []string{"ttfo_p95_ms 484 485 false"}},
		{"ttfo unmeasured", SLOLimits{ErrorRateUnset: true, Latency: lat("ttfo", "p95", 484)}, true, SLONA, []string{"ttfo_p95_ms 484 ? ?"}},
		{"tpot p50", SLOLimits{ErrorRateUnset: true, Latency: lat("tpot", "p50", 10)}, false, SLOPass, []string{"tpot_p50_ms 10 10 true"}},
		{"tpot mean", SLOLimits{ErrorRateUnset: true, Latency: lat("tpot", "mean", 11)}, false, SLOFail, []string{"tpot_mean_ms 11 11.2 false"}},
		{"tpot p99", SLOLimits{ErrorRateUnset: true, Latency: lat("tpot", "p99", 19.5)}, false, SLOFail, []string{"tpot_p99_ms 19.5 20 false"}},
		{"itl max (pooled)", SLOLimits{ErrorRateUnset: true, Latency: lat("itl", "max", 19.9)}, false, SLOFail, []string{"itl_max_ms 19.9 20 false"}},
		{"itl p50: pooled gaps, not TPOT (p50 10)", SLOLimits{ErrorRateUnset: true, Latency: lat("itl", "p50", 19.9)}, false, SLOFail, []string{"itl_p50_ms 19.9 20 false"}},
		{"e2e p90", SLOLimits{ErrorRateUnset: true, Latency: lat("e2e", "p90", 520)}, false, SLOPass, []string{"e2e_p90_ms 520 520 true"}},
		{"e2e max", SLOLimits{ErrorRateUnset: true, Latency: lat("e2e", "max", 550)}, false, SLOFail, []string{"e2e_max_ms 550 560 false"}},
		{"turn-1 fields", SLOLimits{TTFTP95Ms: 500, ITLP95Ms: 20, ErrorRateMax: 0}, false, SLOPass,
			[]string{"ttft_p95_ms 500 480 true", "itl_p95_ms 20 20 true", "error_rate 0 0 true"}},
		{"a bound set both ways keeps the stricter", SLOLimits{TTFTP95Ms: 600, ErrorRateUnset: true, Latency: lat("ttft", "p95", 470)}, false, SLOFail,
			[]string{"ttft_p95_ms 470 480 false"}},
		{"the turn-1 field is the stricter", SLOLimits{TTFTP95Ms: 470, ErrorRateUnset: true, Latency: lat("ttft", "p95", 600)}, false, SLOFail,
			[]string{"ttft_p95_ms 470 480 false"}},
		{"FAIL beats N/A; order is metric × stat, then error rate",
			SLOLimits{ErrorRateMax: 0.5, Latency: []LatencyLimit{{"e2e", "max", 550}, {"ttfo", "p50", 1}, {"ttft", "p99", 1000}}}, true, SLOFail,
			[]string{"ttft_p99_ms 1000 496 true", "ttfo_p50_ms 1 ? ?", "e2e_max_ms 550 560 false", "error_rate 0.5 0 true"}},
		{"N/A beats PASS", SLOLimits{ErrorRateMax: 0.5, Latency: lat("ttfo", "mean", 1000)}, true, SLONA, []string{"ttfo_mean_ms 1000 ? ?", "error_rate 0.5 0 true"}},
		{"nothing set", SLOLimits{ErrorRateUnset: true}, false, SLONA, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input()
			in.SLO = tc.slo
			s := sloStage(in)
			if tc.noTTFO {
				recs := []*Record{}
				for i, osl := range []int{4, 4, 7, 13, 61} {
					recs = append(recs, ok(2+float64(i), 100*float64(i+1), []float64{20, 20, 20}, osl))
				}
				s = summary(in, recs...)
			}
			if diff := cmp.Diff(tc.checks, checkLines(s.SLO)); diff != "" || s.SLO.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s; checks (-want +got):\n%s", s.SLO.Verdict, tc.verdict, diff)
			}
		})
	}
}

// TestGoodputEachLimitKind: a request is good when its own value of every limited metric is within
// the limit, whatever statistic the limit is at; goodput is req/s of good requests ended in the
// window and their share of the requests started in it (errors count, as not good); without a
// per-request limit it is unknown. Catches: a limit kind that goodput ignores, reading the stage's
// percentile instead of the request's value, < for ≤, errors left out of the share, and goodput
// reported equal to throughput when no latency limit is set.
func TestGoodputEachLimitKind(t *testing.T) {
	req := func(ttft float64, gap float64, osl int) *Record {
		r := ok(2, ttft, []float64{gap, gap}, osl)
		r.TTFO = Some(ttft + 10)
		return r
	}
	noTTFO := req(100, 20, 3)
	noTTFO.TTFO = Opt[float64]{}
	ownITL := req(100, 20, 3) // its TPOT is 20, but its writer says its mean ITL is 25
	ownITL.InterTokenLatency = Some(25.0)
	streamCut := req(100, 20, 3) // latencies that would pass, then the stream broke
	streamCut.Error = &RecordError{Type: ErrTypeTransport, Message: "stream cut"}
	lat := func(metric, stat string, ms float64) SLOLimits {
		return SLOLimits{ErrorRateUnset: true, Latency: []LatencyLimit{{metric, stat, ms}}}
	}
	cases := []struct {
		name string
		slo  SLOLimits
		rec  *Record
		good bool
	}{
		{"ttft at its limit", lat("ttft", "p95", 500), req(500, 20, 3), true},
		{"ttft over", lat("ttft", "p95", 500), req(500.5, 20, 3), false},
		{"ttft, turn-1 field", SLOLimits{TTFTP95Ms: 500, ErrorRateUnset: true}, req(500.5, 20, 3), false},
		{"ttfo at its limit", lat("ttfo", "p50", 310), req(300, 20, 3), true},
		{"ttfo over", lat("ttfo", "p50", 309), req(300, 20, 3), false},
		{"ttfo unknown", lat("ttfo", "p50", 1000), noTTFO, false},
		// TPOT = 2 gaps ÷ (OSL − 1): 40 ÷ 2 = 20 at OSL 3; at OSL 2 it is 40.
		{"tpot at its limit", lat("tpot", "p99", 20), req(100, 20, 3), true},
		{"tpot over: OSL − 1, not OSL", lat("tpot", "p99", 20), req(100, 20, 2), false},
		{"tpot of one token: none to judge", lat("tpot", "p99", 1), req(100, 20, 1), true},
		{"itl: the request's own mean", lat("itl", "mean", 20), req(100, 20, 3), true},
		{"itl over", lat("itl", "p95", 19.9), req(100, 20, 3), false},
		{"e2e at its limit", lat("e2e", "max", 140), req(100, 20, 3), true},
		{"e2e over", lat("e2e", "max", 139.9), req(100, 20, 3), false},
		{"itl: the record's own inter_token_latency", lat("itl", "mean", 22), ownITL, false},
		{"an error is never good", lat("e2e", "max", 1e6), failed(2, 500, "Internal Server Error"), false},
		{"an error with latencies is never good", lat("e2e", "max", 1e6), streamCut, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input()
			in.SLO = tc.slo
			s := summary(in, tc.rec)
			wantShare, wantRate := 0.0, 0.0
			if tc.good {
				wantShare, wantRate = 1, 0.1 // one request in a 10 s window
			}
			g := s.Goodput
			if !g.Share.OK || !g.ReqPerSec.OK || g.Share.V != wantShare || g.ReqPerSec.V != wantRate || s.Throughput.GoodputPerSec != Some(wantRate) {
				t.Errorf("goodput %+v (legacy %v), want share %v, %v req/s", g, s.Throughput.GoodputPerSec, wantShare, wantRate)
			}
		})
	}
	t.Run("share counts errors as not good", func(t *testing.T) {
		in := input()
		in.SLO = lat("ttft", "p95", 500)
		s := summary(in, req(100, 20, 3), req(200, 20, 3), req(600, 20, 3), failed(3, 500, "Internal Server Error"))
		near(t, "share", s.Goodput.Share.V, 2.0/4)
		near(t, "req/s", s.Goodput.ReqPerSec.V, 2.0/10)
	})
	for name, slo := range map[string]SLOLimits{"no limit": {ErrorRateUnset: true}, "error rate only": {ErrorRateMax: 0.1}} {
		t.Run(name+": unknown", func(t *testing.T) {
			in := input()
			in.SLO = slo
			s := summary(in, req(100, 20, 3))
			if s.Goodput.ReqPerSec.OK || s.Goodput.Share.OK {
				t.Errorf("goodput %+v with no per-request limit; want null", s.Goodput)
			}
			data, _ := json.Marshal(s.Goodput)
			if string(data) != `{"req_per_sec":null,"share":null}` {
				t.Errorf("goodput JSON %s", data)
			}
		})
	}
}

// TestReplayValidAtItsThresholds: a replay stage is valid while send lag p99 ≤ 10 ms and no request
// is more than 1 s late, each bound inclusive; the reason names what broke; a stage that is not a
// replay, or has no intended starts, has no verdict. Catches: > for ≥ at either bound, p95 or the mean
// for p99, the 1 s rule left out, and a verdict on stages that are not replays.
func TestReplayValidAtItsThresholds(t *testing.T) {
	// n requests in the window, the first `slow` of them lagging slowMs, the rest 0.5 ms.
	lagged := func(n, slow int, slowMs float64) []*Record {
		var recs []*Record
		for i := range n {
			r := ok(2+float64(i)*0.01, 100, []float64{10}, 2)
			lag := 0.5
			if i < slow {
				lag = slowMs
			}
			r.IntendedStartNs = Some(r.CreditIssuedNs - int64(lag*1e6))
			recs = append(recs, r)
		}
		return recs
	}
	cases := []struct {
		name   string
		recs   []*Record
		replay bool
		want   Opt[bool]
		reason string
	}{
		// 100 values: p99 sits at h = 98.01, between the 99th and 100th sorted values.
		{"every lag 10 ms: p99 at the limit", lagged(100, 100, 10), true, Some(true), ""},
		{"p99 just over 10 ms", lagged(100, 100, 10.001), true, Some(false), "send lag p99 10.001 ms > 10 ms"},
		{"one late by exactly 1 s, p99 small", lagged(200, 1, 1000), true, Some(true), ""},
		{"one late by just over 1 s", lagged(200, 1, 1000.001), true, Some(false), "1 request more than 1 s late"},
		{"both", lagged(100, 3, 1500), true, Some(false), "send lag p99 1500.000 ms > 10 ms; 3 requests more than 1 s late"},
		{"not a replay", lagged(100, 3, 1500), false, Opt[bool]{}, ""},
		{"no intended starts", []*Record{ok(2, 100, []float64{10}, 2)}, true, Opt[bool]{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input()
			in.Replay = tc.replay
			s := summary(in, tc.recs...)
			if s.ReplayValid != tc.want || s.ReplayInvalidReason != tc.reason {
				t.Errorf("replay_valid %+v %q, want %+v %q (send lag %+v)", s.ReplayValid, s.ReplayInvalidReason, tc.want, tc.reason, s.SendLag)
			}
			if warned := strings.Contains(strings.Join(s.Warnings, "\n"), "trace's pace"); warned != (tc.reason != "") {
				t.Errorf("warned %v, reason %q: %v", warned, tc.reason, s.Warnings)
			}
		})
	}
}

// TestInFlightLevels: requests open at once over the window, worked by hand — a brief overlap counts
// toward the max, a handover at one instant does not, and a request that ended in warmup is not in
// flight. Catches: the sessions' 1 ms hold applied to requests, starts sorted before ends at one
// instant, and warmup requests counted.
func TestInFlightLevels(t *testing.T) {
	span := func(startS, endS float64) *Record {
		r := ok(startS, 1, nil, 1)
		r.RequestEndNs = Some(sec(endS))
		return r
	}
	cancelledAt := func(startS, cancelS float64) *Record {
		r := failed(startS, CodeCancelled, ErrTypeCancelled)
		r.RequestEndNs, r.CancellationTimeNs = Opt[int64]{}, Some(sec(cancelS))
		return r
	}
	cases := []struct {
		name string
		recs []*Record
		mean float64
		max  int
	}{
		{"a 0.5 ms overlap", []*Record{span(2, 4), span(3.9995, 6)}, (2 + 2.0005) / 10, 2},
		{"a handover at one instant", []*Record{span(2, 4), span(4, 6)}, 4.0 / 10, 1},
		{"across the whole window, and one in warmup", []*Record{span(0.5, 12), span(0.1, 0.9)}, 1, 1},
		{"a cancelled request without an end: until its cancellation", []*Record{cancelledAt(2, 5)}, 3.0 / 10, 1},
		{"none", nil, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := summary(input(), tc.recs...)
			near(t, "in-flight mean", s.InFlight.Mean, tc.mean)
			if s.InFlight.Max != tc.max {
				t.Errorf("in-flight max %d, want %d", s.InFlight.Max, tc.max)
			}
		})
	}
}

// TestCacheHitByTurn: Σ cached ÷ Σ prompt per turn index over successful in-window requests with
// prompt usage; a server's cached count over its prompt count is capped at the prompt. Catches: turns
// mixed up, the cap left out, requests without prompt usage counted.
func TestCacheHitByTurn(t *testing.T) {
	turn := func(i, prompt, cached int) *Record {
		r := ok(2+float64(i), 100, []float64{10}, 2)
		r.TurnIndex, r.UsagePromptTokens, r.UsageCachedTokens = i, Some(prompt), Some(cached)
		return r
	}
	noUsage := turn(1, 0, 0)
	noUsage.UsagePromptTokens, noUsage.UsageCachedTokens = Opt[int]{}, Opt[int]{}
	s := summary(input(), turn(0, 100, 10), turn(0, 300, 30), turn(1, 100, 150), noUsage, turn(3, 0, 0))
	want := []TurnCacheHit{{Turn: 0, Requests: 2, CacheHit: Some(0.1)}, {Turn: 1, Requests: 1, CacheHit: Some(1.0)}, {Turn: 3, Requests: 1}}
	if diff := cmp.Diff(want, s.CacheHitByTurn); diff != "" {
		t.Errorf("cache_hit_by_turn (-want +got):\n%s", diff)
	}
}

// TestSLOLimitsJSONRefusesUnknownNames: a stage.json whose latency limits name a metric or statistic
// plload does not know is refused with what is accepted, not judged as no limit.
func TestSLOLimitsJSONRefusesUnknownNames(t *testing.T) {
	for _, bad := range []string{`[{"metric":"ttfb","stat":"p95","limit_ms":1}]`, `[{"metric":"ttft","stat":"p75","limit_ms":1}]`, `[{"metric":"ttft","stat":"p95","limit_ms":0}]`} {
		var l SLOLimits
		err := json.Unmarshal([]byte(`{"ttft_p95_ms":null,"itl_p95_ms":null,"error_rate_max":null,"latency":`+bad+`}`), &l)
		if err == nil || !strings.Contains(err.Error(), "accepted") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if !(SLOLimits{ErrorRateUnset: true, Latency: []LatencyLimit{{"e2e", "p90", 1}}}).Set() {
		t.Error("a latency limit alone is a limit set")
	}
}
