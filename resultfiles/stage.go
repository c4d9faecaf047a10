// Package results is the results model: the machine-read files of a run and their types —
// stage_NN/stage.json (StageReport) with the AIPerf and vLLM summary files written beside it,
// report.json (Report), search.json (Search) — how they are read and written, and the JSON schemas
// under schema/ that they follow (docs/records.md). The commands and the packages that run, search,
// compare or merge runs build these; package report renders them for people, package gate judges them.
package resultfiles

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/workload"
)

// SchemaVersion is the version of stage.json and report.json. It changes when a field changes meaning
// or goes away; new fields do not change it.
const SchemaVersion = 1

// StageReport is stage_NN/stage.json: everything `plload report` needs about one stage, so it works
// when the request records were deleted (output.record_requests: false).
type StageReport struct {
	SchemaVersion int    `json:"schema_version"`
	Tool          string `json:"tool"`
	Run           string `json:"run"` // the scenario's name
	Stage         int    `json:"stage"`
	Stages        int    `json:"stages"`
	Mode          string `json:"mode"`
	// Name is the stage's label from the scenario ("average", "peak +30%"); absent when it has none.
	Name string `json:"name,omitempty"`
	// Rate is a request_rate stage's rate: requests/s, or a ramp.
	Rate *StageRate `json:"rate,omitempty"`
	// Arrival is request_rate's inter-arrival process (poisson, gamma, constant), CV the gamma
	// process's coefficient of variation.
	Arrival string  `json:"arrival,omitempty"`
	CV      float64 `json:"cv,omitempty"`
	// MaxInFlight caps the requests in flight of a request_rate or replay stage.
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// TimeScale multiplies a replayed trace's times (0.5 = twice as fast).
	TimeScale      float64 `json:"time_scale,omitempty"`
	Concurrency    int     `json:"concurrency,omitempty"`
	SessionsPerSec float64 `json:"sessions_per_sec,omitempty"`
	MaxConcurrency int     `json:"max_concurrency,omitempty"`
	Warmup         string  `json:"warmup"`
	Duration       string  `json:"duration"`
	DatasetSHA256  string  `json:"dataset_sha256"`
	// Source is where a dataset's or trace's workload came from (nil: synthetic).
	Source      *SourceInfo            `json:"source,omitempty"`
	Target      Target                 `json:"target"`
	SLO         metrics.SLOLimits      `json:"slo"`
	Cost        CostInputs             `json:"cost"`
	Partial     bool                   `json:"partial"`
	RecordsKept bool                   `json:"records_kept"`
	Engine      EngineCounts           `json:"engine"`
	Injector    metrics.InjectorHealth `json:"injector"`
	// NetworkRTT is GET /v1/models timed before the stage on a warm connection.
	NetworkRTT metrics.Dist `json:"network_rtt_ms"`
	// Server is the target's own view from its Prometheus endpoint (nil when scraping was off).
	Server *metrics.ServerSummary `json:"server,omitempty"`
	// GPU is the GPUs' telemetry over the window (nil when it was off by the scenario).
	GPU     *metrics.GPUSummary   `json:"gpu,omitempty"`
	Summary *metrics.StageSummary `json:"summary"`
	// Batch is a batch stage's job (load.mode batch): completion time, rates and cost per job over
	// every record; absent on other stages.
	Batch *metrics.BatchResult `json:"batch,omitempty"`
	// Shard is this process's part of a sharded run (docs/deployment.md); absent when the run is not sharded.
	Shard *ShardInfo `json:"shard,omitempty"`
	// Tokenizer is what every length plload chose was counted in (docs/tokenizers.md); absent in files that
	// plload did not write.
	Tokenizer *TokenizerInfo `json:"tokenizer,omitempty"`
	// TraceBlockReuse is a trace stage's own prefix reuse: the share of its requests' hash-id blocks
	// that an earlier request of the trace read too — what a prefix cache large enough for the
	// trace's working set would hit. Absent without block ids.
	TraceBlockReuse *float64 `json:"trace_block_reuse,omitempty"`
	// ServerCacheTokens is the target's prefix cache size in tokens where plload knows it: what the
	// server's metrics said (Server.CacheTokens), or the bundled mock's; absent otherwise.
	ServerCacheTokens *int `json:"server_cache_tokens,omitempty"`
}

// CacheAgainstTrace says how the stage's cache hit compares with its trace's own block reuse, and,
// when the hit falls more than 5 points short, the likely reason: "cache hit 4.0 % against the
// trace's block reuse 17.0 %: the server's prefix cache (500000 tokens) is likely smaller than the
// trace's working set"; short says it fell short. "" without both numbers.
func (r *StageReport) CacheAgainstTrace() (line string, short bool) {
	s := r.Summary
	if r.TraceBlockReuse == nil || s == nil || !s.CacheHit.OK {
		return "", false
	}
	line = fmt.Sprintf("cache hit %.1f %% against the trace's block reuse %.1f %%", 100*s.CacheHit.V, 100**r.TraceBlockReuse)
	if s.CacheHit.V >= *r.TraceBlockReuse-0.05 {
		return line, false
	}
	cache := "the server's prefix cache"
	if r.ServerCacheTokens != nil {
		cache += fmt.Sprintf(" (%d tokens)", *r.ServerCacheTokens)
	}
	return line + ": " + cache + " is likely smaller than the trace's working set (the blocks a request reuses were evicted before it came), or the server does not cache prefixes", true
}

// TokenizerInfo names a tokenizer and the sha256 of its definition (tokenizer.json's bytes).
type TokenizerInfo struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// tokenizerInfo is the scenario's tokenizer as stage.json and report.json name it.
func tokenizerInfo(sc *workload.Scenario) *TokenizerInfo {
	tok := sc.Tokenizer()
	return &TokenizerInfo{Name: tok.Name(), SHA256: tok.SHA256()}
}

// ShardInfo is which shard wrote a results directory and how its clock stood against the
// coordinator's (docs/deployment.md): ClockOffsetNs is the coordinator's clock minus the shard's (as
// cluster.Member.Offset measures it), so a merge puts the shard's epoch-ns times on the
// coordinator's clock by adding it, good to ±OffsetUncertaintyNs. Both are 0 for a shard run
// without a coordinator.
type ShardInfo struct {
	Index               int   `json:"index"`
	Count               int   `json:"count"`
	ClockOffsetNs       int64 `json:"clock_offset_ns"`
	OffsetUncertaintyNs int64 `json:"offset_uncertainty_ns"`
}

// SourceInfo identifies a workload read from a file — never its text, which can be a customer's.
type SourceInfo struct {
	Kind      string         `json:"kind"` // dataset or trace
	File      string         `json:"file"`
	Format    string         `json:"format"`
	SHA256    string         `json:"sha256"` // of the input file
	Lines     int            `json:"lines"`
	LinesUsed int            `json:"lines_used"`
	Options   map[string]any `json:"options"`
}

// sourceInfo describes the scenario's source for stage.json (nil: synthetic).
func sourceInfo(sc *workload.Scenario) *SourceInfo {
	src := sc.Source()
	if src == nil {
		return nil
	}
	info := &SourceInfo{File: src.File, Format: src.Format, SHA256: src.SHA256, Lines: src.Lines, LinesUsed: src.LinesUsed,
		Options: map[string]any{}}
	if d := sc.Workload.Dataset; d != nil {
		info.Kind = "dataset"
		info.Options["order"], info.Options["history"] = d.Order, d.History
		out, _ := d.OutputTokens.MarshalYAML()
		info.Options["output_tokens"] = fmt.Sprint(out)
		if d.OutputTokens.Dist != nil {
			info.Options["output_tokens"] = d.OutputTokens.Dist.String()
		}
		for k, v := range map[string]int{"max_turns": d.MaxTurns, "min_input_tokens": d.MinInputTokens, "max_input_tokens": d.MaxInputTokens} {
			if v > 0 {
				info.Options[k] = v
			}
		}
	} else if t := sc.Workload.Trace; t != nil {
		info.Kind = "trace"
		info.Options["block_tokens"] = t.BlockTokens
		if t.Start > 0 {
			info.Options["start"] = t.Start.String()
		}
		if t.Duration > 0 {
			info.Options["duration"] = t.Duration.String()
		}
		if t.MaxRequests > 0 {
			info.Options["max_requests"] = t.MaxRequests
		}
		for k, v := range t.Filter {
			info.Options["filter_"+k] = v
		}
	}
	return info
}

// Target is the server a stage ran against (no secrets).
type Target struct {
	BaseURL        string `json:"base_url"`
	Model          string `json:"model"`
	Endpoint       string `json:"endpoint"`
	MaxTokensField string `json:"max_tokens_field"`
	// History is target.history where the endpoint has one (who held the conversation).
	History string `json:"history,omitempty"`
}

// CostInputs are the cost inputs as the scenario gave them.
type CostInputs struct {
	metrics.CostInputs
	Label string `json:"label,omitempty"`
}

// MarshalJSON writes the inputs and the label (the embedded type's own MarshalJSON would drop it).
func (c CostInputs) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(c.CostInputs)
	if err != nil || c.Label == "" {
		return b, err
	}
	label, err := json.Marshal(c.Label)
	if err != nil {
		return nil, err
	}
	return append(append(b[:len(b)-1], `,"label":`...), append(label, '}')...), nil
}

// UnmarshalJSON reads the inputs and the label.
func (c *CostInputs) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &c.CostInputs); err != nil {
		return err
	}
	var l struct {
		Label string `json:"label"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return err
	}
	c.Label = l.Label
	return nil
}

// EngineCounts are the load generator's own tallies for the stage.
type EngineCounts struct {
	Issued     int `json:"issued"`
	Sessions   int `json:"sessions"`
	Reused     int `json:"reused_sessions"`
	NotStarted int `json:"never_started"`
	// Retried: requests sent a second time, at once, on a new connection because the reused one they
	// first went out on failed before any response byte (the server had closed it); each is still one
	// request and one record, marked "retried".
	Retried int `json:"retried_requests"`
	// RetriedAfterClose: of Retried, the requests whose first try had been written in full when the
	// server closed the connection unanswered. The server may have read such a request and done the
	// work, so it may have served it twice (a client cannot tell this from a server that closed an
	// idle connection just as the request went out); absent when 0.
	RetriedAfterClose int `json:"retried_after_close,omitempty"`
	// Outages are the spans in which every request failed before a response byte (or got 429/5xx),
	// in time order; [] when there were none.
	Outages []Outage `json:"outages"`
	// Aborted is why the engine stopped the stage early ("" when it did not): the target was
	// unreachable for load.abort_after, or a records file could not be written (the disk full: the
	// text names the file and how many records were lost).
	Aborted string `json:"aborted,omitempty"`
	// Protocol is the protocol the answers came in, as the server spoke it ("HTTP/1.1", "HTTP/2.0";
	// comma-separated when they differed); Connections counts the connections that carried the
	// stage's requests (on HTTP/2 many streams share one). Both absent when nothing was answered, and
	// in files written before plload measured them.
	Protocol    string `json:"protocol,omitempty"`
	Connections int    `json:"connections,omitempty"`
}

// withLists returns the counts with Outages [] rather than null (a list is [] in JSON).
func (e EngineCounts) withLists() EngineCounts {
	if e.Outages == nil {
		e.Outages = []Outage{}
	}
	return e
}

// Outage is a span of a stage in which every request failed the same way.
type Outage struct {
	From     string `json:"from"` // RFC 3339, UTC, ms
	To       string `json:"to"`
	Kind     string `json:"kind"` // refused, dns, tls, 404, 429, 5xx, timeout, reset, stream cut, ...
	Requests int    `json:"requests"`
	// FirstMessage is the first failure's message, verbatim.
	FirstMessage string `json:"first_message"`
}

// NewStageReport wraps a summary with the stage's context from the scenario.
func NewStageReport(tool string, sc *workload.Scenario, i int, sha string, sum *metrics.StageSummary, eng EngineCounts) *StageReport {
	st := sc.Load.Stages[i]
	in := StageInput(sc, i)
	r := &StageReport{
		SchemaVersion: SchemaVersion, Tool: tool, Run: sc.Name, Stage: i + 1, Stages: len(sc.Load.Stages),
		Mode: sc.Load.Mode, Name: st.Name, Concurrency: st.Concurrency, SessionsPerSec: st.SessionsPerSec, MaxConcurrency: st.MaxConcurrency,
		Warmup: st.Warmup.String(), Duration: st.Duration.String(), DatasetSHA256: sha, Source: sourceInfo(sc),
		Target: Target{BaseURL: sc.Masked().Target.BaseURL, Model: sc.Target.Model, Endpoint: sc.Target.Endpoint, History: sc.Target.History,
			MaxTokensField: sc.Target.LimitField()},
		SLO: in.SLO, Cost: CostInputs{CostInputs: in.Cost, Label: sc.Cost.Label},
		Partial: sum.Partial, RecordsKept: sc.Output.RecordRequests, Engine: eng.withLists(), Summary: sum,
		Tokenizer: tokenizerInfo(sc), Batch: sum.Batch,
	}
	openLoopFields(r, sc.Load, st)
	if w := promptAgreementWarning(r.Tokenizer.Name, sum.PromptTokensAgreement); w != "" {
		sum.Warnings = append(sum.Warnings, w)
	}
	if w := NoneEndedWarning(sum); w != "" {
		sum.Warnings = append(sum.Warnings, w)
	}
	return r
}

// NoneEndedWarning says when requests started in the stage's window were still running at its end
// and none ended in it: their answers outlast the window, so every throughput reads 0 while the
// server was busy ("" otherwise). Still running means a success that ended after the window or a
// request the drain cancelled; a stage whose requests all failed says nothing here, since the
// failures, not the window's length, explain the zero (its error count says so).
func NoneEndedWarning(sum *metrics.StageSummary) string {
	if sum == nil || sum.Requests.InWindow == 0 || sum.Throughput.Requests > 0 || sum.Partial {
		return ""
	}
	q := sum.Requests
	running := q.Succeeded + q.Cancelled - q.Interrupted
	if running <= 0 {
		return ""
	}
	line := fmt.Sprintf("no request ended in the window: %d started in its %s s, and every answer outlasted it (throughput reads 0)",
		q.InWindow, SecondsBrief(sum.Window.Seconds))
	if failed := q.InWindow - running; failed > 0 {
		line = fmt.Sprintf("no request ended in the window: %d of the %d started in its %s s were still running at its end (throughput reads 0; %d failed)",
			running, q.InWindow, SecondsBrief(sum.Window.Seconds), failed)
	}
	if sum.E2E.Known() {
		line += fmt.Sprintf("; requests took %.1f s (E2E p50)", sum.E2E.P50/1000)
	}
	return line + ": lengthen the stage (load.stages[].duration, or --duration) to several answers' length"
}

// openLoopFields copies the load keys the stage's mode reads into the stage report (rate,
// arrival, cv, max_in_flight, time_scale); each is set only in a mode that reads it, so a
// concurrency stage's stage.json is as it was.
func openLoopFields(r *StageReport, l workload.LoadPlan, st workload.Stage) {
	m := l.LoadMode()
	if m.ReadsStageKey("rate") && st.Rate != nil {
		r.Rate = &StageRate{From: st.Rate.From, To: st.Rate.To, Over: st.Rate.Over.String()}
		if !st.Rate.IsRamp() {
			r.Rate = &StageRate{From: st.Rate.To, To: st.Rate.To}
		}
	}
	if m.ReadsLoadKey("arrival") {
		r.Arrival = l.Arrival
	}
	if m.ReadsLoadKey("cv") && l.Arrival == workload.ArrivalGamma {
		r.CV = l.CV
	}
	if m.ReadsLoadKey("max_in_flight") {
		r.MaxInFlight = l.MaxInFlight
	}
	if m.ReadsLoadKey("time_scale") {
		r.TimeScale = l.TimeScale
	}
}

// stageLoad is the stage's load as its mode reads it, for the load column.
func (r *StageReport) stageLoad() workload.StageLoad {
	l := workload.StageLoad{Mode: r.Mode, Concurrency: r.Concurrency, SessionsPerSec: r.SessionsPerSec,
		MaxConcurrency: r.MaxConcurrency, Arrival: r.Arrival, CV: r.CV, MaxInFlight: r.MaxInFlight, TimeScale: r.TimeScale}
	if r.Rate != nil {
		l.Rate = &workload.LoadRate{From: r.Rate.From, To: r.Rate.To, Over: r.Rate.Over}
	}
	return l
}

// StageRate is a request_rate stage's rate in stage.json: a number (requests/s) when it is constant,
// else the ramp {"from", "to", "over"}, as the scenario writes it.
type StageRate struct {
	From float64 `json:"from"`
	To   float64 `json:"to"`
	Over string  `json:"over"` // "" for a constant rate
}

// IsRamp reports whether the rate changes over the stage.
func (r StageRate) IsRamp() bool { return r.Over != "" && r.From != r.To }

// MarshalJSON writes a number for a constant rate, else the ramp.
func (r StageRate) MarshalJSON() ([]byte, error) {
	if !r.IsRamp() {
		return json.Marshal(r.To)
	}
	type ramp StageRate // without this method
	return json.Marshal(ramp(r))
}

// UnmarshalJSON reads a number or a ramp.
func (r *StageRate) UnmarshalJSON(b []byte) error {
	var v float64
	if err := json.Unmarshal(b, &v); err == nil {
		*r = StageRate{From: v, To: v}
		return nil
	}
	type ramp StageRate
	var rp ramp
	if err := json.Unmarshal(b, &rp); err != nil {
		return fmt.Errorf("rate: accepted: a number (requests/s) or {\"from\", \"to\", \"over\"}: %w", err)
	}
	*r = StageRate(rp)
	return nil
}

// Write writes stage.json into dir (atomically), and beside it the same numbers in the files AIPerf
// and vLLM users' tools read: profile_export_aiperf.json and .csv, and vllm_bench_result.json (whose
// per-request arrays come from dir's profile_export.jsonl, so call Write before the records go).
func (r *StageReport) Write(dir string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := metrics.WriteFileAtomic(filepath.Join(dir, "stage.json"), append(data, '\n')); err != nil {
		return err
	}
	if err := r.writeAIPerfSummary(dir); err != nil {
		return err
	}
	return r.writeVLLMResult(dir)
}

// ReadStage reads a stage.json, refusing a schema it does not know.
func ReadStage(path string) (*StageReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r StageReport
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not a stage.json: %v", path, err)
	}
	if r.SchemaVersion != SchemaVersion || r.Summary == nil {
		return nil, fmt.Errorf("%s: schema_version %d; this plload reads %d", path, r.SchemaVersion, SchemaVersion)
	}
	if r.Batch != nil {
		r.Summary.Batch = r.Batch
	}
	return &r, nil
}

// ReadRun reads every stage_NN/stage.json of a results directory, in stage order.
func ReadRun(dir string) ([]*StageReport, error) {
	paths, _ := filepath.Glob(filepath.Join(dir, "stage_*", "stage.json"))
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s: no stage_NN/stage.json: not a plload results directory (an AIPerf artifact directory needs its profile_export.jsonl)", dir)
	}
	var out []*StageReport
	for _, p := range paths {
		r, err := ReadStage(p)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
