// Package workload reads scenario files and turns them into reproducible workloads: personas, session
// pools, synthetic text measured in the scenario's tokenizer (o200k_base by default), and AIPerf multi_turn datasets.
package workload

import (
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/plload/plload/tokenizer"
)

// Scenario is a whole scenario file with defaults applied. Field names and defaults follow the
// personaload scenario table, plus target.mock, target.headers, target.tls and target.endpoint.
type Scenario struct {
	Name     string   `yaml:"name"`
	Seed     uint64   `yaml:"seed"`
	Target   Target   `yaml:"target"`
	Personas Personas `yaml:"personas"`
	Session  Session  `yaml:"session"`
	Load     LoadPlan `yaml:"load"`
	SLO      SLO      `yaml:"slo"`
	Cost     Cost     `yaml:"cost"`
	Output   Output   `yaml:"output"`
	// Gate holds threshold rules checked after the run, such as "ttft_p95 < 500ms" (plload gate).
	Gate []string `yaml:"gate,omitempty"`
	// Workload names real data — a dataset or a trace — in place of the synthetic personas and
	// session lengths (docs/data.md); nil: synthetic.
	Workload *DataSource `yaml:"workload,omitempty"`
	// Matrix holds plload matrix's keys (workload/matrix.go); nil: none.
	Matrix *Matrix `yaml:"matrix,omitempty,flow"`
	// Embeddings and Rerank shape the requests of a stage of target.endpoint embeddings or rerank
	// (workload/retrieval.go); nil on other endpoints.
	Embeddings *EmbeddingsSpec `yaml:"embeddings,omitempty"`
	Rerank     *RerankSpec     `yaml:"rerank,omitempty"`

	// File is the path the scenario was read from; relative paths inside it are resolved against its folder.
	File string `yaml:"-"`
	// positions maps each YAML path present in the file to where its value starts.
	positions    map[string]position
	keyPositions map[string]position
	// filePersonas holds the personas read (and checked) from personas.file.
	filePersonas []Persona
	// source holds the dataset or trace read (and checked) from workload.
	source *Source
	// tok counts every length: target.tokenizer, loaded by the checker.
	tok tokenizer.Tokenizer
	// toolsFile is session.tools.file, read and checked: a compact JSON array.
	toolsFile []byte
	// schemaDoc and schema are session.response_format's schema, read and compiled by the checker.
	schemaDoc any
	schema    *jsonschema.Schema
}

// Target is the server under test.
type Target struct {
	BaseURL        string            `yaml:"base_url"`
	Model          string            `yaml:"model"`
	APIKeyEnv      string            `yaml:"api_key_env,omitempty"`
	Timeout        Duration          `yaml:"timeout"`
	Tokenizer      string            `yaml:"tokenizer"`
	MaxTokensField string            `yaml:"max_tokens_field"`
	ExtraBody      map[string]any    `yaml:"extra_body,omitempty"`
	Headers        map[string]string `yaml:"headers,omitempty"`
	TLS            TLS               `yaml:"tls,omitempty"`
	Endpoint       string            `yaml:"endpoint"`
	// CacheControl marks the persona and the history's last message as prompt-cache breakpoints
	// (cache_control: {type: ephemeral}); endpoint messages only.
	CacheControl bool `yaml:"cache_control,omitempty"`
	// History is who holds a session's conversation (endpoint responses only): "client" sends it
	// whole every turn; "server" stores each answer and sends only what is new with
	// previous_response_id. Empty on other endpoints.
	History string `yaml:"history,omitempty"`
	// HTTP is the protocol: "1.1", "2" (h2c with prior knowledge on http://, ALPN on https://) or
	// "auto" (HTTP/2 where TLS negotiates it, else HTTP/1.1).
	HTTP string `yaml:"http"`
	// ServerMetricsURL is the target's Prometheus endpoint; empty means <base_url without /v1>/metrics,
	// "off" turns scraping off.
	ServerMetricsURL string `yaml:"server_metrics_url,omitempty"`
	// GPUMetricsURL is where the GPUs' telemetry is read (docs/measurement.md, GPU telemetry): one
	// or more DCGM exporter endpoints, "nvidia-smi" (a local child process), "off", or empty for
	// auto (the target host's exporter on port 9400, else a local nvidia-smi where the target is on
	// this machine; nothing answering is a note, not an error).
	GPUMetricsURL URLList     `yaml:"gpu_metrics_url,omitempty"`
	Mock          *MockTarget `yaml:"mock,omitempty"`
	// SessionHeader names a header (X-Session-ID, say) that carries a stable per-session id on every
	// turn, so a router can keep a session on one replica; "" sends none.
	SessionHeader string `yaml:"session_header,omitempty"`
	// Models is a model (or LoRA adapter) mix: each session asks for one, picked by weight (seeded,
	// Workload.ModelFor); empty: every session asks for Model.
	Models []ModelWeight `yaml:"models,omitempty"`
	// Stream false sends non-streamed requests; nil (not set) is true (Scenario.Streamed).
	Stream *bool `yaml:"stream,omitempty"`
}

// ModelWeight is one model of target.models and its share of the sessions (weight ÷ the sum).
type ModelWeight struct {
	Name   string  `yaml:"name"`
	Weight float64 `yaml:"weight"`
}

// MockTarget asks `plload run` to start the bundled mock in-process instead of reaching a real server.
type MockTarget struct {
	TTFT            Duration `yaml:"ttft"`
	TPS             float64  `yaml:"tps"`
	Jitter          float64  `yaml:"jitter"`
	ErrorRate       float64  `yaml:"error_rate"`
	CacheTTFTFactor float64  `yaml:"cache_ttft_factor"`
	Usage           bool     `yaml:"usage"`
	Seed            uint64   `yaml:"seed"`
	// CloseAfterResponse closes each connection after its answer while advertising keep-alive, as
	// llama.cpp's server does.
	CloseAfterResponse bool `yaml:"close_after_response"`
	// MaxConcurrency is the mock's request slots, beyond which requests queue (0: unlimited).
	// ScaleMaxConcurrency and ScaleAfter model a deployment that scales: ScaleAfter after the mock's
	// first request its slots go from MaxConcurrency to ScaleMaxConcurrency (0: they never change).
	MaxConcurrency      int      `yaml:"max_concurrency,omitempty"`
	ScaleMaxConcurrency int      `yaml:"scale_max_concurrency,omitempty"`
	ScaleAfter          Duration `yaml:"scale_after,omitempty"`
	// ToolCallRate is the share of answers to a request with tools that are tool calls (nil: the
	// mock's default, 0.5); JSONValidRate the share of structured answers that are valid (nil: 1).
	ToolCallRate  *float64 `yaml:"tool_call_rate,omitempty"`
	JSONValidRate *float64 `yaml:"json_valid_rate,omitempty"`
	// Models are the model names the mock serves (empty: any).
	Models []string `yaml:"models,omitempty"`
	// GPUs, GPUIdleWatts and GPUJoulesPerToken shape the mock's DCGM exporter (GET /dcgm/metrics,
	// docs/mock.md): the devices it reports, each one's idle draw, and the energy of a generated
	// token over all of them (nil: the mock's defaults, 1 GPU, 80 W, 0.25 J).
	GPUs              *int     `yaml:"gpus,omitempty"`
	GPUIdleWatts      *float64 `yaml:"gpu_idle_watts,omitempty"`
	GPUJoulesPerToken *float64 `yaml:"gpu_joules_per_token,omitempty"`
	// PrefillPerToken is added to TTFT for every prompt token the mock's prefix cache did not
	// hold (text and image tokens alike): what makes a longer, uncached prompt slower (0: none).
	PrefillPerToken Duration `yaml:"prefill_per_token,omitempty"`
}

// TLS holds the options for https targets.
type TLS struct {
	CAFile             string `yaml:"ca_file,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify,omitempty"`
}

// Personas describes where system prompts come from.
type Personas struct {
	Source             string `yaml:"source"`
	Count              int    `yaml:"count,omitempty"`
	SystemPromptTokens Dist   `yaml:"system_prompt_tokens,omitempty,flow" limit:"1000000"`
	File               string `yaml:"file,omitempty"`
}

// Session is the shape of one conversation.
type Session struct {
	Turns            Dist    `yaml:"turns,omitempty,flow" limit:"10000"`
	UserInputTokens  Dist    `yaml:"user_input_tokens,omitempty,flow" limit:"1000000"`
	MaxOutputTokens  Dist    `yaml:"max_output_tokens,omitempty,flow" limit:"1000000"`
	ThinkTime        Dist    `yaml:"think_time,flow" unit:"duration" limit:"86400"`
	Language         string  `yaml:"language"`
	RetrievedTokens  *Dist   `yaml:"retrieved_tokens,omitempty,flow" limit:"1000000"`
	PersonaSelection string  `yaml:"persona_selection"`
	ZipfS            float64 `yaml:"zipf_s"`
	// Tools makes the sessions agents: every request carries tools, and tool calls are answered
	// with synthetic results (docs/scenario.md); nil: plain chat.
	Tools *ToolsSpec `yaml:"tools,omitempty"`
	// ResponseFormat asks for structured output on every request; nil: none.
	ResponseFormat *ResponseFormatSpec `yaml:"response_format,omitempty"`
	// RAG makes every turn a retrieval pipeline: embed the question, rerank candidate documents,
	// then chat with the best (workload/retrieval.go); nil: plain chat.
	RAG *RAGSpec `yaml:"rag,omitempty"`
	// Images makes turns carry images (workload/images.go); nil: text only.
	Images *ImagesSpec `yaml:"images,omitempty"`
}

// LoadPlan is how sessions are started, and the stages of the run. Each mode (LoadMode, one file
// mode_<name>.go each) says which of the keys below it reads, and checks and defaults them.
type LoadPlan struct {
	Mode              string   `yaml:"mode"`
	Stages            []Stage  `yaml:"stages,flow"`
	DrainTimeout      Duration `yaml:"drain_timeout"`
	SessionPoolFactor float64  `yaml:"session_pool_factor"`
	// SessionReuse is what a stage does once it needs more sessions than its pool holds (ReuseFresh,
	// ReuseWrap, ReuseWrapIdentical): a resent conversation is a prefix the server may have cached,
	// so only a scenario that asks for it sends one byte for byte.
	SessionReuse SessionReuse `yaml:"session_reuse"`
	// AbortAfter stops a stage as failed when every request for this long failed before any
	// response byte: the target is unreachable, and more load would only flood it.
	AbortAfter Duration `yaml:"abort_after"`
	// Arrival is request_rate's inter-arrival process: poisson (default), gamma (with CV) or constant.
	Arrival string `yaml:"arrival,omitempty"`
	// CV is the gamma process's coefficient of variation of inter-arrival times (1 = Poisson, > 1
	// bursty).
	CV float64 `yaml:"cv,omitempty"`
	// MaxInFlight caps the requests (request_rate, replay, batch) in flight at once; later ones wait for a
	// slot, never dropped, their send lag recorded.
	MaxInFlight int `yaml:"max_in_flight,omitempty"`
	// TimeScale multiplies a replayed trace's times (0.5 = twice as fast).
	TimeScale float64 `yaml:"time_scale,omitempty"`
}

// DefaultMaxInFlight is max_in_flight when the file does not set it.
const DefaultMaxInFlight = 1000

// Stage is one step of the run. Concurrency stages use Concurrency; arrival_rate stages use
// SessionsPerSec and MaxConcurrency; request_rate stages use Rate; replay stages only their times;
// batch stages Requests. Any stage may end by count (Requests), with or without a duration.
type Stage struct {
	// Name labels the stage in reports ("average", "peak +30%"); "" prints its number only.
	Name           string   `yaml:"name,omitempty"`
	Rate           *Rate    `yaml:"rate,omitempty,flow"`
	Concurrency    int      `yaml:"concurrency,omitempty"`
	SessionsPerSec float64  `yaml:"sessions_per_sec,omitempty"`
	MaxConcurrency int      `yaml:"max_concurrency,omitempty"`
	Duration       Duration `yaml:"duration,omitempty"`
	Warmup         Duration `yaml:"warmup"`
	Sessions       int      `yaml:"sessions,omitempty"`
	// Requests ends the stage after this many requests were sent (0: by duration only); a batch
	// stage's size.
	Requests int `yaml:"requests,omitempty"`
}

// Cost holds the inputs to the cost figures.
type Cost struct {
	// GPUHourlyUSD is the hourly price of one GPU; nil (not set) makes every cost figure N/A.
	GPUHourlyUSD *float64 `yaml:"gpu_hourly_usd,omitempty"`
	GPUCount     int      `yaml:"gpu_count"`
	// EnergyUSDPerKWh is the price of a kilowatt-hour: with GPU telemetry, a stage's energy is
	// priced beside the hourly cost; nil (not set) leaves the energy cost out.
	EnergyUSDPerKWh *float64 `yaml:"energy_usd_per_kwh,omitempty"`
	Label           string   `yaml:"label,omitempty"`
}

// ResultsVolumeEnv names, in a pod or job, what holds the results directory (deploy sets it to a
// claim): plload run names it when it cannot write there.
const ResultsVolumeEnv = "PLLOAD_RESULTS_VOLUME"

// Output says where results go and what is served live.
type Output struct {
	Dir            string `yaml:"dir"`
	PrometheusPort int    `yaml:"prometheus_port,omitempty"`
	PrometheusHost string `yaml:"prometheus_host"`
	RecordRequests bool   `yaml:"record_requests"`
}

// Endpoints are target.endpoint's accepted values, one per API a target may speak; package
// protocol holds each one's request body and answer (its test ties the two lists).
var Endpoints = []string{"chat", "completions", "messages", "responses", "embeddings", "rerank"}

// EndpointPath is the path an endpoint's requests go to after target.base_url, for the files that
// name it (AIPerf's custom_endpoint); protocol's APIs send there (its test ties the two).
func EndpointPath(endpoint string) string {
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	return map[string]string{"chat": "/chat/completions", "completions": "/completions", "messages": "/messages",
		"responses": "/responses", "embeddings": "/embeddings", "rerank": "/rerank"}[endpoint]
}

// target.history's accepted values (endpoint responses); HistoryClient is its default there.
const (
	HistoryClient = "client"
	HistoryServer = "server"
)

// apiLimitFields are the body fields that carry each request's output limit for the APIs that fix
// it themselves; the others send target.max_tokens_field. The one place these names are tied to
// their APIs: the request bodies (protocol) and the results (stage.json, the report) read LimitField.
var apiLimitFields = map[string]string{"messages": "max_tokens", "responses": "max_output_tokens"}

// LimitField is the body field that carries each request's output limit, as sent.
func (t Target) LimitField() string {
	if f, ok := apiLimitFields[t.Endpoint]; ok {
		return f
	}
	return t.MaxTokensField
}

// HTTPVersions are target.http's accepted values; DefaultHTTP is its default.
var HTTPVersions = []string{"auto", "1.1", "2"}

const DefaultHTTP = "auto"

// ReservedBodyKeys are the request body's keys plload sets itself, which target.extra_body may not
// set.
var ReservedBodyKeys = []string{"model", "messages", "prompt", "stream"}

// Defaults that are not "the zero value".
const (
	DefaultTimeout        = 120 * time.Second
	DefaultTokenizer      = DefaultTokenizerName
	DefaultMaxTokensField = "max_completion_tokens"
	DefaultEndpoint       = "chat"
	DefaultLanguage       = "en"
	DefaultPoolFactor     = 3.0
	DefaultAbortAfter     = Duration(15 * time.Second)
	DefaultOutputDir      = "results/"
	DefaultPromHost       = "127.0.0.1"
	DefaultMockModel      = "plload-mock"
	// MockBaseURL as target.base_url starts the bundled mock in-process.
	MockBaseURL = "mock"
)

// DefaultMock is the mock's timing when a scenario asks for the mock without saying more.
func DefaultMock() MockTarget {
	return MockTarget{TTFT: Duration(200 * time.Millisecond), TPS: 40, CacheTTFTFactor: 1, Usage: true}
}

// UsesMock reports whether `plload run` must start the bundled mock for this scenario.
func (s *Scenario) UsesMock() bool {
	return s.Target.Mock != nil || s.Target.BaseURL == MockBaseURL
}

// applyDefaults fills every field the file left out with the documented default.
func (s *Scenario) applyDefaults() {
	t := &s.Target
	if !s.has("target.timeout") {
		t.Timeout = Duration(DefaultTimeout)
	}
	if t.Tokenizer == "" {
		t.Tokenizer = DefaultTokenizer
	}
	if t.MaxTokensField == "" {
		t.MaxTokensField = DefaultMaxTokensField
	}
	if t.ExtraBody == nil {
		t.ExtraBody = map[string]any{}
	}
	if t.HTTP == "" {
		t.HTTP = DefaultHTTP
	}
	if t.Endpoint == "" {
		t.Endpoint = DefaultEndpoint
	}
	if t.Endpoint == "responses" && t.History == "" {
		t.History = HistoryClient
	}
	s.mockDefaults()
	if s.Personas.Source == "" {
		s.Personas.Source = "synthetic"
	}
	if w := s.Workload; w != nil {
		if d := w.Dataset; d != nil {
			if d.Order == "" {
				d.Order = "sequential"
			}
			if d.History == "" {
				d.History = "live"
			}
			if d.OutputTokens.Dist == nil {
				d.OutputTokens.FromFile = true
			}
		}
		if !s.has("session.think_time") && (w.Dataset != nil || w.Trace != nil) {
			s.Session.ThinkTime = Constant(0)
			s.Session.ThinkTime.Seconds = true
		}
	}
	ss := &s.Session
	if singleTurnDefault(s, "turns") {
		ss.Turns = Constant(1)
	}
	if singleTurnDefault(s, "think_time") {
		ss.ThinkTime = Constant(0)
		ss.ThinkTime.Seconds = true
	}
	if ss.Language == "" {
		ss.Language = DefaultLanguage
	}
	if ss.PersonaSelection == "" {
		ss.PersonaSelection = "uniform"
	}
	if !s.has("session.zipf_s") {
		ss.ZipfS = 1.0
	}
	s.retrievalDefaults()
	s.imageDefaults()
	s.featureDefaults()
	s.loadDefaults()
	if !s.has("cost.gpu_count") {
		s.Cost.GPUCount = 1
	}
	if s.Output.Dir == "" {
		s.Output.Dir = DefaultOutputDir
	}
	if s.Output.PrometheusHost == "" {
		s.Output.PrometheusHost = DefaultPromHost
	}
	if !s.has("output.record_requests") {
		s.Output.RecordRequests = true
	}
}

// mockDefaults fills the bundled mock's settings the file left out (when it asks for the mock).
func (s *Scenario) mockDefaults() {
	t := &s.Target
	if s.UsesMock() {
		if t.Mock == nil {
			m := DefaultMock()
			t.Mock = &m
		} else {
			d := DefaultMock()
			if !s.has("target.mock.ttft") {
				t.Mock.TTFT = d.TTFT
			}
			if !s.has("target.mock.tps") {
				t.Mock.TPS = d.TPS
			}
			if !s.has("target.mock.cache_ttft_factor") {
				t.Mock.CacheTTFTFactor = d.CacheTTFTFactor
			}
			if !s.has("target.mock.usage") {
				t.Mock.Usage = d.Usage
			}
		}
		if t.BaseURL == "" {
			t.BaseURL = MockBaseURL
		}
		if t.Model == "" {
			t.Model = DefaultMockModel
		}
	}
}

// loadDefaults fills the load keys the file left out, for its mode.
func (s *Scenario) loadDefaults() {
	t := &s.Target
	if !s.has("load.drain_timeout") {
		s.Load.DrainTimeout = t.Timeout
	}
	if !s.has("load.abort_after") {
		s.Load.AbortAfter = DefaultAbortAfter
	}
	if !s.has("load.session_pool_factor") {
		s.Load.SessionPoolFactor = DefaultPoolFactor
	}
	if !s.has("load.session_reuse") {
		s.Load.SessionReuse = s.defaultSessionReuse()
	}
	if m := s.Load.LoadMode(); m.defaults != nil {
		m.defaults(s) // the keys only its mode reads (arrival, cv, max_in_flight, time_scale)
	}
}

// at finds where path's value is in the file; for a path the file lacks, the key (or list item) of
// the nearest enclosing one that it has, which is where the missing key belongs.
func (s *Scenario) at(path string) position {
	if pos, ok := s.positions[path]; ok {
		return pos
	}
	for p := parent(path); p != ""; p = parent(p) {
		if pos, ok := s.keyPositions[p]; ok {
			return pos
		}
		if pos, ok := s.positions[p]; ok {
			return pos
		}
	}
	return position{1, 1}
}

// IssueAt is an error about the value at a YAML path, placed where the file has it, for checks that
// only a run can make (the machine's limits, say).
func (s *Scenario) IssueAt(path, message string) *Issue {
	pos := s.at(path)
	return &Issue{Severity: SeverityError, File: s.File, Line: pos.line, Column: pos.column, Path: path, Message: message}
}

func (s *Scenario) has(path string) bool {
	_, ok := s.positions[path]
	return ok
}
