package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/plload/plload/mock"
)

func mockserverCommand() *cli.Command {
	d := mock.DefaultConfig()
	rate := func(name, usage string) cli.Flag {
		return &cli.Float64Flag{Name: name, Usage: usage + " (a fraction 0–1, decided per request from the seed)"}
	}
	return &cli.Command{
		Name:  "mockserver",
		Usage: "serve the bundled OpenAI-compatible mock with a known delay",
		Description: "An OpenAI-compatible LLM server whose timing is known exactly, for trying plload without a GPU,\n" +
			"for tests and for the self-test. Endpoints: POST /v1/chat/completions (stream and not),\n" +
			"POST /v1/completions, POST /v1/embeddings and POST /v1/rerank (one prefill each, answered whole at\n" +
			"its TTFT), GET /v1/models, GET /health, GET /metrics (vLLM-style names plus\n" +
			"plload_mock_send_lateness_seconds), GET /mock/stats (send lateness; ?reset=1 starts a new window) and\n" +
			"GET /dcgm/metrics (a dcgm-exporter's fields for --gpus GPUs: power, energy, utilization, memory).\n\n" +
			"Each request is admitted (queued first with --max-concurrency), its first token is sent TTFT\n" +
			"later, then one token per chunk every 1/tps, all scheduled from the admission time. A prefix-cache\n" +
			"hit scales TTFT by 1 − cached/prompt × (1 − cache-ttft-factor). The same --seed and request body\n" +
			"give the same length, text, error and fault. A chat request with tools gets tool calls at\n" +
			"--tool-call-rate; one with response_format json_object/json_schema gets a JSON document, valid at\n" +
			"--json-valid-rate. Binds loopback unless --addr names another address,\n" +
			"which is logged as a warning. HTTP/1.1 and HTTP/2 with prior knowledge (h2c) share the port; with\n" +
			"--tls it serves https:// instead (HTTP/2 or HTTP/1.1, as the client's ALPN asks) with a certificate\n" +
			"made for this run, valid for 127.0.0.1, ::1, localhost and the --addr host: --tls-cert-out writes it\n" +
			"(PEM) for a scenario's target.tls.ca_file, else it is printed after the first line. The timing is the\n" +
			"same on every protocol: each chunk is written and flushed at its time. The GPUs' power is\n" +
			"--gpus × --gpu-idle-watts + --gpu-joules-per-token × the tokens generated in the last second, split\n" +
			"evenly over them; their energy counter is that model's exact integral. Stops cleanly (exit 0) on SIGINT or SIGTERM.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8000", Usage: "listen address (host:port; port 0 picks a free one)"},
			&cli.StringFlag{Name: "model", Value: d.Model, Usage: "model name listed by /v1/models (requests may name any, unless --models)"},
			&cli.StringFlag{Name: "models", Usage: "comma-separated models served besides --model (LoRA adapters, say): /v1/models lists them and a request naming another gets HTTP 404 (default: any model)"},
			&cli.Float64Flag{Name: "tool-call-rate", Value: d.ToolCallRate, Usage: "share of chat requests with tools answered with tool calls, streamed in argument pieces (tool_choice required or a named function: always; none: never)"},
			&cli.IntFlag{Name: "embedding-dimensions", Value: d.EmbeddingDimensions, Usage: "length of the vectors /v1/embeddings answers with (a request's dimensions may ask for fewer)"},
			&cli.Float64Flag{Name: "json-valid-rate", Value: d.JSONValidRate, Usage: "share of requests with response_format json_object/json_schema answered with a valid JSON document (the others get it truncated)"},
			&cli.DurationFlag{Name: "ttft", Value: d.TTFT, Usage: "time to first token after admission"},
			&cli.Float64Flag{Name: "tps", Value: d.TPS, Usage: "decode speed per stream, tokens per second (chunks 1/tps apart)"},
			&cli.Float64Flag{Name: "jitter", Usage: "scale each TTFT and gap by 1 + jitter·u, u uniform in [−1, 1]"},
			&cli.DurationFlag{Name: "prefill-per-token", Usage: "extra TTFT per prompt token not in the prefix cache"},
			&cli.IntFlag{Name: "max-concurrency", Usage: "request slots; beyond them requests queue (0 = unlimited)"},
			&cli.IntFlag{Name: "scale-max-concurrency", Usage: "with --max-concurrency: the slots after --scale-after (0 = they never change)"},
			&cli.DurationFlag{Name: "scale-after", Usage: "when the slots change to --scale-max-concurrency, counted from the first completion request"},
			&cli.BoolFlag{Name: "send-times", Usage: "put a comment line \": sent_ns=EPOCH_NS\" before every token chunk (the self-test uses it)"},
			&cli.BoolFlag{Name: "close-after-response", Usage: "close every connection right after its answer while still advertising keep-alive, as llama.cpp's server does"},
			&cli.BoolFlag{Name: "busy-poll", Usage: "keep a core busy while streaming so chunks leave within microseconds of schedule, not up to ~1 ms late"},
			&cli.IntFlag{Name: "cache-capacity", Value: d.CacheCapacity, Usage: "prefix cache size in tokens (0 = off)"},
			&cli.IntFlag{Name: "cache-block", Value: d.CacheBlock, Usage: "prefix cache block size in tokens"},
			&cli.Float64Flag{Name: "cache-ttft-factor", Value: d.CacheTTFTFactor, Usage: "TTFT multiplier on a full prefix-cache hit"},
			&cli.IntFlag{Name: "image-tokens-patch", Value: d.ImageTokensPatch, Usage: "an image of w×h pixels is ceil(w/N)·ceil(h/N) prompt tokens, at most 16384 (28: Qwen2.5-VL); they count in usage, the prefix cache (by the image's content hash) and prefill time"},
			&cli.IntFlag{Name: "image-tokens-fixed", Usage: "every image is this many prompt tokens, whatever its size (Gemma 3: 256; 0 = count by --image-tokens-patch)"},
			&cli.BoolFlag{Name: "no-usage", Usage: "leave usage out of every response"},
			&cli.IntFlag{Name: "default-max-tokens", Value: d.DefaultMaxTokens, Usage: "output length when a request sets no max_tokens"},
			&cli.Float64Flag{Name: "eos-min-fraction", Value: d.EOSMinFraction, Usage: "without ignore_eos, stop at a length drawn from [fraction × max_tokens, max_tokens]"},
			&cli.IntFlag{Name: "reasoning-tokens", Usage: "stream this many reasoning_content chunks before the content"},
			&cli.Uint64Flag{Name: "seed", Usage: "seed of every per-request draw"},
			rate("error-rate", "share of requests answered with HTTP 500"),
			rate("rate-limit-rate", "share answered with HTTP 429 and Retry-After"),
			&cli.DurationFlag{Name: "retry-after", Value: d.RetryAfter, Usage: "Retry-After sent with 429s"},
			rate("cut-rate", "share whose stream is cut mid-way (connection closed)"),
			rate("reset-rate", "share whose TCP connection is reset mid-stream"),
			rate("stall-rate", "share that stall mid-stream until the client gives up"),
			rate("malformed-rate", "share with one malformed JSON chunk"),
			rate("no-done-rate", "share that end without data: [DONE]"),
			rate("html-503-rate", "share answered with HTTP 503 and an HTML body"),
			&cli.IntFlag{Name: "gpus", Value: d.GPUs, Usage: "GPUs GET /dcgm/metrics reports, the power split evenly over them"},
			&cli.Float64Flag{Name: "gpu-idle-watts", Value: d.GPUIdleWatts, Usage: "each GPU's power with nothing generating, W"},
			&cli.Float64Flag{Name: "gpu-joules-per-token", Value: d.GPUJoulesPerToken, Usage: "energy of each generated token over all GPUs, above idle, J"},
			&cli.BoolFlag{Name: "tls", Usage: "serve https:// with a self-signed certificate made at start (HTTP/2 by ALPN, or HTTP/1.1)"},
			&cli.StringFlag{Name: "tls-cert-out", Usage: "with --tls: write the certificate (PEM, its own CA) to this file, for target.tls.ca_file"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 0 {
				return badInput("mockserver takes no arguments (got %q); see plload mockserver --help", cmd.Args().First())
			}
			cfg := d
			cfg.Model = cmd.String("model")
			cfg.TTFT = cmd.Duration("ttft")
			cfg.TPS = cmd.Float64("tps")
			cfg.Jitter = cmd.Float64("jitter")
			cfg.PrefillPerToken = cmd.Duration("prefill-per-token")
			cfg.MaxConcurrency = cmd.Int("max-concurrency")
			cfg.ScaleMaxConcurrency, cfg.ScaleAfter = cmd.Int("scale-max-concurrency"), cmd.Duration("scale-after")
			cfg.BusyPoll = cmd.Bool("busy-poll")
			cfg.SendTimes = cmd.Bool("send-times")
			cfg.CloseAfterResponse = cmd.Bool("close-after-response")
			cfg.CacheCapacity = cmd.Int("cache-capacity")
			cfg.CacheBlock = cmd.Int("cache-block")
			cfg.CacheTTFTFactor = cmd.Float64("cache-ttft-factor")
			cfg.ImageTokensPatch, cfg.ImageTokensFixed = cmd.Int("image-tokens-patch"), cmd.Int("image-tokens-fixed")
			cfg.NoUsage = cmd.Bool("no-usage")
			cfg.DefaultMaxTokens = cmd.Int("default-max-tokens")
			cfg.EOSMinFraction = cmd.Float64("eos-min-fraction")
			cfg.ReasoningTokens = cmd.Int("reasoning-tokens")
			cfg.Seed = cmd.Uint64("seed")
			cfg.ErrorRate = cmd.Float64("error-rate")
			cfg.RateLimitRate = cmd.Float64("rate-limit-rate")
			cfg.RetryAfter = cmd.Duration("retry-after")
			cfg.ToolCallRate = cmd.Float64("tool-call-rate")
			cfg.JSONValidRate = cmd.Float64("json-valid-rate")
			cfg.EmbeddingDimensions = cmd.Int("embedding-dimensions")
			cfg.GPUs, cfg.GPUIdleWatts, cfg.GPUJoulesPerToken = cmd.Int("gpus"), cmd.Float64("gpu-idle-watts"), cmd.Float64("gpu-joules-per-token")
			if models := cmd.String("models"); models != "" {
				for _, m := range strings.Split(models, ",") {
					cfg.Models = append(cfg.Models, strings.TrimSpace(m))
				}
			}
			cfg.Faults = map[mock.FaultKind]float64{}
			for _, k := range mock.FaultKinds {
				cfg.Faults[k] = cmd.Float64(string(k) + "-rate")
			}
			if err := cfg.Validate(); err != nil {
				return badInput("mockserver: %v", err)
			}
			useTLS, certOut := cmd.Bool("tls"), cmd.String("tls-cert-out")
			if certOut != "" && !useTLS {
				return badInput("mockserver --tls-cert-out needs --tls (a cleartext mock has no certificate)")
			}
			start := mock.Start
			if useTLS {
				start = mock.StartTLS
			}
			srv, err := start(cfg, cmd.String("addr"))
			if err != nil {
				return badInput("mockserver: %v (is another server using the port? choose another with --addr)", err)
			}
			cert := ""
			if certOut != "" {
				if err := writeCertificate(certOut, srv.CACertPEM()); err != nil {
					shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					_ = srv.Close(shutdown)
					return badInput("mockserver --tls-cert-out: %v", err)
				}
				cert = ", certificate in " + certOut
			}
			fmt.Fprintf(cmd.Root().Writer, "plload mock listening on %s (model %s, TTFT %s, %g tok/s per stream%s)\n",
				srv.BaseURL(), cfg.Model, cfg.TTFT, cfg.TPS, cert)
			if useTLS && certOut == "" {
				fmt.Fprintf(cmd.Root().Writer, "its certificate (trust it with target.tls.ca_file):\n%s", srv.CACertPEM())
			}
			ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			select {
			case <-ctx.Done():
			case <-waitChan(srv.Wait):
			}
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Close(shutdown)
		},
	}
}

// writeCertificate writes a TLS mock's certificate through a temporary file beside path, so a
// client that sees the file sees all of it.
func writeCertificate(path string, pem []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".plload-mock-cert-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone after the rename; removes the leftover on failure
	if _, err := tmp.Write(pem); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil { // a certificate is public; clients of another user read it
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// waitChan runs wait in the background and closes the returned channel when it returns.
func waitChan(wait func() error) <-chan struct{} {
	ch := make(chan struct{})
	go func() { _ = wait(); close(ch) }()
	return ch
}
