package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plload/plload/live"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/protocol"
	"github.com/plload/plload/sse"
	"github.com/plload/plload/workload"
)

// ErrInterrupted is returned when the run's context was cancelled (Ctrl+C, SIGTERM, SIGHUP): the
// current stage was written as partial and the rest were skipped.
var ErrInterrupted = errors.New("interrupted")

// ErrStageFailed is returned (wrapped, with the stage and why) when a stage failed — the target was
// unreachable for load.abort_after, or none of its requests succeeded — and later stages were skipped.
var ErrStageFailed = errors.New("stage failed")

// ErrRecordsLost is returned (wrapped, with the file, the cause and the count) when a stage's records
// could not all be written — a full disk, a file size limit —: the stage stopped sending at once,
// the records that reached the disk are kept under their final names, and later stages were skipped.
var ErrRecordsLost = errors.New("records lost")

// Config is what a run needs.
type Config struct {
	Scenario *workload.Scenario
	// Workload is the run's pools; Run drops each stage pool's Dataset bytes once it has written them
	// to the stage's dataset.jsonl (the SHA256 stays).
	Workload *workload.Workload
	// BaseURL overrides target.base_url (the in-process mock's address, for base_url: mock).
	BaseURL string
	// Dir is the run's results directory; stage_NN folders are created in it.
	Dir string
	// Getenv reads the API key and ${ENV} header values; nil means os.Getenv.
	Getenv func(string) string
	// Log receives progress and problems (each stage also writes stage_NN/run.log).
	Log *slog.Logger
	// OnStage is called as each stage ends, before the next starts.
	OnStage func(StageResult)
	// MaxEventBytes bounds one SSE event (0: the sse default).
	MaxEventBytes int
	// StopWhen, when set, sees every finished request of a stage (from the sessions' goroutines, so it
	// must be safe for concurrent use) and may end the stage early by returning why: the stage stops
	// issuing, drains as at its end, and its window ends there (StageResult.Stopped). plload search
	// stops a probe whose failure is already certain; later stages still run.
	StopWhen func(stage int, rec *metrics.Record) string
	// OnTokenEvent, when set, sees every token event as it is read (the self-test uses it). It runs on
	// a poller goroutine (h1client.Poller), between other streams' reads, or on the request's: keep it
	// short, and safe for concurrent use. It takes the event by value: a pointer handed to a function
	// value would put every chunk's event on the heap (bench/README.md, "CPU per chunk").
	OnTokenEvent func(sse.Event)
	// ServerMetricsURL is the target's Prometheus endpoint, scraped every second during each stage
	// ("" = off).
	ServerMetricsURL string
	// GPU is where each stage reads the GPUs' telemetry (the zero value: off).
	GPU GPUTelemetry
	// Live, when set, receives the run's progress: stages, open sessions, and every record (from the
	// records writer goroutine, off the request path).
	Live *live.Progress
	// Shard is this process's part of a sharded run (docs/deployment.md; the zero value: the whole run). Every
	// shard builds the same workload and draws the same schedules; it runs only the sessions and
	// arrivals whose global ordinal it Owns, with concurrency, max_concurrency and max_in_flight
	// split by Shard.Split.
	Shard workload.Shard
	// StageStart, when set, is called before each stage (after its RTT probe, so the probe's time is
	// not taken from the stage) and returns the local instant the stage's schedule starts at: the
	// stage sleeps until it and takes it as its origin in every mode, so every shard's stage
	// boundaries are the same instants. An error fails the run with its message.
	StageStart func(ctx context.Context, stage int) (time.Time, error)
	// NoPrepareAhead sends open-loop arrivals the way earlier releases did, before arrivals were prepared ahead: the request is
	// built only once it is due. Only the benchmark that compares the two sets it.
	NoPrepareAhead bool
	// NoConnAhead prepares arrivals ahead but leaves each to dial its connection when it is due, as
	// before the pool opened connections for them ahead. Only the benchmark that compares the two
	// sets it.
	NoConnAhead bool
}

// StageResult is what the engine knows of a finished stage; the numbers users read come from the
// records (metrics), these are the engine's own counts.
type StageResult struct {
	Stage     int
	Dir       string
	Partial   bool // interrupted: the stage did not run its full duration
	Issued    int  // requests issued; always equals Records
	Records   int
	OK        int
	Errors    int // not counting cancellations
	RateLimit int // HTTP 429s, also counted in Errors
	Cancelled int
	OutTokens int // output_sequence_length of successful requests
	NoUsage   int // successful requests whose answer carried no usage
	Sessions  int // session instances started
	Reused    int // sessions that repeated a conversation the run had sent: the pool ran dry (load.session_reuse: wrap), or its file started over
	// NotStarted counts the open-loop modes' arrivals (arrival_rate, request_rate and replay sessions)
	// that were due but still waiting for a slot when the stage stopped issuing.
	NotStarted int
	// Scheduled is the number of arrivals the schedule of a request_rate or replay stage holds over
	// warmup + duration (0 in the other modes); WaitedForSlot counts the requests that found every
	// load.max_in_flight slot taken and waited for one (never dropped: their wait is send lag).
	Scheduled     int
	WaitedForSlot int
	// Retried counts requests sent a second time, at once, on a new connection because the reused
	// connection the first went out on failed before any response byte (see retryable); each is
	// still one request, one record.
	Retried int
	// RetriedAfterClose counts, of Retried, the requests whose first try had been written in full
	// when the server closed the connection unanswered: the server may have read them and done the
	// work, so it may have served them twice.
	RetriedAfterClose int
	// Outages are the spans in which every request failed before a response byte or got 429/5xx.
	Outages []Outage
	// Aborted says why the engine stopped the stage early ("" when it ran its course): nothing
	// reached the target for load.abort_after. The stage failed; later stages do not run.
	Aborted string
	// Lost counts the records a write error kept off the disk (the stage then stopped at once, and
	// Aborted says why); Records are the ones kept.
	Lost int
	// Stopped says why Config.StopWhen ended the stage early ("" when it did not); its window ends
	// there (InterruptNs), and later stages run.
	Stopped string
	// EndedByCount is set when the stage's requests count (spec.Requests) ended it; its window then
	// runs to LastEndNs, the last answer's end (epoch ns; 0 when nothing was answered).
	EndedByCount bool
	LastEndNs    int64
	// Failures are the stage's failed requests by kind, each with its first message.
	Failures   []metrics.KindCount
	Start, End time.Time
	Warmup     time.Duration
	Duration   time.Duration
	// T0Ns is the stage's t0 in epoch ns (the first request's issue time, or for the open-loop modes —
	// arrival_rate, request_rate, replay — the schedule's origin, whether or not anything was sent
	// then); 0 when nothing was issued. InterruptNs is when a signal stopped it (0: none).
	T0Ns        int64
	InterruptNs int64
	// Injector is how hard plload itself worked during the stage.
	Injector metrics.InjectorHealth
	// RTT is the network round trip measured before the stage (GET /v1/models on a warm connection).
	RTT metrics.Dist
	// ServerMetricsNote says why server metrics were not scraped ("" when they were, or were off).
	ServerMetricsNote string
	// Scrapes and ScrapesOK count the stage's scrapes of the server's metrics and those that worked.
	Scrapes, ScrapesOK int
	// GPUNote says why GPU telemetry was off where its sources were guessed ("" when it was read, or
	// was off by the scenario); GPUWarnings name a source it was told to read that never answered.
	GPUNote     string
	GPUWarnings []string
	// Connections counts the connections that carried the stage's requests (on HTTP/2 streams
	// share them); Protocol is the answers' protocol as the server spoke it ("HTTP/2.0", "HTTP/1.1";
	// both, comma-separated, when they differed; "" when nothing was answered).
	Connections int
	Protocol    string
}

// Run executes every stage in order. It stops at the first stage that fails to run (a write error,
// for instance) and, when ctx is cancelled, writes the current stage as partial and returns
// ErrInterrupted.
func Run(ctx context.Context, cfg Config) ([]StageResult, error) {
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	defer tuneRuntime()()
	clk := newClock()
	var results []StageResult
	for i := range cfg.Workload.Stages {
		pool := &cfg.Workload.Stages[i] // the Workload's own: runStage releases its Dataset bytes
		res, err := runStage(ctx, &cfg, clk, i, pool)
		results = append(results, res)
		if cfg.OnStage != nil {
			cfg.OnStage(res)
		}
		if err != nil {
			return results, err
		}
		if res.Partial {
			return results, ErrInterrupted
		}
		// A failed stage stops the run (docs/scenario.md): the next, heavier one would fail the same way.
		skipped := ""
		if n := len(cfg.Workload.Stages) - 1 - i; n > 0 {
			skipped = fmt.Sprintf("; the %d later stage(s) were skipped", n)
		}
		if res.Aborted != "" {
			return results, fmt.Errorf("%w: stage %d was stopped (the target is unreachable)%s", ErrStageFailed, res.Stage, skipped)
		}
		if res.OK == 0 && res.Errors > 0 {
			cause := ""
			if len(res.Failures) > 0 {
				k := res.Failures[0]
				cause = fmt.Sprintf(" (%s × %d, first: %s)", k.Kind, k.Count, k.First)
			}
			return results, fmt.Errorf("%w: none of stage %d's %d requests succeeded%s%s", ErrStageFailed, res.Stage, res.Issued, cause, skipped)
		}
	}
	return results, nil
}

// stageRun is one stage in progress.
type stageRun struct {
	cfg    *Config
	pool   *workload.StagePool
	index  int
	clock  clock
	log    *slog.Logger
	client *http.Client
	// freshClient opens a new connection for every request: a retry must not land on another
	// pooled connection the server has closed too.
	freshClient *http.Client
	// api is target.endpoint's API: the request's path, its body and how its answer is read; nil
	// for a retrieval stage, whose requests go to retrieval instead.
	api protocol.API
	// retrieval is a retrieval stage's target (target.endpoint embeddings or rerank); ragSteps are
	// session.rag's steps, in their order (engine/retrieval.go).
	retrieval *retrievalTarget
	ragSteps  []*retrievalTarget
	// base is the target's URL without the API's path, its user info or its query (no trailing /);
	// target is the same taken apart, which makes each request's URL (GET /models included).
	base   string
	target targetURL
	url    string
	host   string
	// connAddr is the host:port the HTTP/1.1 client sends to, for connections held for prepared
	// arrivals ("" when the transport is net/http's, which has no such hold).
	connAddr string
	headers  http.Header
	// sessionHeader is target.session_header: a header carrying the session's id ("" = off).
	sessionHeader string
	secrets       []string
	timeout       time.Duration
	body          *protocol.Body

	maxEventBytes int
	records       *metrics.Writer[*metrics.Record]
	sessions      *metrics.Writer[*metrics.SessionRecord]

	// t0, warmupEnd and end are fixed when the first request is issued (open loop: at the origin).
	times stageTimes
	// slots caps the requests in flight (request_rate, replay: load.max_in_flight); nil: no cap.
	slots chan struct{}
	// scheduled is the number of arrivals in an open-loop schedule.
	scheduled     int
	counts        counters
	conns         connTally // the connections that carried the stage and their protocol
	reason        cancelReason
	interruptedAt time.Time
	outages       outageTracker
	failures      metrics.FailureTally
	// aborted is why the engine stopped the stage (target unreachable), at abortedAt.
	aborted   string
	abortedAt time.Time
	// writeFailedAt is when a records file refused a write and the stage stopped (zero: never).
	writeFailedAt time.Time
	// stopped is why Config.StopWhen ended the stage, at stoppedAt; stopIssuing ends the issuing.
	stopOnce    sync.Once
	stopped     string
	stoppedAt   time.Time
	stopIssuing func()
	// budget is what is left of the stage's requests: count (nil: the stage ends by time only);
	// endedByCount is set once it ran out, and lastEndNs is the latest answer's end.
	budget       *atomic.Int64
	endedByCount atomic.Bool
	lastEndNs    atomic.Int64
}

func stageDir(dir string, stage int) string {
	return filepath.Join(dir, fmt.Sprintf("stage_%02d", stage))
}

func runStage(ctx context.Context, cfg *Config, clk clock, i int, pool *workload.StagePool) (StageResult, error) {
	sc := cfg.Scenario
	dir := stageDir(cfg.Dir, pool.Stage)
	res := StageResult{Stage: pool.Stage, Dir: dir, Warmup: pool.Spec.Warmup.D(), Duration: pool.Spec.Duration.D()}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("stage %d: %w", pool.Stage, err)
	}
	// Written as it is drawn again: the pool keeps neither the file nor a synthetic session's text
	// (the file was 51 KiB a session of a 50-turn chat).
	if err := metrics.WriteFileAtomicFrom(filepath.Join(dir, "dataset.jsonl"), pool.WriteDataset); err != nil {
		return res, fmt.Errorf("stage %d: %w", pool.Stage, err)
	}
	logFile, err := os.Create(filepath.Join(dir, "run.log"))
	if err != nil {
		return res, fmt.Errorf("stage %d: %w", pool.Stage, err)
	}
	defer logFile.Close()
	log := slog.New(slog.NewMultiHandler(cfg.Log.Handler(), slog.NewTextHandler(logFile, nil))).With("stage", pool.Stage)

	s := &stageRun{cfg: cfg, pool: pool, index: i, clock: clk, log: log, timeout: sc.Target.Timeout.D(),
		maxEventBytes: cfg.MaxEventBytes}
	if err := s.prepareClient(); err != nil {
		return res, fmt.Errorf("stage %d: %w", pool.Stage, err)
	}
	defer s.client.CloseIdleConnections()
	var after func(*metrics.Record)
	if cfg.Live != nil {
		after = cfg.Live.Record
	}
	if s.records, err = metrics.NewWriterThen(filepath.Join(dir, "profile_export.jsonl"), 65536, after); err != nil {
		return res, fmt.Errorf("stage %d: %w", pool.Stage, err)
	}
	if s.sessions, err = metrics.NewWriter[*metrics.SessionRecord](filepath.Join(dir, "sessions.jsonl"), 4096); err != nil {
		s.records.Close()
		return res, fmt.Errorf("stage %d: %w", pool.Stage, err)
	}
	var rttErr error
	if res.RTT, rttErr = s.measureRTT(ctx); rttErr != nil && ctx.Err() == nil {
		log.Warn("network RTT not measured: the target did not answer GET /models", "error", rttErr.Error())
	}
	origin, err := s.startInstant(ctx)
	if err != nil {
		s.records.Close()
		s.sessions.Close()
		return res, fmt.Errorf("stage %d: %w", pool.Stage, err)
	}
	s.client.CloseIdleConnections() // the stage starts from fresh connections
	log.Info("stage starting", append([]any{"rtt_p50_ms", res.RTT.P50, "mode", sc.Load.Mode}, append(stageLoadAttrs(sc.Load, pool.Spec),
		"warmup", pool.Spec.Warmup.String(), "duration", pool.Spec.Duration.String(), "pool", len(pool.Sessions), "target", s.scrub(s.url))...)...)
	res.Start = time.Now()
	if cfg.Live != nil {
		cfg.Live.StageStarted(pool.Stage)
	}
	probe := startProbe(s.poller())
	scrapeCtx, stopScrape := context.WithCancel(ctx)
	type scrapeResult struct {
		note   string
		counts scrapeCounts
	}
	scraped := make(chan scrapeResult, 1)
	if cfg.ServerMetricsURL != "" {
		go func() {
			note, n := s.scrapeServer(scrapeCtx, cfg.ServerMetricsURL, dir)
			scraped <- scrapeResult{note, n}
		}()
	} else {
		scraped <- scrapeResult{}
	}
	gpuRead := make(chan gpuResult, 1)
	if cfg.GPU.Off() {
		gpuRead <- gpuResult{}
	} else {
		go func() { gpuRead <- s.scrapeGPU(scrapeCtx, cfg.GPU, dir) }()
	}
	interrupted := s.drive(ctx, origin)
	stopScrape()
	gr := <-gpuRead
	res.GPUNote, res.GPUWarnings = gr.note, gr.warnings
	if gr.note != "" {
		log.Info(gr.note)
	}
	for _, w := range gr.warnings {
		log.Warn(w)
	}
	sr := <-scraped
	res.ServerMetricsNote, res.Scrapes, res.ScrapesOK = sr.note, sr.counts.attempts, sr.counts.ok
	if res.ServerMetricsNote != "" {
		log.Info(res.ServerMetricsNote)
	}
	res.Injector = probe.finish()
	res.End = time.Now()
	recErr := s.records.Close()
	sessErr := s.sessions.Close()
	s.fillResult(&res, interrupted)
	if err := errors.Join(recErr, sessErr); err != nil {
		return res, s.recordsLost(&res, err, interrupted)
	}
	if res.Records != res.Issued {
		return res, fmt.Errorf("stage %d: %d requests issued but %d records written", pool.Stage, res.Issued, res.Records)
	}
	return res, nil
}

// recordsLost fills the result of a stage whose records files refused a write (err, from their
// Close) and returns the run's error: the stage failed, it says how many records were lost and
// where the kept ones are.
func (s *stageRun) recordsLost(res *StageResult, err error, interrupted bool) error {
	res.Lost = s.records.Lost()
	kept := fmt.Sprintf("%d of the %d requests' records were lost", res.Lost, res.Issued)
	if !interrupted {
		at := s.writeFailedAt
		if at.IsZero() { // the error came as the file was closed, after the stage's end
			at = res.End
		}
		res.Aborted = fmt.Sprintf("the records could not be written, and the stage stopped sending at once: %v; %s", err, kept)
		res.InterruptNs = s.clock.ns(at) // the window ends where the stage did
	}
	s.log.Error("records could not be written: the stage stopped", "error", err.Error(), "lost", res.Lost, "kept", res.Records)
	if interrupted { // both: the run is interrupted (exit 130), and the records' loss is said
		return fmt.Errorf("%w; %w: stage %d: %w; %s", ErrInterrupted, ErrRecordsLost, res.Stage, err, kept)
	}
	return fmt.Errorf("%w: stage %d: %w; %s", ErrRecordsLost, res.Stage, err, kept)
}

// fillResult fills a finished stage's result from its counts and times, and logs what users should
// know of it (pool reuse, missing usage, the totals).
func (s *stageRun) fillResult(res *StageResult, interrupted bool) {
	clk, log := s.clock, s.log
	s.counts.fill(res)
	s.conns.fill(res)
	res.Scheduled = s.scheduled
	res.Records = s.records.Written()
	res.Partial = interrupted
	if !s.times.t0.IsZero() {
		res.T0Ns = clk.ns(s.times.t0)
	}
	if interrupted {
		res.InterruptNs = clk.ns(s.interruptedAt)
	}
	res.Outages, res.Failures = s.outages.outages(), s.failures.Kinds()
	res.EndedByCount, res.LastEndNs = s.endedByCount.Load(), s.lastEndNs.Load()
	if s.aborted != "" && !interrupted {
		res.Aborted, res.InterruptNs = s.aborted, clk.ns(s.abortedAt) // the window ends where the stage did
	} else if s.stopped != "" && !interrupted {
		res.Stopped, res.InterruptNs = s.stopped, clk.ns(s.stoppedAt)
	}
	if res.Reused > 0 {
		// stage.json and report.md say it too, with the cache hit of the repeats (a stage warning).
		log.Warn("sessions repeated conversations the run had sent: the pool ran dry, or its file started over", "reused", res.Reused,
			"sessions", res.Sessions, "pool", len(s.pool.Sessions), "session_reuse", s.pool.Reuse, "nonce_after_system", s.pool.NoncesRepeats())
	}
	if res.NoUsage > 0 {
		log.Warn("the server sent no usage for some answers: output tokens were counted from chunks", "requests", res.NoUsage)
	}
	if res.WaitedForSlot > 0 || res.NotStarted > 0 {
		log.Info("open loop: requests waited for a load.max_in_flight slot", "waited", res.WaitedForSlot, "never_started", res.NotStarted, "scheduled", res.Scheduled)
	}
	log.Info("stage ended", "partial", res.Partial, "requests", res.Records, "ok", res.OK, "errors", res.Errors,
		"rate_limited", res.RateLimit, "cancelled", res.Cancelled, "retried_requests", res.Retried)
}
