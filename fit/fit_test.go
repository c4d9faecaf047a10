package fit

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/workload"
)

// params are a generated log's true parameters.
type params struct {
	rate, cv             float64 // requests/s and inter-arrival CV (single-turn logs)
	inMedian, inSigma    float64 // lognormal prompt tokens
	outMedian, outSigma  float64 // lognormal completion tokens
	sessions             int     // > 0: a session log instead
	maxTurns             int     // turns uniform on 1..maxTurns
	thinkMedian, thinkSD float64 // lognormal start-to-start gap between turns (s)
}

func lognormalQ(median, sigma, z float64) float64 { return median * math.Exp(sigma*z) }

// writeRequestLog writes a flat request log with the given parameters; seeded, so the same every run.
func writeRequestLog(t testing.TB, path string, n int, p params, seed uint64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(seed, 1))
	draw := func(median, sigma float64) int {
		return max(1, int(math.Round(median*math.Exp(sigma*r.NormFloat64()))))
	}
	if p.sessions == 0 {
		// Gamma gaps with shape 1/CV² and mean 1/rate have that CV.
		k := 1 / (p.cv * p.cv)
		ts := 1764547200.0
		for i := range n {
			ts += workload.GammaDraw(r, k) / k / p.rate
			fmt.Fprintf(w, `{"timestamp": %.6f, "prompt_tokens": %d, "completion_tokens": %d}`+"\n", ts, draw(p.inMedian, p.inSigma), draw(p.outMedian, p.outSigma))
			_ = i
		}
	} else {
		// Sessions start 1 s apart on average; lines are written in session order (a log need not be
		// sorted by time: fit sorts).
		start := 0.0
		for s := range p.sessions {
			start += r.ExpFloat64()
			ts := start
			for turn := range 1 + r.IntN(p.maxTurns) {
				if turn > 0 {
					ts += p.thinkMedian * math.Exp(p.thinkSD*r.NormFloat64())
				}
				fmt.Fprintf(w, `{"timestamp": %.6f, "session_id": "s-%d", "prompt_tokens": %d, "completion_tokens": %d}`+"\n", ts, s, draw(p.inMedian, p.inSigma), draw(p.outMedian, p.outSigma))
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

func within(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*math.Abs(want) {
		t.Errorf("%s = %.4g, want %.4g within %.0f %%", name, got, want, 100*tol)
	}
}

func fitFile(t testing.TB, path, format string) *Summary {
	t.Helper()
	l := NewLog()
	if err := l.ReadFile(path, format); err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(l)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRecoversArrivalsAndLengths: a gamma (CV 2) arrival log with lognormal lengths gives back its rate,
// CV and length percentiles.
func TestRecoversArrivalsAndLengths(t *testing.T) {
	p := params{rate: 20, cv: 2, inMedian: 800, inSigma: 0.7, outMedian: 200, outSigma: 0.5}
	path := filepath.Join(t.TempDir(), "log.jsonl")
	writeRequestLog(t, path, 100000, p, 7)
	s := fitFile(t, path, "")
	if diff := cmp.Diff([]string{FormatRequestLog}, s.Formats); diff != "" {
		t.Errorf("formats (-want +got):\n%s", diff)
	}
	within(t, "rate", s.RatePerS.Mean, p.rate, 0.05)
	within(t, "interarrival_cv", s.InterarrivalCV, p.cv, 0.10)
	within(t, "gamma_shape", s.GammaShape, 1/(p.cv*p.cv), 0.20)
	within(t, "input p50", s.InputTokens.P50, p.inMedian, 0.05)
	within(t, "input p99", s.InputTokens.P99, lognormalQ(p.inMedian, p.inSigma, z99), 0.05)
	within(t, "output p50", s.OutputTokens.P50, p.outMedian, 0.05)
	within(t, "output p99", s.OutputTokens.P99, lognormalQ(p.outMedian, p.outSigma, z99), 0.05)
	within(t, "input lognormal sigma", s.InputFit.Sigma, p.inSigma, 0.05)
	if !s.InputFit.Good() || !s.OutputFit.Good() {
		t.Errorf("lognormal data not fitted as lognormal: input err %.3f, output err %.3f", s.InputFit.Err, s.OutputFit.Err)
	}
	if s.Poisson {
		t.Error("CV 2 called Poisson")
	}
	if s.PeakToMean < 1 {
		t.Errorf("peak_to_mean %.3f < 1", s.PeakToMean)
	}
	if s.Sessions != nil || s.PrefixShare != nil {
		t.Errorf("no session ids or hash ids, yet sessions %+v, prefix_share %v", s.Sessions, s.PrefixShare)
	}
}

// TestRecoversPoisson: CV 1 is called Poisson.
func TestRecoversPoisson(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	writeRequestLog(t, path, 20000, params{rate: 5, cv: 1, inMedian: 100, inSigma: 0.3, outMedian: 50, outSigma: 0.3}, 3)
	s := fitFile(t, path, FormatRequestLog)
	within(t, "interarrival_cv", s.InterarrivalCV, 1, 0.05)
	if !s.Poisson {
		t.Errorf("CV %.3f not called Poisson", s.InterarrivalCV)
	}
}

// TestRecoversSessions: turns and think time of a session log.
func TestRecoversSessions(t *testing.T) {
	p := params{inMedian: 300, inSigma: 0.4, outMedian: 100, outSigma: 0.4, sessions: 5000, maxTurns: 9, thinkMedian: 12, thinkSD: 0.6}
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	writeRequestLog(t, path, 0, p, 11)
	s := fitFile(t, path, "")
	st := s.Sessions
	if st == nil {
		t.Fatal("sessions = nil for a log with session ids")
	}
	if st.Count != p.sessions {
		t.Errorf("sessions count = %d, want %d", st.Count, p.sessions)
	}
	within(t, "mean turns", st.MeanTurns, float64(1+p.maxTurns)/2, 0.10)
	within(t, "turns p50", st.Turns.P50, 5, 0.10)
	within(t, "turns max", st.Turns.Max, float64(p.maxTurns), 0)
	within(t, "think p50", st.ThinkTime.P50, p.thinkMedian, 0.10)
	within(t, "think p99", st.ThinkTime.P99, lognormalQ(p.thinkMedian, p.thinkSD, z99), 0.10)
	within(t, "think lognormal mean", st.ThinkFit.Mean, p.thinkMedian*math.Exp(p.thinkSD*p.thinkSD/2), 0.10)

	yaml := Scenario(s, ScenarioOptions{Name: "sessions", Sources: []string{path}})
	sc := loadScenario(t, yaml)
	within(t, "scenario think mean", sc.Session.ThinkTime.MeanSeconds(), st.ThinkMean, 0.01)
	within(t, "think mean", st.ThinkMean, p.thinkMedian*math.Exp(p.thinkSD*p.thinkSD/2), 0.10)
	if sc.Load.Mode != workload.ModeRequestRate || sc.Load.Arrival != workload.ArrivalPoisson {
		t.Errorf("load: mode %q arrival %q, want request_rate with Poisson session arrivals", sc.Load.Mode, sc.Load.Arrival)
	}
	within(t, "scenario rate (sessions/s)", sc.Load.Stages[0].Rate.To, s.RatePerS.Mean/st.MeanTurns, 0.01)
}

// loadScenario writes yaml to a file and loads it as plload run would, failing on any error.
func loadScenario(t *testing.T, yaml string) *workload.Scenario {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fitted.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, issues := workload.Load(path, workload.LoadOptions{})
	if err := issues.Err(); err != nil {
		t.Fatalf("the written scenario does not load: %v\n%s", err, yaml)
	}
	if _, err := sc.Build(); err != nil {
		t.Fatalf("the written scenario does not build: %v", err)
	}
	return sc
}

// TestSamples: each format's sample is detected, read whole, and gives a scenario that loads, with
// every value commented.
func TestSamples(t *testing.T) {
	tests := []struct {
		file, format string
		requests     int
		sessions     int // 0: none
		prefix       bool
	}{
		{"request-log.jsonl", FormatRequestLog, 5, 3, true},   // from the OpenAI-style lines' text
		{"profile_export.jsonl", FormatRecords, 10, 0, false}, // AIPerf single-turn: conversation_id null
		{"mooncake.jsonl", FormatMooncake, 40, 0, true},
		{"azure-2023.csv", FormatAzure, 40, 0, false},
		{"azure-2024.csv", FormatAzure, 40, 0, false},
		{"burstgpt.csv", FormatBurstGPT, 41, 0, false},
		{"qwen-bailian.jsonl", FormatQwenBailian, 24, -1, true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			s := fitFile(t, filepath.Join("testdata", tt.file), "")
			if diff := cmp.Diff([]string{tt.format}, s.Formats); diff != "" {
				t.Errorf("detected format (-want +got):\n%s", diff)
			}
			if tt.requests > 0 && s.Requests != tt.requests {
				t.Errorf("requests = %d, want %d", s.Requests, tt.requests)
			}
			switch {
			case tt.sessions == 0 && s.Sessions != nil:
				t.Errorf("sessions = %+v, want none", s.Sessions)
			case tt.sessions != 0 && s.Sessions == nil:
				t.Errorf("sessions = nil, want some")
			case tt.sessions > 0 && s.Sessions.Count != tt.sessions:
				t.Errorf("sessions = %d, want %d", s.Sessions.Count, tt.sessions)
			}
			if (s.PrefixShare != nil) != tt.prefix {
				t.Errorf("prefix_share = %v, want present: %v", s.PrefixShare, tt.prefix)
			}
			yaml := Scenario(s, ScenarioOptions{Name: "sample", Sources: []string{tt.file}})
			loadScenario(t, yaml)
			for i, line := range strings.Split(strings.TrimSpace(yaml), "\n") {
				code, _, _ := strings.Cut(line, "#")
				if strings.TrimSpace(code) == "" || strings.HasSuffix(strings.TrimSpace(code), ":") {
					continue // a comment, or a key that opens a block
				}
				if !strings.Contains(line, "# from logs (") && !strings.Contains(line, "# assumed: ") && !strings.Contains(line, "assumed:") {
					t.Errorf("scenario line %d has neither `# from logs (N requests)` nor `# assumed: why`: %s", i+1, line)
				}
			}
		})
	}
}

// TestSampleValues pins what the small samples say, worked by hand from the files.
func TestSampleValues(t *testing.T) {
	s := fitFile(t, "testdata/request-log.jsonl", "")
	// Times 1764547200.125, .902, 1764547201.480, 2.010, 2.770: span 2.645 s, 4 gaps.
	within(t, "span", s.SpanS, 2.645, 1e-6)
	within(t, "rate", s.RatePerS.Mean, 4/2.645, 1e-6)
	// Prompt tokens 1840, 655, 2101, 31, 12 sorted 12, 31, 655, 1840, 2101: p50 655, p95 at h=3.8.
	want := Quantiles{P50: 655, P95: 1840 + 0.8*(2101-1840), P99: 1840 + 0.96*(2101-1840), Max: 2101}
	if diff := cmp.Diff(want, s.InputTokens, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
		t.Errorf("input tokens (-want +got):\n%s", diff)
	}
	// c-17 has two turns 1.355 s apart; c-18 and c-19 one each; the fifth line has no session. The
	// log ends at 2.770: c-17's last turn (1.480) and one more single turn lie within the 1.355 s gap
	// of it, so they are cut off by the log's end. The single turn is left out; c-17's 2 turns are
	// more than the one session seen to its end had, so they are kept: sessions that long exist.
	if s.Sessions == nil || s.Sessions.Count != 3 || s.Sessions.CutOff != 1 || s.Sessions.Turns.Max != 2 ||
		len(s.Sessions.PromptByTurn) != 2 || math.Abs(s.Sessions.ThinkTime.P50-1.355) > 1e-6 {
		t.Errorf("sessions = %+v, want 3, 1 cut off, turns up to 2, a 2-turn history and a 1.355 s gap", s.Sessions)
	}

	m := fitFile(t, "testdata/mooncake.jsonl", "")
	var blocks, seen float64
	ids := map[int64]bool{}
	f, err := os.ReadFile("testdata/mooncake.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(f)), "\n") {
		_, list, _ := strings.Cut(line, `"hash_ids": [`)
		list, _, _ = strings.Cut(list, "]")
		for _, id := range strings.Split(list, ",") {
			var v int64
			fmt.Sscan(strings.TrimSpace(id), &v)
			blocks++
			if ids[v] {
				seen++
			}
			ids[v] = true
		}
	}
	within(t, "mooncake prefix_share", *m.PrefixShare, seen/blocks, 1e-9)
	if *m.PrefixShare <= 0 {
		t.Errorf("mooncake sample shares a 3-block prefix, prefix_share = %v", *m.PrefixShare)
	}
}

// TestBadRows: every error names the file and line (and what is accepted).
func TestBadRows(t *testing.T) {
	tests := []struct {
		name, content, format, want string
	}{
		{"bad.jsonl", "{\"timestamp\": 1, \"prompt_tokens\": 3, \"completion_tokens\": 4}\n{\"timestamp\": 2, \"prompt_tokens\": \"x\", \"completion_tokens\": 4}\n", "", "bad.jsonl line 2 (request_log)"},
		{"nolen.jsonl", "{\"timestamp\": 1, \"usage\": {\"prompt_tokens\": 3, \"completion_tokens\": 4}}\n\n{\"timestamp\": 2, \"usage\": {}}\n", "", "nolen.jsonl line 3 (request_log): no prompt_tokens"},
		{"time.jsonl", "{\"timestamp\": \"yesterday\", \"prompt_tokens\": 3, \"completion_tokens\": 4}\n", "", "time.jsonl line 1 (request_log): timestamp \"yesterday\"; accepted: epoch seconds"},
		{"neg.jsonl", "{\"timestamp\": 1, \"input_length\": -3, \"output_length\": 4, \"hash_ids\": []}\n", "", "neg.jsonl line 1 (mooncake): input_length -3"},
		{"az.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,3,4\nnot a time,3,4\n", "", "az.csv line 3 (azure): timestamp \"not a time\""},
		{"bg.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,GPT-4,x,3,3,API log\n", "", "bg.csv line 2 (burstgpt): column \"request tokens\" is \"x\""},
		{"what.txt", "hello\n", "", "what.txt line 1: neither JSON nor a known CSV header"},
		{"obj.jsonl", "{\"a\": 1}\n", "", "obj.jsonl line 1: a JSON object of no known format"},
		{"empty.jsonl", "\n\n", "", "empty.jsonl: empty"},
		{"forced.jsonl", "{\"timestamp\": 1, \"prompt_tokens\": 3, \"completion_tokens\": 4}\n", FormatQwenBailian, "forced.jsonl line 1 (qwen_bailian): chat_id is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NewLog().Read(tt.name, strings.NewReader(tt.content), tt.format)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

var correlationID = regexp.MustCompile(`"x_correlation_id": "[^"]*"`)

// TestRecordsSessions: plload's records carry conversation_id, which makes sessions; a failed request
// without lengths is skipped, not fitted as zero.
func TestRecordsSessions(t *testing.T) {
	data, err := os.ReadFile("testdata/profile_export.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i := range lines {
		// plload writes one x_correlation_id per session, shared by its turns.
		lines[i] = strings.Replace(lines[i], `"conversation_id": null`, fmt.Sprintf(`"conversation_id": "s01-%06d"`, i/3), 1)
		lines[i] = correlationID.ReplaceAllString(lines[i], fmt.Sprintf(`"x_correlation_id": "session-%d"`, i/3))
	}
	failed := `{"metadata": {"request_start_ns": 1762551534797067827, "conversation_id": "s01-000099"}, "metrics": {}, "error": {"code": 500, "type": "x", "message": "boom"}}`
	l := NewLog()
	if err := l.Read("records.jsonl", strings.NewReader(strings.Join(append(lines, failed), "\n")), ""); err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(l)
	if err != nil {
		t.Fatal(err)
	}
	if s.Requests != len(lines) || s.Skipped != 1 {
		t.Errorf("requests %d, skipped %d; want %d and 1", s.Requests, s.Skipped, len(lines))
	}
	if s.Sessions == nil || s.Sessions.Count != (len(lines)+2)/3 || s.Sessions.Turns.Max != 3 {
		t.Errorf("sessions = %+v, want %d of up to 3 turns", s.Sessions, (len(lines)+2)/3)
	}
}

// TestTextPrefixShare: in an OpenAI-style log, a message counts as shared only when every message
// before it (and it) was in an earlier request; a plain prompt is compared in 256-byte blocks.
func TestTextPrefixShare(t *testing.T) {
	long := strings.Repeat("p", 300)
	log := `{"timestamp": 1, "request": {"messages": [{"role": "system", "content": "SYS"}, {"role": "user", "content": "Q1"}]}, "usage": {"prompt_tokens": 5, "completion_tokens": 2}}
{"timestamp": 2, "request": {"messages": [{"role": "system", "content": "SYS"}, {"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "Q2"}]}, "usage": {"prompt_tokens": 9, "completion_tokens": 2}}
{"timestamp": 3, "request": {"messages": [{"role": "system", "content": "OTHER"}, {"role": "user", "content": "Q1"}]}, "usage": {"prompt_tokens": 5, "completion_tokens": 2}}
{"timestamp": 4, "request": {"prompt": "` + long + `"}, "usage": {"prompt_tokens": 75, "completion_tokens": 2}}
{"timestamp": 5, "request": {"prompt": "` + long + `x"}, "usage": {"prompt_tokens": 75, "completion_tokens": 2}}
`
	l := NewLog()
	if err := l.Read("t.jsonl", strings.NewReader(log), ""); err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(l)
	if err != nil {
		t.Fatal(err)
	}
	// Piece bytes: role + NUL + raw JSON content ("SYS" with its quotes is 5 bytes).
	sys, q1, a1, q2, other := 6+1+5, 4+1+4, 9+1+4, 4+1+4, 6+1+7
	// The prompt is the raw JSON string (quotes included): 302 and 303 bytes, first block 256 shared.
	total := (sys + q1) + (sys + q1 + a1 + q2) + (other + q1) + 302 + 303
	shared := (sys + q1) + 256 // request 2's first two messages; request 5's first block
	within(t, "text prefix_share", *s.PrefixShare, float64(shared)/float64(total), 1e-9)
	if s.PrefixFrom != "text" {
		t.Errorf("PrefixFrom = %q, want text", s.PrefixFrom)
	}
}

// TestQwenSessions: a later turn joins the session of its parent chain, not of its own chat id.
func TestQwenSessions(t *testing.T) {
	log := `{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0, "input_length": 10, "output_length": 5, "hash_ids": [1]}
{"chat_id": 2, "parent_chat_id": -1, "timestamp": 1, "input_length": 10, "output_length": 5, "hash_ids": [2]}
{"chat_id": 3, "parent_chat_id": 1, "timestamp": 4, "input_length": 20, "output_length": 5, "hash_ids": [1, 3]}
{"chat_id": 4, "parent_chat_id": 3, "timestamp": 10, "input_length": 30, "output_length": 5, "hash_ids": [1, 3, 4]}
`
	l := NewLog()
	if err := l.Read("q.jsonl", strings.NewReader(log), ""); err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(l)
	if err != nil {
		t.Fatal(err)
	}
	// Chat 1's third turn is the log's last line, so it is cut off by the log's end; but its 3 turns
	// are more than chat 2 (seen to its end) had, so they count: a chat that long exists.
	if s.Sessions.Count != 2 || s.Sessions.CutOff != 0 || s.Sessions.Turns.Max != 3 || len(s.Sessions.PromptByTurn) != 3 {
		t.Errorf("sessions = %+v, want 2, the cut-off 3-turn chat kept as the longest", s.Sessions)
	}
	// Gaps of chat 1: 4 and 6 s.
	if diff := cmp.Diff(Quantiles{P50: 5, P95: 5.9, P99: 5.98, Max: 6}, s.Sessions.ThinkTime, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
		t.Errorf("think time (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{10, 20, 30}, s.Sessions.PromptByTurn); diff != "" {
		t.Errorf("prompt tokens by turn (-want +got):\n%s", diff)
	}
	// 7 blocks, of which 1, 1, 3 were seen before.
	within(t, "prefix_share", *s.PrefixShare, 3.0/7, 1e-9)
}

// BenchmarkFit reads and summarizes a 1M-line request log (the file is written once, outside the timer).
func BenchmarkFit(b *testing.B) {
	path := filepath.Join(b.TempDir(), "log.jsonl")
	writeRequestLog(b, path, 1000000, params{rate: 50, cv: 2, inMedian: 800, inSigma: 0.7, outMedian: 200, outSigma: 0.5}, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s := fitFile(b, path, "")
		if s.Requests != 1000000 {
			b.Fatalf("requests = %d", s.Requests)
		}
		_ = Scenario(s, ScenarioOptions{Sources: []string{path}})
	}
}

// TestSummarizeRefuses: logs with nothing to fit, or with timestamps in the wrong unit, are refused
// with what is wrong.
func TestSummarizeRefuses(t *testing.T) {
	tests := []struct{ name, log, want string }{
		{"one", `{"timestamp": 1, "prompt_tokens": 1, "completion_tokens": 1}`, "fewer than 2 requests"},
		{"same time", "{\"timestamp\": 1, \"prompt_tokens\": 1, \"completion_tokens\": 1}\n{\"timestamp\": 1, \"prompt_tokens\": 1, \"completion_tokens\": 1}", "the same timestamp"},
		{"nanoseconds", "{\"timestamp\": 1764547200000000000, \"prompt_tokens\": 1, \"completion_tokens\": 1}\n{\"timestamp\": 1764547201000000000, \"prompt_tokens\": 1, \"completion_tokens\": 1}", "nanoseconds read as seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLog()
			if err := l.Read("x.jsonl", strings.NewReader(tt.log), ""); err != nil {
				t.Fatal(err)
			}
			_, err := Summarize(l)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestPeakMinute: the busiest 60 s window, worked by hand; the scenario's stages follow it.
func TestPeakMinute(t *testing.T) {
	var b strings.Builder
	for i := range 30 { // 30 requests in the first 30 s, then one every 100 s
		fmt.Fprintf(&b, "{\"timestamp\": %d, \"prompt_tokens\": 100, \"completion_tokens\": 10}\n", i)
	}
	for _, ts := range []int{100, 200, 300} {
		fmt.Fprintf(&b, "{\"timestamp\": %d, \"prompt_tokens\": 100, \"completion_tokens\": 10}\n", ts)
	}
	l := NewLog()
	if err := l.Read("p.jsonl", strings.NewReader(b.String()), ""); err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(l)
	if err != nil {
		t.Fatal(err)
	}
	within(t, "mean", s.RatePerS.Mean, 32.0/300, 1e-9)
	within(t, "peak_minute", s.RatePerS.PeakMinute, 30.0/60, 1e-9)
	within(t, "peak_to_mean", s.PeakToMean, 0.5/(32.0/300), 1e-9)
	sc := loadScenario(t, Scenario(s, ScenarioOptions{Name: "peak"}))
	type stage struct {
		Name string
		Rate workload.Rate
	}
	var got []stage
	for _, st := range sc.Load.Stages {
		got = append(got, stage{st.Name, *st.Rate})
	}
	want := []stage{{"average", workload.ConstantRate(0.1067)}, {"peak", workload.ConstantRate(0.5)}, {"peak +30 %", workload.ConstantRate(0.65)}}
	if diff := cmp.Diff(want, got); diff != "" || sc.Load.Mode != workload.ModeRequestRate {
		t.Errorf("stages: average, peak, peak +30 %% request_rate stages (mode %q) (-want +got):\n%s", sc.Load.Mode, diff)
	}
	// Every length is 100: a constant, not a lognormal of sigma 0.
	if sc.Session.UserInputTokens.Kind != workload.DistConstant || sc.Session.UserInputTokens.Value != 100 {
		t.Errorf("user_input_tokens = %+v, want constant 100", sc.Session.UserInputTokens)
	}
}

// TestPoorFitIsUniform: lengths that are not lognormal (two clusters) are written as uniform up to p99.
func TestPoorFitIsUniform(t *testing.T) {
	var b strings.Builder
	for i := range 1000 {
		in := 50
		if i%2 == 0 {
			in = 4000
		}
		fmt.Fprintf(&b, "{\"timestamp\": %d, \"prompt_tokens\": %d, \"completion_tokens\": 10}\n", i, in)
	}
	l := NewLog()
	if err := l.Read("u.jsonl", strings.NewReader(b.String()), ""); err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(l)
	if err != nil {
		t.Fatal(err)
	}
	if s.InputFit.Good() {
		t.Fatalf("a two-cluster length called lognormal (err %.3f)", s.InputFit.Err)
	}
	sc := loadScenario(t, Scenario(s, ScenarioOptions{Name: "u"}))
	if d := sc.Session.UserInputTokens; d.Kind != workload.DistUniform || d.Max != 4000 {
		t.Errorf("user_input_tokens = %+v, want uniform up to 4000", d)
	}
}

// TestSeveralFiles: files of different formats add up; session ids are per file, so "c-17" in two
// files is two sessions.
func TestSeveralFiles(t *testing.T) {
	l := NewLog()
	for _, f := range []string{"testdata/request-log.jsonl", "testdata/request-log.jsonl", "testdata/mooncake.jsonl"} {
		if err := l.ReadFile(f, ""); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Summarize(l)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{FormatRequestLog, FormatRequestLog, FormatMooncake}, s.Formats); diff != "" {
		t.Errorf("formats (-want +got):\n%s", diff)
	}
	if s.Requests != 50 || s.Sessions == nil || s.Sessions.Count != 6 {
		t.Errorf("requests %d, sessions %+v; want 50 and 6", s.Requests, s.Sessions)
	}
}

// TestHourly: a log of two hours or more has its requests counted per hour from the first.
func TestHourly(t *testing.T) {
	var b strings.Builder
	for i, n := range []int{3, 1, 2} {
		for k := range n {
			fmt.Fprintf(&b, "{\"timestamp\": %d, \"prompt_tokens\": 5, \"completion_tokens\": 5}\n", i*3600+k*10)
		}
	}
	l := NewLog()
	if err := l.Read("h.jsonl", strings.NewReader(b.String()), ""); err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(l)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{3, 1, 2}, s.Hourly); diff != "" {
		t.Errorf("hourly (-want +got):\n%s", diff)
	}
	var out strings.Builder
	s.Print(&out, []string{"h.jsonl"})
	if !strings.Contains(out.String(), "diurnal     requests per hour from the first: 3 1 2 (busiest hour 3, quietest full hour 1)") {
		t.Errorf("summary lacks the diurnal line:\n%s", out.String())
	}
}

// TestScenarioPersonasFromSharing: the personas the scenario writes come from the first turns'
// sharing when the log shows it, and are assumed — saying why — when it does not.
func TestScenarioPersonasFromSharing(t *testing.T) {
	for _, tc := range []struct {
		file string
		want string
	}{
		{"mooncake.jsonl", "system_prompt_tokens: {dist: constant, value: 891}   # from logs (40 requests): a first turn (40 measured) shares 890.6 prompt tokens on average, 25.1 % of its prompt"},
		{"qwen-bailian.jsonl", "count: 4   # assumed: first turns share no prefix in the log (its 50.0 % sharing is sessions' own history"},
		{"request-log.jsonl", "count: 4   # assumed: no request shares a prefix with an earlier one in the log"},
		{"azure-2023.csv", "count: 4   # assumed: the log shows no prompt text, block ids or cached-token counts"},
	} {
		l := NewLog()
		if err := l.ReadFile(filepath.Join("testdata", tc.file), ""); err != nil {
			t.Fatal(err)
		}
		s, err := Summarize(l)
		if err != nil {
			t.Fatal(err)
		}
		if got := Scenario(s, ScenarioOptions{Sources: []string{tc.file}}); !strings.Contains(got, tc.want) {
			t.Errorf("%s: the scenario lacks %q:\n%s", tc.file, tc.want, got)
		}
	}
}
