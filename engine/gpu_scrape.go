package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/scrape"
	"github.com/plload/plload/workload"
)

// GPUTelemetry is where a stage reads the GPUs' telemetry (docs/measurement.md, GPU telemetry).
type GPUTelemetry struct {
	// URLs are DCGM exporter endpoints, read every second.
	URLs []string
	// NvidiaSMI runs a local `nvidia-smi --query-gpu … -lms 1000` for the stage.
	NvidiaSMI bool
	// Auto says the sources were guessed, not named: one that does not answer is a note, not a warning.
	Auto bool
}

// Off says no source is set.
func (g GPUTelemetry) Off() bool { return len(g.URLs) == 0 && !g.NvidiaSMI }

// gpuResult is what a stage's GPU telemetry came to: a note when it was off (nothing answered where
// auto looked), warnings for a named source that never answered or stopped.
type gpuResult struct {
	note     string
	warnings []string
}

// nvidiaSMIPath is the program the nvidia-smi source runs; tests point it at a fake.
var nvidiaSMIPath = "nvidia-smi"

// scrapeGPU reads every source until ctx ends, each sample a line of stage_NN/gpu_metrics.jsonl on the
// run's clock. A source that does not answer its first read stops (a note where the sources were
// guessed, a warning where they were named); one that answered and then fails is logged once per
// problem and read on, and the gap it leaves is SummarizeGPU's to say.
func (s *stageRun) scrapeGPU(ctx context.Context, cfg GPUTelemetry, dir string) gpuResult {
	path := filepath.Join(dir, "gpu_metrics.jsonl")
	w, err := metrics.NewWriter[*metrics.GPUSample](path, 64)
	if err != nil {
		return gpuResult{warnings: []string{fmt.Sprintf("GPU telemetry off: %v", err)}}
	}
	defer func() {
		if w.Close() == nil && w.Written() == 0 {
			os.Remove(path) // nothing was read: no file, as where telemetry is off
		}
	}()
	// problems[i] is why source i never answered ("" when it did), in the order the sources were given
	// (the exporters, then nvidia-smi), whichever gave up first.
	problems := make([]string, len(cfg.URLs)+1)
	var res gpuResult
	// Auto's nvidia-smi reads the same GPUs as an exporter on this machine would: it runs only when
	// no exporter answered its first read.
	var firstReads sync.WaitGroup
	var answered atomic.Bool
	firstReads.Add(len(cfg.URLs))
	var wg sync.WaitGroup
	for i, url := range cfg.URLs {
		wg.Go(func() {
			first := sync.OnceFunc(firstReads.Done)
			defer first()
			problems[i] = s.scrub(s.scrapeDCGM(ctx, url, cfg.Auto, w, func() { answered.Store(true); first() }))
		})
	}
	if cfg.NvidiaSMI {
		wg.Go(func() {
			if cfg.Auto {
				firstReads.Wait()
				if answered.Load() {
					problems[len(cfg.URLs)] = "nvidia-smi not run: an exporter answered"
					return
				}
			}
			problems[len(cfg.URLs)] = s.scrub(s.runNvidiaSMI(ctx, w))
		})
	}
	wg.Wait()
	var silent []string // sources that never answered, and why
	for _, p := range problems {
		if p != "" {
			silent = append(silent, p)
		}
	}
	sources := len(cfg.URLs)
	if cfg.NvidiaSMI {
		sources++
	}
	switch {
	case len(silent) == 0:
	case cfg.Auto && len(silent) == sources:
		res.note = "GPU telemetry off: " + strings.Join(silent, "; ") + " (set target.gpu_metrics_url to a DCGM exporter, or nvidia-smi)"
	case cfg.Auto: // a guess that did not answer beside one that did: nothing to say
	default:
		for _, p := range silent {
			res.warnings = append(res.warnings, "GPU telemetry: "+p)
		}
	}
	return res
}

// scrapeDCGM reads one exporter every second; it returns why it stopped when its first read failed.
// answered is called after the first read that worked. A named exporter that is slow to answer at
// first is read on (as the server's metrics are); a guessed one is given up.
func (s *stageRun) scrapeDCGM(ctx context.Context, url string, guessed bool, w *metrics.Writer[*metrics.GPUSample], answered func()) string {
	client := &http.Client{Timeout: scrapeTimeout, CheckRedirect: noRedirects}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	ok, lastProblem := 0, ""
	for {
		problem := getPrometheus(ctx, client, url, func(resp *http.Response) error {
			sample, err := scrape.ParseDCGM(resp.Body, s.clock.ns(time.Now()), redactedURL(url))
			if err == nil {
				w.Write(&sample)
			}
			return err
		})
		switch {
		case problem == "":
			if ok++; ok == 1 {
				answered()
			}
		case ctx.Err() != nil:
		case ok == 0 && (guessed || !strings.Contains(problem, "timed out")):
			return problem
		case problem != lastProblem:
			s.log.Warn("a GPU telemetry read failed; reading goes on", "source", redactedURL(url), "problem", s.scrub(problem))
			lastProblem = problem
		}
		select {
		case <-ctx.Done():
			if ok == 0 && lastProblem != "" {
				return lastProblem + " at every read"
			}
			return ""
		case <-tick.C:
		}
	}
}

// runNvidiaSMI runs nvidia-smi for the stage, its lines read as they come; it returns why when the
// program could not start or ended before giving a reading.
func (s *stageRun) runNvidiaSMI(ctx context.Context, w *metrics.Writer[*metrics.GPUSample]) string {
	cmd := exec.CommandContext(ctx, nvidiaSMIPath, "--query-gpu="+scrape.NvidiaSMIQuery, "--format=csv,noheader,nounits", "-lms", "1000")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Sprintf("nvidia-smi: %v", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Sprintf("nvidia-smi did not start (%v)", rootCause(err))
	}
	readings := 0
	readErr := scrape.ReadNvidiaSMI(out, func() int64 { return s.clock.ns(time.Now()) }, func(sample metrics.GPUSample) {
		readings++
		w.Write(&sample)
	})
	waitErr := cmd.Wait()
	if ctx.Err() != nil {
		return ""
	}
	why := errors.Join(readErr, waitErr)
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		why = errors.Join(why, errors.New(firstLine(msg)))
	}
	if why == nil {
		why = errors.New("it exited")
	}
	if readings == 0 {
		return fmt.Sprintf("nvidia-smi gave no reading: %v", why)
	}
	s.log.Warn("nvidia-smi stopped before the stage ended; its gap is not filled", "problem", s.scrub(why.Error()))
	return ""
}

// getPrometheus GETs a Prometheus endpoint and hands a 200 answer to read; it returns what went wrong
// ("" when it worked), in words for the terminal.
//
// The messages name the URL with any password in it masked (url.Redacted), and what the server sent
// quoted in them is scrubbed of the run's secrets by the callers.
func getPrometheus(ctx context.Context, client *http.Client, url string, read func(*http.Response) error) string {
	shown := redactedURL(url)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		if isTimeout(err) {
			return fmt.Sprintf("%s timed out after %s", shown, scrapeTimeout)
		}
		return fmt.Sprintf("%s did not answer (%v)", shown, rootCause(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("%s answered HTTP %d", shown, resp.StatusCode)
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{&cappedReader{r: resp.Body, left: maxMetricsBytes}, resp.Body}
	if err := read(resp); err != nil {
		if isTimeout(err) {
			return fmt.Sprintf("%s timed out after %s", shown, scrapeTimeout)
		}
		return fmt.Sprintf("%s: %v", shown, err)
	}
	return ""
}

// maxMetricsBytes bounds a metrics answer: a vLLM's /metrics or an 8-GPU exporter's is well under
// 1 MB; one past this is a misbehaving server, refused rather than held in memory. A variable so a
// test can reach it well within a scrape's timeout.
var maxMetricsBytes int64 = 32 << 20

// cappedReader reads r to at most left bytes, then fails: a parser never sees a cut answer as whole.
type cappedReader struct {
	r    io.Reader
	left int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("the answer is larger than %d MiB", maxMetricsBytes>>20)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// redactedURL is u with its password and secret-named query values masked, as messages and files
// show it (as scenario.resolved.yaml writes the URL).
func redactedURL(u string) string { return workload.MaskURL(u) }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
