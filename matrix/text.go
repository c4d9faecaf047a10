package matrix

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// Sections are the report's sections in a performance engagement report's order: the verdict first, for a reader who reads only the first paragraph.
var Sections = []string{"Verdict", "Question", "Workload", "Configuration", "Method", "Results", "Cost", "Limitations", "Reproduce"}

// Input is what the report is written from.
type Input struct {
	Scenario *workload.Scenario // the file as the user wrote it
	Plan     Plan
	Outcomes []Outcome // one per part, in the plan's order
	Dir      string    // the matrix's results directory (parts' directories are shown relative to it)
	Command  string    // the command that reruns the matrix
	Tool     string
	Started  time.Time
	Finished time.Time
	// Interrupted: the user stopped the matrix; the parts after the one running did not run.
	Interrupted bool
}

// Markdown is report.md: the sections in template order, each from the runs' stage reports.
func Markdown(in Input) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmark report: %s / run matrix / %s\n\n", in.Scenario.Name, in.Started.UTC().Format("2006-01-02"))
	write := map[string]func(*strings.Builder, Input){
		"Verdict": verdictSection, "Question": questionSection, "Workload": workloadSection, "Configuration": configurationSection,
		"Method": methodSection, "Results": resultsSection, "Cost": costSection, "Limitations": limitationsSection, "Reproduce": reproduceSection,
	}
	for _, s := range Sections {
		title := s
		if s == "Verdict" {
			title = "Verdict (read this first)"
		}
		fmt.Fprintf(&b, "## %s\n\n", title)
		write[s](&b, in)
		b.WriteString("\n")
	}
	return b.String()
}

// Headline is the verdict's first sentence, for the terminal.
func Headline(in Input) string {
	op, ok := Operating(in.Outcomes)
	slo := resultfiles.SLOText(in.Scenario.SLO)
	b, _ := outcome(in, PartB)
	switch {
	case slo == "":
		return "no SLO set: the matrix measured the curves but cannot say what load meets an objective (set slo: in the scenario)"
	case len(b.Runs) == 0:
		return fmt.Sprintf("part B (open loop) did not run, so no rate was held to the SLO (%s)", slo)
	case !ok:
		var stages []*resultfiles.StageReport
		for _, r := range b.Runs {
			stages = append(stages, r.Stages...)
		}
		line := fmt.Sprintf("no open-loop rate met the SLO (%s) in every repeat", slo)
		if levels := b.Levels(); len(levels) > 0 && len(levels[0].Stages) > 0 {
			lowest := levels[0]
			m, _ := lowest.Met()
			line += fmt.Sprintf(": the lowest, %s, met it in %d of %d", lowest.offered(), m, len(lowest.Stages))
			if broken := lowest.brokenAt(); broken != "" {
				line += " (" + broken + ")"
			}
		}
		if u := Unordered(in.Outcomes); u != "" {
			line += "; " + u
		}
		return line + uncounted(stages)
	}
	met, _ := op.Met()
	line := fmt.Sprintf("meets the SLO (%s) up to %s, in %d of %d repeats: goodput %s req/s, %s out tok/s",
		slo, op.offered(), met, len(op.Stages),
		Spread(op.values(func(s *metrics.StageSummary) float64 { return opt(s.Goodput.ReqPerSec) }), 2),
		Spread(op.values(func(s *metrics.StageSummary) float64 { return s.Throughput.OutTokPerSec }), 0))
	if u := Unordered(in.Outcomes); u != "" {
		line += "; " + u
	}
	return line
}

func outcome(in Input, id string) (Outcome, bool) {
	for _, o := range in.Outcomes {
		if o.Part.ID == id {
			return o, true
		}
	}
	return Outcome{}, false
}

func verdictSection(b *strings.Builder, in Input) {
	b.WriteString("**" + Headline(in) + "**")
	if op, ok := Operating(in.Outcomes); ok {
		fmt.Fprintf(b, ", TTFT p95 %s ms, TPOT p95 %s ms, measured from this machine (network RTT p50 %s ms). Cost at that point: %s per 1M output tokens.",
			Spread(op.values(func(s *metrics.StageSummary) float64 { return dist(s.TTFT, p95) }), 0),
			Spread(op.values(func(s *metrics.StageSummary) float64 { return dist(s.TPOT, p95) }), 0),
			Spread(rtts(op.Stages), 2), usd(op, func(s *metrics.StageSummary) *float64 { return s.Cost.USDPer1MOut }))
		for _, st := range op.Stages {
			if cause := st.Injector.Cause(); cause != "" {
				fmt.Fprintf(b, " **The client was strained** at that point (part B, stage %02d: %s): its latencies may read longer than the server's, never shorter.", st.Stage, cause)
				break
			}
		}
	} else {
		b.WriteString(".")
	}
	b.WriteString("\n\n")
	if a, ok := outcome(in, PartA); ok && a.Part.Skip == "" && len(a.Runs) > 0 {
		top, tok, safe := saturation(a)
		if tok > 0 {
			fmt.Fprintf(b, "- A, closed loop: throughput peaked at %.0f out tok/s (median of its repeats) at %s — saturation, not capacity.", tok, top.offered())
		} else {
			b.WriteString("- A, closed loop: no request succeeded.")
		}
		if safe != "" {
			fmt.Fprintf(b, " The largest concurrency that met the SLO in every repeat: %s.", safe)
		}
		b.WriteString("\n")
	}
	for _, id := range []string{PartC, PartD} {
		o, ok := outcome(in, id)
		if !ok {
			continue
		}
		fmt.Fprintf(b, "- %s, %s: %s\n", id, o.Part.Title, partLine(o))
	}
	for _, o := range in.Outcomes {
		for _, f := range o.Failures {
			fmt.Fprintf(b, "- **Part %s failed**: %s\n", o.Part.ID, cell(f))
		}
	}
	if in.Interrupted {
		b.WriteString("- **Interrupted**: the matrix was stopped; the part running then is partial and the later parts did not run.\n")
	}
	b.WriteString("- No incumbent was compared in this run (`plload ab` does that with the same prompts in the same window).\n")
}

// partLine is one part's result in a sentence: skipped, not run, SLO met k of n, or the time to absorb.
func partLine(o Outcome) string {
	switch {
	case o.Part.Skip != "":
		return "skipped: " + o.Part.Skip
	case len(o.Runs) == 0:
		return "did not run"
	case o.Part.ID == PartD:
		if noneSucceeded(o) {
			// Every window is unjudged then: "nothing to absorb" would read as a ramp met.
			return "no request succeeded, so there is no time to absorb"
		}
		for _, r := range o.Runs {
			for _, st := range r.Stages {
				if text := resultfiles.AbsorbText(st); text != "" {
					return text
				}
			}
		}
		return "no time to absorb: the SLO sets no latency limit to judge the windows by"
	}
	var met, n int
	var stages []*resultfiles.StageReport
	for _, l := range o.Levels() {
		m, _ := l.Met()
		met, n = met+m, n+len(l.Stages)
		stages = append(stages, l.Stages...)
	}
	return fmt.Sprintf("met the SLO in %d of %d stages%s", met, n, uncounted(stages))
}

// uncounted says, in the stage tables' words, which stages the SLO verdict shows but Level.Met does
// not count ("" when none): a PASS of a replay that fell behind its trace (not valid), and stages
// cut short (partial), whatever their verdict.
func uncounted(stages []*resultfiles.StageReport) string {
	var invalid, partial []string
	for _, st := range stages {
		switch sum := st.Summary; {
		case sum.Partial:
			partial = append(partial, fmt.Sprintf("%02d", st.Stage))
		case sum.SLO.Verdict == metrics.SLOPass && !sum.Measured():
			invalid = append(invalid, fmt.Sprintf("%02d", st.Stage))
		}
	}
	var out string
	if len(invalid) > 0 {
		out += fmt.Sprintf("; %s passed it only as a replay that fell behind its trace, which is not valid", resultfiles.StageList(invalid))
	}
	if len(partial) > 0 {
		out += fmt.Sprintf("; %s partial (cut short), so not counted", resultfiles.StageList(partial))
	}
	return out
}

// noneSucceeded reports whether the part sent requests and none of them, in any stage's window,
// succeeded.
func noneSucceeded(o Outcome) bool {
	sent := false
	for _, r := range o.Runs {
		for _, st := range r.Stages {
			if req := st.Summary.Requests; req.Succeeded > 0 {
				return false
			} else if req.InWindow > 0 {
				sent = true
			}
		}
	}
	return sent
}

func questionSection(b *strings.Builder, in Input) {
	sc := in.Scenario
	slo := resultfiles.SLOText(sc.SLO)
	if slo == "" {
		slo = "an SLO (none is set in the scenario)"
	}
	fmt.Fprintf(b, "At the request mix of `%s`, what rate does %s sustain within %s, measured from this machine — closed loop up to %d sessions, open loop at %g, %g and %g %s, and through a ramp from %g to %g %s?\n\n",
		filepath.Base(sc.File), targetText(sc), slo, in.Plan.Ladder[len(in.Plan.Ladder)-1], in.Plan.Rates.Mean, in.Plan.Rates.Peak,
		round4(PeakFactor*in.Plan.Rates.Peak), in.Plan.RateUnit, in.Plan.Rates.Mean, round4(PeakFactor*in.Plan.Rates.Peak), in.Plan.RateUnit)
	b.WriteString("Written by plload from the scenario: agree it with the customer, with a date and a name, before quoting any number from this report.\n")
}

func targetText(sc *workload.Scenario) string {
	if m := sc.Target.Mock; sc.UsesMock() && m != nil {
		return fmt.Sprintf("the bundled mock (TTFT %s, %g tok/s per stream)", m.TTFT, m.TPS)
	}
	return fmt.Sprintf("%s (model %s)", sc.Masked().Target.BaseURL, sc.Target.Model)
}

func workloadSection(b *strings.Builder, in Input) {
	sc := in.Scenario
	if src := sc.Source(); src != nil {
		kind := "trace"
		if sc.Workload.Dataset != nil {
			kind = "dataset"
		}
		fmt.Fprintf(b, "- Source: %s `%s` (format %s, sha256 %s), %d of %d lines used, %d conversations; its text is not shown.\n",
			kind, src.File, src.Format, src.SHA256, src.LinesUsed, src.Lines, len(src.Sessions))
	} else {
		fmt.Fprintf(b, "- Source: synthetic — %d personas with system prompts of %s tokens; turns %s, user message %s tokens, max output %s tokens, think time %s.\n",
			sc.Personas.Count, sc.Personas.SystemPromptTokens, sc.Session.Turns, sc.Session.UserInputTokens, sc.Session.MaxOutputTokens, sc.Session.ThinkTime)
	}
	var in_, out_, reqs int
	var hits []float64
	for _, o := range in.Outcomes {
		for _, r := range o.Runs {
			for _, st := range r.Stages {
				t := st.Summary.Throughput
				in_, out_, reqs = in_+t.InputTokens, out_+t.OutputTokens, reqs+t.Requests
				hits = append(hits, 100*opt(st.Summary.CacheHit))
			}
		}
	}
	if reqs > 0 {
		fmt.Fprintf(b, "- Measured over every stage's window: %d successful requests, %.0f input and %.0f output tokens per request on average (server usage).\n",
			reqs, float64(in_)/float64(reqs), float64(out_)/float64(reqs))
	}
	fmt.Fprintf(b, "- Arrival: A closed loop; B and D %s arrivals (rates from %s); C the trace's own clock.\n", arrivalText(sc), in.Plan.Rates.From)
	nonce := "off"
	if sc.Workload != nil && sc.Workload.Nonce != "" {
		nonce = string(sc.Workload.Nonce)
	}
	fmt.Fprintf(b, "- Prefix sharing: personas' system prompts shared as the scenario says; nonce %s; prefix cache hit %s %% over the stages.\n", nonce, Spread(hits, 1))
	fmt.Fprintf(b, "- Features: streaming (SSE), endpoint %s; no tools or JSON schema unless extra_body sends them.\n", sc.Target.Endpoint)
}

func arrivalText(sc *workload.Scenario) string {
	switch sc.Load.Arrival {
	case workload.ArrivalGamma:
		return fmt.Sprintf("gamma (CV %g)", sc.Load.CV)
	case workload.ArrivalConstant:
		return "constant-interval"
	}
	return "Poisson"
}

func configurationSection(b *strings.Builder, in Input) {
	sc := in.Scenario
	fmt.Fprintf(b, "- Endpoint: %s, endpoint %s, max tokens through `%s`; seed %d.\n", targetText(sc), sc.Target.Endpoint, sc.Target.MaxTokensField, sc.Seed)
	if p := sc.Cost.GPUHourlyUSD; p != nil {
		fmt.Fprintf(b, "- GPUs: %d at $%g/h%s.\n", sc.Cost.GPUCount, *p, labelText(sc.Cost.Label))
	} else {
		b.WriteString("- GPUs: not given (cost.gpu_hourly_usd and cost.gpu_count).\n")
	}
	b.WriteString("- Model revision, quantization, engine version, key flags, parallelism and replicas: not known to plload — write them here (or in cost.label) before the report leaves the team.\n")
}

func labelText(l string) string {
	if l == "" {
		return ""
	}
	return " (" + l + ")"
}

func methodSection(b *strings.Builder, in Input) {
	sc := in.Scenario
	first := sc.Load.Stages[0]
	fmt.Fprintf(b, "- Client: %s on this machine; network RTT to the endpoint (GET /v1/models on a warm connection before each stage) p50 %s ms; connections kept alive.\n",
		in.Tool, Spread(allRTTs(in.Outcomes), 2))
	fmt.Fprintf(b, "- Every point of A and B: warmup %s, then %s measured (the scenario's first stage); %d repeat(s), run as rounds (the whole ladder, then again), so drift over the run shows as spread.\n",
		first.Warmup, first.Duration, in.Plan.Repeats)
	for _, p := range in.Plan.Parts {
		fmt.Fprintf(b, "- %s, %s (%s): load.mode %s", p.ID, p.Title, p.Purpose, p.Mode)
		if len(p.Notes) > 0 {
			b.WriteString("; " + strings.Join(p.Notes, "; "))
		}
		if p.Skip != "" {
			b.WriteString("; skipped")
		}
		b.WriteString(".\n")
	}
	fmt.Fprintf(b, "- SLO: %s, judged per stage over its window's requests (latency percentiles over successful requests); a level \"met\" it when every repeat did. Spread is min–max over the repeats, not a confidence interval.\n", orNone(resultfiles.SLOText(sc.SLO)))
	fmt.Fprintf(b, "- Output length: at most the drawn max_output_tokens per request through `%s`; a trace's lengths are asked exactly (ignore_eos).\n", sc.Target.MaxTokensField)
	b.WriteString("- Each part is a normal plload results directory (its own report.md, stage_NN/stage.json, records); the numbers here are read from their stage.json files.\n")
}

func orNone(s string) string {
	if s == "" {
		return "none set (every verdict N/A)"
	}
	return s
}

func resultsSection(b *strings.Builder, in Input) {
	b.WriteString(resultfiles.MatrixChartLine + "\n\n")
	for _, o := range in.Outcomes {
		fmt.Fprintf(b, "### %s — %s\n\n", o.Part.ID, o.Part.Title)
		if o.Part.Skip != "" {
			b.WriteString("Skipped: " + o.Part.Skip + ".\n\n")
			continue
		}
		if len(o.Runs) == 0 {
			b.WriteString("Did not run.\n\n")
			for _, f := range o.Failures {
				b.WriteString("- " + cell(f) + "\n")
			}
			b.WriteString("\n")
			continue
		}
		b.WriteString(o.Table())
		b.WriteString("\n")
		if o.Part.ID == PartD {
			b.WriteString("Time to absorb: " + partLine(o) + ".\n\n")
		}
		for _, f := range o.Failures {
			b.WriteString("- **Failed**: " + cell(f) + "\n")
		}
		var dirs []string
		for _, r := range o.Runs {
			dirs = append(dirs, "`"+rel(in.Dir, r.Dir)+"`")
		}
		b.WriteString("Results: " + strings.Join(dirs, ", ") + ".\n\n")
	}
}

func costSection(b *strings.Builder, in Input) {
	sc := in.Scenario
	op, ok := Operating(in.Outcomes)
	switch {
	case sc.Cost.GPUHourlyUSD == nil:
		b.WriteString("- N/A: no price set (cost.gpu_hourly_usd).\n")
	case !ok:
		b.WriteString("- No operating point: no open-loop rate met the SLO in every repeat, and cost at saturation is not quoted (it is not capacity the customer can use).\n")
	default:
		fmt.Fprintf(b, "- At the operating point (B, %s): $/1M out = $%g/h × %d GPU(s) ÷ (%s out tok/s × 3600) × 10⁶ = %s; $/1K turns = %s.\n",
			op.offered(), *sc.Cost.GPUHourlyUSD, sc.Cost.GPUCount,
			Spread(op.values(func(s *metrics.StageSummary) float64 { return s.Throughput.OutTokPerSec }), 0),
			usd(op, func(s *metrics.StageSummary) *float64 { return s.Cost.USDPer1MOut }),
			usd(op, func(s *metrics.StageSummary) *float64 { return s.Cost.USDPer1KTurns }))
	}
}

// usd is a cost's spread over the level's repeats, "$0.93–0.95" ("N/A" when unknown).
func usd(l Level, f func(*metrics.StageSummary) *float64) string {
	vals := l.values(func(s *metrics.StageSummary) float64 {
		if v := f(s); v != nil {
			return *v
		}
		return math.NaN()
	})
	s := Spread(vals, 3)
	if s == "N/A" {
		return s
	}
	return "$" + s
}

func limitationsSection(b *strings.Builder, in Input) {
	sc := in.Scenario
	for _, o := range in.Outcomes {
		if o.Part.Skip != "" {
			fmt.Fprintf(b, "- Part %s (%s) did not run: %s.\n", o.Part.ID, o.Part.Title, o.Part.Skip)
		} else if len(o.Runs) == 0 {
			fmt.Fprintf(b, "- Part %s (%s) did not run.\n", o.Part.ID, o.Part.Title)
		}
	}
	if sc.UsesMock() {
		b.WriteString("- The target is plload's bundled mock: these are stand-in numbers, labelled as mock, not a server's.\n")
	}
	if sc.Source() == nil {
		b.WriteString("- Synthetic lengths and text (fitted or assumed), not the customer's prompts; prefix-cache hits reflect the scenario's persona sharing, not production's.\n")
	}
	b.WriteString("- No p99 promise beyond what was measured: at the measured mix, the p99 values above held at the rates above; confirm on replayed traffic (part C).\n")
	b.WriteString("- Throughput at saturation (part A) is not capacity: quote goodput at the SLO (part B).\n")
	b.WriteString("- Cost is at the measured operating point, not from a roofline bound.\n")
	b.WriteString("- The numbers hold for this endpoint, tier and configuration only: serverless and dedicated differ, and a configuration that will not ship (quantization, flags) needs its own run. A vendor's published benchmark is not this workload's result.\n")
	b.WriteString("- Not covered: output quality, cold start other than part D's ramp, other client regions (the client ran on this machine), multi-region failover, an incumbent comparison.\n")
	b.WriteString("- Server-side TTFT is beside the client's only where the target's /metrics was scraped (each stage's stage.json `server`).\n")
	fmt.Fprintf(b, "- Spread is min–max over %d repeat(s), not a confidence interval", in.Plan.Repeats)
	if in.Plan.Repeats == 1 {
		b.WriteString("; with one repeat there is no spread")
	}
	b.WriteString(".\n")
	if in.Interrupted {
		b.WriteString("- The matrix was interrupted: the part running then is partial.\n")
	}
}

func reproduceSection(b *strings.Builder, in Input) {
	b.WriteString("```sh\n" + in.Command + "\n```\n\nEach part alone (its scenario.resolved.yaml reruns it):\n\n")
	for _, o := range in.Outcomes {
		for _, r := range o.Runs {
			sha := ""
			if len(r.Stages) > 0 {
				sha = ", dataset sha256 " + r.Stages[0].DatasetSHA256 + " (stage 01)"
			}
			fmt.Fprintf(b, "- %s: `plload run %s`%s\n", o.Part.ID, filepath.Join(r.Dir, "scenario.resolved.yaml"), sha)
		}
	}
	fmt.Fprintf(b, "\nRaw outputs: each part's stage_NN/profile_export.jsonl (one AIPerf record per request) and stage.json. Matrix run %s → %s.\n",
		in.Started.UTC().Format(time.RFC3339), in.Finished.UTC().Format(time.RFC3339))
}

func rtts(stages []*resultfiles.StageReport) []float64 {
	out := make([]float64, len(stages))
	for i, st := range stages {
		out[i] = dist(st.NetworkRTT, p50)
	}
	return out
}

func allRTTs(outcomes []Outcome) []float64 {
	var out []float64
	for _, o := range outcomes {
		for _, r := range o.Runs {
			out = append(out, rtts(r.Stages)...)
		}
	}
	return out
}

func rel(base, p string) string {
	if r, err := filepath.Rel(base, p); err == nil {
		return r
	}
	return p
}
