package fit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/plload/plload/workload"
)

// Limits the scenario schema puts on the fields written (workload.Session's `limit` tags).
const (
	maxTurns    = 10000
	maxTokens   = 1000000
	maxThinkSec = 86400
)

// Stage durations: long enough for several minutes of percentiles per stage, short enough to run
// three stages in ten minutes.
const (
	stageWarmup   = "30s"
	stageDuration = "180s"
)

// ScenarioOptions name the scenario written.
type ScenarioOptions struct {
	// Name is the scenario's name: key.
	Name string
	// Sources are the log files read, for the header comment.
	Sources []string
}

// Scenario writes a ready scenario (YAML) from a summary: every fitted value carries a comment
// `# from logs (N requests)` and every other value `# assumed: why`.
func Scenario(s *Summary, opts ScenarioOptions) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	from := fmt.Sprintf("# from logs (%d requests)", s.Requests)
	name := opts.Name
	if name == "" {
		name = "fitted"
	}

	w("# %s: a synthetic workload fitted to %s by `plload fit` (format %s).\n", name, strings.Join(opts.Sources, ", "), strings.Join(s.Formats, ", "))
	w("# Values marked `from logs` were measured; values marked `assumed` are choices to review.\n")
	w("# Arrivals in the log: %.4g req/s mean, %.4g req/s in the peak minute (peak/mean %.2f), inter-arrival CV %.2f.\n",
		s.RatePerS.Mean, s.RatePerS.PeakMinute, s.PeakToMean, s.InterarrivalCV)
	w("name: %s   # assumed: from the log's file name\n", yamlString(name))
	w("seed: 1   # assumed: any seed; the same seed sends the same text\n")
	w("target:\n")
	w("  base_url: mock   # assumed: point it at your server (http://host:port/v1) and set model\n")
	w("  mock: {ttft: 200ms, tps: 40}   # assumed: the bundled mock's timing, so the file runs as is\n")
	meanTurns := 1.0
	if st := s.Sessions; st != nil {
		meanTurns = math.Max(1, st.MeanTurns)
	}
	firstFit, first := s.FirstInputFit, s.FirstInput
	w("personas:\n")
	if sp := s.SharedPrefix; sp != nil && math.Round(sp.Tokens) >= 1 {
		// Every first turn gets a persona's prompt of the mean shared length and keeps the rest as its
		// own text, so the prompt is as long as in the log and the cached share is the log's. Few
		// enough personas that each is reused: a persona's first use misses the cache.
		if sp.Heads > 0 {
			count := min(sp.Heads, personaCap(s.RatePerS.Mean/meanTurns))
			w("  count: %d   %s: first turns share %s with earlier requests (told apart by %s); %s\n",
				count, from, plural(sp.Heads, "distinct prefix", "distinct prefixes"), unitName(s.PrefixFrom), capNote(count, sp.Heads))
		} else {
			w("  count: 1   # assumed: the records say how many prompt tokens the server had cached, not which prefix; one persona carries the whole shared share\n")
		}
		w("  system_prompt_tokens: {dist: constant, value: %s}   %s: a first turn (%d measured) shares %s prompt tokens on average, %.1f %% of its prompt (measured on %s), so every persona's prompt carries that share\n",
			num(math.Round(sp.Tokens)), from, sp.FirstTurns, num(sp.Tokens), 100*sp.Share, measuredOn(s.PrefixFrom))
		w("  # Each session draws a persona; the persona's prompt is the prefix its requests share, so a server\n")
		w("  # with a prefix cache large enough for the personas hits it on about %.0f %% of first-turn prompt tokens.\n", 100*sp.Share)
		firstFit, first = scaled(firstFit, 1-sp.Share), scaledQ(first, 1-sp.Share)
	} else {
		w("  count: 4   # assumed: %s\n", noSharingReason(s))
		w("  system_prompt_tokens: {dist: constant, value: 16}   # assumed: short, because the log's prompt lengths already include any system prompt\n")
	}
	w("session:\n")
	if st := s.Sessions; st != nil {
		w("  turns: %s   %s, %d sessions: turns p50 %s, p99 %s%s\n", countDist(st.TurnsFit, st.Turns, maxTurns, st.FewestTurns), from, st.Count, num(st.Turns.P50), num(st.Turns.P99), st.cutOffNote())
	} else {
		w("  turns: 1   # assumed: the log has no session ids, so every request is its own conversation\n")
	}
	less := ""
	if sp := s.SharedPrefix; sp != nil && math.Round(sp.Tokens) >= 1 {
		less = fmt.Sprintf(", less the persona's shared share (× %.3g)", 1-sp.Share)
	}
	w("  user_input_tokens: %s   %s: first-turn prompt tokens p50 %s, p99 %s%s%s; later turns add history on top\n",
		countDist(firstFit, first, maxTokens, 1), from, num(s.FirstInput.P50), num(s.FirstInput.P99), fitNote(s.FirstInputFit), less)
	w("  max_output_tokens: %s   %s: completion tokens p50 %s, p99 %s%s\n",
		countDist(s.OutputFit, s.OutputTokens, maxTokens, 1), from, num(s.OutputTokens.P50), num(s.OutputTokens.P99), fitNote(s.OutputFit))
	if st := s.Sessions; st != nil && st.Gaps > 1 {
		w("  think_time: %s   %s: %s mean %.3gs, p50 %.3gs, p99 %.3gs; %s\n",
			st.Think.yaml(), from, gapsMeasured(st), st.ThinkMean, st.ThinkTime.P50, st.ThinkTime.P99, st.Think.note())
	} else {
		w("  think_time: {dist: constant, value: 0s}   # assumed: no turns to measure it between\n")
	}

	w("load:\n")
	w("  mode: request_rate   # assumed: open loop, the log's requests arrive on their own clock, not when answers end\n")
	if s.Sessions == nil && s.InterarrivalCV > 0 && !math.IsInf(s.InterarrivalCV, 0) {
		w("  arrival: gamma   %s: inter-arrival times' CV %.3g (1 = Poisson, > 1 bursty)\n", from, s.InterarrivalCV)
		w("  cv: %s   %s\n", num(s.InterarrivalCV), from)
	} else {
		w("  arrival: poisson   # assumed: sessions arrive independently (the log's CV is of requests, whose turns follow their sessions)\n")
	}
	// Requests in flight are rate × latency; a minute of the highest stage's arrivals is far more
	// than a healthy server holds, and the default cap bounds the client's sockets.
	inFlight := min(workload.DefaultMaxInFlight, max(4, int(math.Ceil(1.3*s.RatePerS.PeakMinute*60))))
	w("  max_in_flight: %d   # assumed: a minute of the highest stage's requests, at most %d; past it requests wait (lag recorded)\n", inFlight, workload.DefaultMaxInFlight)
	if meanTurns > 1 {
		w("  # With sessions, rate is sessions/s (their turns follow their own think time): requests/s ÷\n")
		w("  # mean turns per session (%.3g).\n", meanTurns)
	}
	type stage struct {
		name string
		rate float64
		why  string
	}
	stages := []stage{
		{"average", s.RatePerS.Mean, "mean rate"},
		{"peak", s.RatePerS.PeakMinute, "peak-minute rate"},
		{"peak +30 %", 1.3 * s.RatePerS.PeakMinute, "1.3 × peak-minute rate"},
	}
	if s.FlatPeak() {
		w("  stages:   # plload matrix's part B (docs/measurement.md): average, peak +30 %%; no peak stage of its own:\n")
		if s.SpanS < 60 {
			w("  # the log is shorter than a minute, so its peak minute is its mean (%.4g req/s): a peak stage\n", s.RatePerS.Mean)
			w("  # would repeat the average one\n")
		} else {
			w("  # the peak minute (%.4g req/s) is within %.0f %% of the mean (%.4g req/s), so a peak stage would\n", s.RatePerS.PeakMinute, 100*(workload.FlatPeakRatio-1), s.RatePerS.Mean)
			w("  # load the server as the average one does, within what a stage's own arrivals vary\n")
		}
		stages = []stage{{"average", s.RatePerS.Mean, "mean rate; the peak minute is within 10 % of it"}, stages[2]}
	} else {
		w("  stages:   # plload matrix's part B (docs/measurement.md): average, peak minute, peak +30 %%\n")
	}
	for _, stage := range stages {
		w("    - {name: %q, rate: %s, warmup: %s, duration: %s}   # %.4g req/s %s (%s); assumed: warmup and duration\n",
			stage.name, num(stage.rate/meanTurns), stageWarmup, stageDuration, stage.rate, from[2:], stage.why)
	}
	w("cost: {gpu_hourly_usd: 2.50}   # assumed: an example GPU price; put yours here for the $/request columns\n")
	w("slo: {ttft_p95: 2s, itl_p95: 100ms, error_rate_max: 0.01}   # assumed: put your service's objective here\n")
	return b.String()
}

// personaCap is the most personas for a session rate (sessions/s): each is drawn about 20 times in
// a stage's duration, so its first use (a miss) leaves the cached share within about 5 % of the log's.
func personaCap(sessionsPerS float64) int {
	stage, _ := time.ParseDuration(stageDuration)
	return max(1, int(sessionsPerS*stage.Seconds()/20))
}

// capNote says how the persona count was chosen.
func capNote(count, heads int) string {
	if count < heads {
		return fmt.Sprintf("capped at %d so that each persona is drawn about 20 times a stage (a persona's first use misses the cache)", count)
	}
	return "one persona each"
}

// plural writes n with the singular or plural noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// unitName is what a shared prefix begins with in a log measured on from.
func unitName(from string) string {
	switch from {
	case "text":
		return "their first message or 256-byte piece of prompt"
	case "cached_tokens":
		return "the persona index of the records with cached tokens"
	}
	return "their first block id"
}

// measuredOn says what the shared share was measured on.
func measuredOn(from string) string {
	switch from {
	case "text":
		return "hashes of the prompt text"
	case "cached_tokens":
		return "the server's cached prompt tokens"
	}
	return "the blocks' hash ids"
}

// noSharingReason says why the personas are assumed.
func noSharingReason(s *Summary) string {
	switch {
	case s.PrefixShare == nil:
		return "the log shows no prompt text, block ids or cached-token counts, so prefix sharing cannot be measured; set the personas your traffic shares"
	case *s.PrefixShare == 0 && s.PrefixFrom == "cached_tokens":
		return "the server cached none of the records' prompt tokens: they share no prefix, or the server kept no prefix cache"
	case *s.PrefixShare == 0:
		return "no request shares a prefix with an earlier one in the log"
	case s.Sessions != nil:
		return fmt.Sprintf("first turns share no prefix in the log (its %.1f %% sharing is sessions' own history, which the turns below reproduce)", 100**s.PrefixShare)
	}
	return "no request shares a prefix with an earlier one in the log"
}

// scaled is the lognormal of k × the values of f (k > 0): the same shape, moved.
func scaled(f Lognormal, k float64) Lognormal {
	f.Mu += math.Log(k)
	f.Mean, f.P50, f.P95, f.P99 = k*f.Mean, k*f.P50, k*f.P95, k*f.P99
	return f
}

// scaledQ is k × every quantile of q.
func scaledQ(q Quantiles, k float64) Quantiles {
	return Quantiles{P50: k * q.P50, P95: k * q.P95, P99: k * q.P99, Max: k * q.Max}
}

// fitNote says which description fits better, with the fit error.
func fitNote(f Lognormal) string {
	if f.Good() {
		return fmt.Sprintf(", lognormal fits (p50/p95/p99 within %.1f %%)", 100*f.Err)
	}
	return fmt.Sprintf(", lognormal fits poorly (off by up to %.0f %%), so uniform over p1..p99 of the log", 100*f.Err)
}

// minSigma is the smallest lognormal shape written: below it the values are one value (and the
// schema refuses a sigma that rounds to 0).
const minSigma = 0.001

// countDist writes a token or turn count distribution: the lognormal when it fits, else uniform
// between the empirical extremes that matter (up to p99), never under least.
func countDist(f Lognormal, q Quantiles, limit, least float64) string {
	hi := math.Min(math.Max(1, math.Round(q.Max)), limit)
	if f.N < 2 || f.Sigma < minSigma {
		return fmt.Sprintf("{dist: constant, value: %s}", num(math.Max(1, math.Round(q.P50))))
	}
	if f.Good() {
		return fmt.Sprintf("{dist: lognormal, mean: %s, sigma: %.4f, min: 1, max: %s}", num(math.Min(f.Mean, limit)), f.Sigma, num(hi))
	}
	// The fit's 1st percentile, but never under the least value seen (least): of a few sessions of
	// 2–4 turns, the lognormal's tail reaches 1, which no session had.
	lo := math.Max(math.Max(1, math.Round(least)), math.Round(math.Exp(f.Mu-2.3263*f.Sigma)))
	top := math.Min(math.Max(lo, math.Round(q.P99)), limit)
	return fmt.Sprintf("{min: %s, max: %s}", num(math.Min(lo, top)), num(top))
}

// gapsMeasured says what the think-time gaps were measured between.
func gapsMeasured(st *SessionStats) string {
	switch st.GapsFromEnd {
	case st.Gaps:
		return "gaps from an answer's end to the next turn's start (think time)"
	case 0:
		return "start-to-start gaps between turns (an upper bound: the log has no answer end, so the answer's latency is in it)"
	}
	return fmt.Sprintf("gaps between turns, %d of %d from an answer's end, the rest start to start (an upper bound)", st.GapsFromEnd, st.Gaps)
}

// num writes a number with 4 significant digits, never in exponent form (YAML readers differ on it),
// so a small rate (0.0003 sessions/s) does not round to zero.
func num(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	decimals := max(0, 3-int(math.Floor(math.Log10(math.Abs(v)))))
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// yamlString quotes a name when YAML would read it as something else.
func yamlString(s string) string {
	for _, r := range s {
		if !(r == '-' || r == '_' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}
