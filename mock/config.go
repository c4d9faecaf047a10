// Package mock is an OpenAI-compatible LLM server whose timing is known exactly: a fixed or jittered
// time to first token, a fixed decode speed per stream scheduled from absolute times, an optional
// prefill cost and slot limit, a real block-hashed prefix cache, and deterministic error and fault
// injection. It measures its own send lateness, so a client's error can be told from the server's.
package mock

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Config is the mock's behaviour. The zero value is not useful; start from DefaultConfig.
type Config struct {
	// Model is the name /v1/models lists first; requests may name any model unless Models is set.
	Model string
	// Models, when not empty, are the only models served (with Model): /v1/models lists them, and
	// a completion request naming another gets HTTP 404, as vLLM answers an unknown LoRA adapter.
	Models []string
	// TTFT is the time from admission to the first token.
	TTFT time.Duration
	// TPS is the decode speed per stream in tokens per second; chunks are 1/TPS apart.
	TPS float64
	// Jitter scales each TTFT and each gap by (1 + Jitter·u), u uniform in [−1, 1], drawn from the seed.
	Jitter float64
	// PrefillPerToken is added to TTFT for every prompt token not found in the prefix cache.
	PrefillPerToken time.Duration
	// MaxConcurrency is the number of request slots; beyond it requests queue (0 = unlimited).
	MaxConcurrency int
	// ScaleMaxConcurrency and ScaleAfter model a deployment that scales (an autoscaler adding a
	// replica, a cold start finishing): ScaleAfter after the mock's first completion request the
	// slots go from MaxConcurrency to ScaleMaxConcurrency. Requests queued by then take the new slots
	// at once; a scale down takes slots as running requests free them. 0: the slots never change.
	ScaleMaxConcurrency int
	ScaleAfter          time.Duration
	// BusyPoll keeps one goroutine yielding in a loop while any request is in flight, so the Go
	// scheduler checks its timers continuously instead of sleeping in the network poller, whose waits
	// are whole milliseconds on Linux. It cuts send lateness from about 1 ms to microseconds at the
	// price of one busy core; use it when the mock has a core of its own (the self-test does).
	BusyPoll bool
	// SendTimes puts a comment line `: sent_ns=<epoch ns>` before every token chunk: the wall-clock
	// time of the write. The self-test subtracts it from the client's receive time, which isolates the
	// client's own delay from the server's lateness (both clocks are this machine's CLOCK_REALTIME).
	SendTimes bool
	// SharesProcess says the mock serves from its client's own process (a scenario's base_url: mock).
	// Then at most GOMAXPROCS−1 requests are parsed and tokenized at once, so a burst of long prompts
	// (16 of 87k tokens are about a second of CPU) always leaves a core to the client, whose due
	// arrivals would otherwise wait up to Go's 10 ms preemption for one. A queued request's wait counts
	// in its TTFT only where it outlasts the TTFT, as a busy server's prefill queue would.
	SharesProcess bool

	// CloseAfterResponse closes every connection right after its answer while still advertising
	// keep-alive (`Keep-Alive: timeout=5, max=100`), as llama.cpp's server does: a client that reuses
	// the pooled connection at once finds it closed before any response byte.
	CloseAfterResponse bool

	// CacheCapacity is the prefix cache's size in tokens (0 turns the cache off).
	CacheCapacity int
	// CacheBlock is the block size in tokens; only whole blocks are cached, as in vLLM.
	CacheBlock int
	// CacheTTFTFactor multiplies TTFT on a full cache hit; a partial hit scales by the cached fraction:
	// TTFT × (1 − cached/prompt × (1 − factor)).
	CacheTTFTFactor float64
	// ImageTokensPatch is the side in pixels of the patch an image is counted in: w×h pixels are
	// ceil(w/p)·ceil(h/p) tokens (28, Qwen2.5-VL's 14-pixel patches merged 2×2), at most 16,384
	// (Qwen2.5-VL's max_pixels). The tokens are prompt tokens: in usage, in the prefix cache, and in
	// the prefill time (PrefillPerToken each, when not cached).
	ImageTokensPatch int
	// ImageTokensFixed, when > 0, is every image's token count instead, whatever its size (Gemma 3
	// and InternVL's single tile: 256).
	ImageTokensFixed int
	// NoUsage leaves usage out of every response, as some servers do.
	NoUsage bool

	// DefaultMaxTokens is the output length when a request gives no max_tokens.
	DefaultMaxTokens int
	// MaxTokensLimit is the largest max_tokens a request may ask for; more is a 400, as a real
	// server refuses more than its context.
	MaxTokensLimit int
	// EOSMinFraction: without ignore_eos, a request stops at a length drawn per request uniformly
	// from [EOSMinFraction × max_tokens, max_tokens] (1 = always max_tokens).
	EOSMinFraction float64
	// ReasoningTokens streams this many reasoning_content chunks before the content.
	ReasoningTokens int

	// Seed makes every draw (length, text, jitter, errors, faults) a function of (seed, request body).
	Seed uint64
	// ErrorRate is the share of requests answered with HTTP 500.
	ErrorRate float64
	// RateLimitRate is the share answered with HTTP 429 and a Retry-After header.
	RateLimitRate float64
	// RetryAfter is the Retry-After value sent with 429s.
	RetryAfter time.Duration
	// ToolCallRate is the share of chat requests carrying `tools` (tool_choice not "none") answered
	// with tool calls (finish_reason tool_calls); tool_choice "required" or a named function always
	// gets them. DefaultConfig sets 0.5.
	ToolCallRate float64
	// JSONValidRate is the share of requests with response_format json_object or json_schema whose
	// JSON document is valid (for a schema: every required top-level property, of its type); the
	// others get it truncated. DefaultConfig sets 1.
	JSONValidRate float64

	// Faults are the shares of requests that get each fault (see FaultKind).
	Faults map[FaultKind]float64

	// GPUs is how many devices the mock pretends to run on: GET /dcgm/metrics reports each, as a
	// dcgm-exporter beside a real server would, so plload's GPU telemetry can be tested without a GPU.
	// The power below is split evenly over them. DefaultConfig sets 1.
	GPUs int
	// GPUIdleWatts is each GPU's draw with nothing generating: a server's power is never zero, and an
	// energy-per-token figure that leaves idle power out flatters a lightly loaded one. DefaultConfig
	// sets 80 (an H100 at rest draws about 70–90 W).
	GPUIdleWatts float64
	// GPUJoulesPerToken is the energy each generated token costs, over all GPUs together, above the
	// idle draw: power is GPUs × GPUIdleWatts + GPUJoulesPerToken × the token rate, so power follows
	// the load the mock is given. DefaultConfig sets 0.25.
	GPUJoulesPerToken float64

	// EmbeddingDimensions is the length of the vectors /v1/embeddings answers with; a request's
	// dimensions may ask for fewer (a Matryoshka model's truncation), never more.
	EmbeddingDimensions int
}

// FaultKind is one way the mock can misbehave on purpose.
type FaultKind string

// Faults the mock can inject. Each is decided per request from the seed, so a rerun gets the same.
const (
	FaultCut       FaultKind = "cut"       // the connection closes mid-stream (no chunk terminator)
	FaultReset     FaultKind = "reset"     // the TCP connection is reset (RST) mid-stream
	FaultStall     FaultKind = "stall"     // the stream stops and hangs until the client gives up
	FaultMalformed FaultKind = "malformed" // one chunk carries broken JSON
	FaultNoDone    FaultKind = "no-done"   // the stream ends cleanly but without data: [DONE]
	FaultHTML503   FaultKind = "html-503"  // HTTP 503 with an HTML body, as a proxy in front might send
)

// FaultKinds lists every fault in the order they are drawn.
var FaultKinds = []FaultKind{FaultCut, FaultReset, FaultStall, FaultMalformed, FaultNoDone, FaultHTML503}

// DefaultConfig is `plload mockserver` with no flags: TTFT 200 ms, 40 tok/s per stream, a 500k-token
// prefix cache in 16-token blocks, usage on, no errors.
func DefaultConfig() Config {
	return Config{
		Model: "plload-mock", TTFT: 200 * time.Millisecond, TPS: 40,
		CacheCapacity: 500_000, CacheBlock: 16, CacheTTFTFactor: 1, ImageTokensPatch: 28,
		DefaultMaxTokens: 256, MaxTokensLimit: 1_000_000, EOSMinFraction: 1, RetryAfter: time.Second,
		ToolCallRate: 0.5, JSONValidRate: 1, EmbeddingDimensions: 384,
		GPUs: 1, GPUIdleWatts: 80, GPUJoulesPerToken: 0.25,
	}
}

// maxEmbeddingDimensions bounds EmbeddingDimensions: past the widest embedding models (4096) with
// room, and small enough that a vector is never a surprise in memory.
const maxEmbeddingDimensions = 65_536

// maxGPUs bounds Config.GPUs: past the largest node (a DGX has 8, a GB200 NVL72 rack 72) with room,
// and small enough that a scrape stays a few hundred kilobytes.
const maxGPUs = 1024

// maxGPUFigure bounds GPUIdleWatts (W) and GPUJoulesPerToken (J): far past any device or model (a
// B200 draws 1,000 W at most), so a figure in the wrong unit (mW, mJ) is caught rather than believed.
const maxGPUFigure = 100_000

// maxScaleSlots bounds ScaleMaxConcurrency: the slots that are not open yet are held as tokens of
// one channel, filled one by one at start.
const maxScaleSlots = 1_000_000

// Scales reports whether the slots change during the run.
func (c Config) Scales() bool {
	return c.ScaleMaxConcurrency > 0 && c.ScaleMaxConcurrency != c.MaxConcurrency
}

// Gap is the time between two chunks.
func (c Config) Gap() time.Duration { return time.Duration(float64(time.Second) / c.TPS) }

// Validate says what is wrong with a configuration, naming the flag.
func (c Config) Validate() error {
	frac := func(name string, v float64) error {
		if v < 0 || v > 1 {
			return fmt.Errorf("--%s %g: accepted: a fraction from 0 to 1", name, v)
		}
		return nil
	}
	switch {
	case c.TTFT < 0:
		return fmt.Errorf("--ttft %s: accepted: a duration ≥ 0", c.TTFT)
	case c.TPS <= 0 || c.TPS > 1e6:
		return fmt.Errorf("--tps %g: accepted: tokens per second per stream, > 0 and ≤ 1e6", c.TPS)
	case c.PrefillPerToken < 0:
		return fmt.Errorf("--prefill-per-token %s: accepted: a duration ≥ 0", c.PrefillPerToken)
	case c.MaxConcurrency < 0:
		return fmt.Errorf("--max-concurrency %d: accepted: 0 (unlimited) or a number of slots", c.MaxConcurrency)
	case c.ScaleMaxConcurrency < 0 || c.ScaleMaxConcurrency > maxScaleSlots:
		return fmt.Errorf("--scale-max-concurrency %d: accepted: 0 (the slots never change) or the slots after --scale-after, at most %d", c.ScaleMaxConcurrency, maxScaleSlots)
	case c.ScaleMaxConcurrency > 0 && c.MaxConcurrency == 0:
		return fmt.Errorf("--scale-max-concurrency %d without --max-concurrency: accepted: --max-concurrency N, the slots before the scale", c.ScaleMaxConcurrency)
	case c.ScaleAfter < 0 || c.ScaleMaxConcurrency > 0 && c.ScaleAfter == 0:
		return fmt.Errorf("--scale-after %s: accepted: a duration > 0, counted from the mock's first completion request", c.ScaleAfter)
	case c.ScaleAfter > 0 && c.ScaleMaxConcurrency == 0:
		return fmt.Errorf("--scale-after %s without --scale-max-concurrency: accepted: --scale-max-concurrency M, the slots after the scale", c.ScaleAfter)
	case c.CacheCapacity < 0:
		return fmt.Errorf("--cache-capacity %d: accepted: tokens ≥ 0 (0 turns the cache off)", c.CacheCapacity)
	case c.CacheBlock < 1:
		return fmt.Errorf("--cache-block %d: accepted: tokens ≥ 1", c.CacheBlock)
	case c.CacheTTFTFactor < 0:
		return fmt.Errorf("--cache-ttft-factor %g: accepted: ≥ 0", c.CacheTTFTFactor)
	case c.ImageTokensPatch < 1 || c.ImageTokensPatch > 1024:
		return fmt.Errorf("--image-tokens-patch %d: accepted: the side of an image patch in pixels, 1 to 1024 (Qwen2.5-VL: 28)", c.ImageTokensPatch)
	case c.ImageTokensFixed < 0 || c.ImageTokensFixed > maxImageTokens:
		return fmt.Errorf("--image-tokens-fixed %d: accepted: 0 (count by --image-tokens-patch) or tokens per image, at most %d", c.ImageTokensFixed, maxImageTokens)
	case c.DefaultMaxTokens < 1:
		return fmt.Errorf("--default-max-tokens %d: accepted: ≥ 1", c.DefaultMaxTokens)
	case c.MaxTokensLimit < c.DefaultMaxTokens:
		return fmt.Errorf("max tokens limit %d: accepted: ≥ --default-max-tokens (%d)", c.MaxTokensLimit, c.DefaultMaxTokens)
	case c.ReasoningTokens < 0:
		return fmt.Errorf("--reasoning-tokens %d: accepted: ≥ 0", c.ReasoningTokens)
	case c.RetryAfter < 0:
		return fmt.Errorf("--retry-after %s: accepted: a duration ≥ 0", c.RetryAfter)
	case c.GPUs < 1 || c.GPUs > maxGPUs:
		return fmt.Errorf("--gpus %d: accepted: the devices /dcgm/metrics reports, 1 to %d", c.GPUs, maxGPUs)
	case !(c.GPUIdleWatts >= 0 && c.GPUIdleWatts <= maxGPUFigure):
		return fmt.Errorf("--gpu-idle-watts %g: accepted: watts per GPU with nothing generating, 0 to %d", c.GPUIdleWatts, maxGPUFigure)
	case !(c.GPUJoulesPerToken >= 0 && c.GPUJoulesPerToken <= maxGPUFigure):
		return fmt.Errorf("--gpu-joules-per-token %g: accepted: joules per generated token over all GPUs, 0 to %d", c.GPUJoulesPerToken, maxGPUFigure)
	case c.EmbeddingDimensions < 1 || c.EmbeddingDimensions > maxEmbeddingDimensions:
		return fmt.Errorf("--embedding-dimensions %d: accepted: 1 to %d", c.EmbeddingDimensions, maxEmbeddingDimensions)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"jitter", c.Jitter}, {"eos-min-fraction", c.EOSMinFraction}, {"error-rate", c.ErrorRate}, {"rate-limit-rate", c.RateLimitRate},
		{"tool-call-rate", c.ToolCallRate}, {"json-valid-rate", c.JSONValidRate}} {
		if err := frac(f.name, f.v); err != nil {
			return err
		}
	}
	for i, m := range c.Models {
		if strings.TrimSpace(m) == "" || strings.Contains(m, ",") {
			return fmt.Errorf("--models %q: accepted: model names separated by commas, none empty", strings.Join(c.Models, ","))
		}
		if slices.Contains(c.Models[:i], m) {
			return fmt.Errorf("--models: %q is named twice", m)
		}
	}
	total := c.ErrorRate + c.RateLimitRate
	for _, k := range FaultKinds {
		if err := frac(string(k)+"-rate", c.Faults[k]); err != nil {
			return err
		}
		total += c.Faults[k]
	}
	for k := range c.Faults {
		known := false
		for _, f := range FaultKinds {
			known = known || f == k
		}
		if !known {
			return fmt.Errorf("fault %q: accepted: cut, reset, stall, malformed, no-done, html-503", k)
		}
	}
	if total > 1 {
		return fmt.Errorf("error, rate-limit and fault rates add up to %g: accepted: at most 1", total)
	}
	return nil
}
