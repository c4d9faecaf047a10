package engine

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/scrape"
)

// scrapeTimeout bounds one scrape: a server busy with prefill can take seconds to answer /metrics
// (llama.cpp took 3 s), and a scrape must never hold up the next one for long.
const scrapeTimeout = 2 * time.Second

// scrapeCounts are a stage's scrape attempts and the ones that gave a sample.
type scrapeCounts struct{ attempts, ok int }

// scrapeServer reads the target's Prometheus endpoint every second until ctx ends, writing each
// sample to stage_NN/server_metrics.jsonl. When the endpoint is not there — it does not answer, or
// answers without Prometheus text, before any scrape succeeded — it stops and returns a note saying
// why (many hosted APIs have no /metrics). Once one scrape succeeded, a failed or slow one is counted
// and scraping goes on.
func (s *stageRun) scrapeServer(ctx context.Context, url, dir string) (string, scrapeCounts) {
	var n scrapeCounts
	w, err := metrics.NewWriter[*metrics.ServerSample](filepath.Join(dir, "server_metrics.jsonl"), 64)
	if err != nil {
		return fmt.Sprintf("server metrics off: %v", err), n
	}
	defer w.Close()
	client := &http.Client{Timeout: scrapeTimeout, CheckRedirect: noRedirects} // the target's own /metrics, not another server's
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastProblem string
	for {
		n.attempts++
		switch problem := s.scrapeOnce(ctx, client, url, w); {
		case problem == "":
			n.ok++
		case ctx.Err() != nil:
			n.attempts--
		case n.ok == 0 && !strings.Contains(problem, "timed out"):
			return "server metrics off: " + problem, n
		default:
			if problem != lastProblem {
				s.log.Warn("a server metrics scrape failed; scraping goes on", "problem", problem)
				lastProblem = problem
			}
		}
		select {
		case <-ctx.Done():
			if n.ok == 0 && n.attempts > 0 {
				return fmt.Sprintf("server metrics: none of %d scrapes succeeded (%s)", n.attempts, lastProblem), n
			}
			return "", n
		case <-tick.C:
		}
	}
}

// scrapeOnce takes one sample; it returns what went wrong ("" when it worked).
func (s *stageRun) scrapeOnce(ctx context.Context, client *http.Client, url string, w *metrics.Writer[*metrics.ServerSample]) string {
	problem := getPrometheus(ctx, client, url, func(resp *http.Response) error {
		sample, err := scrape.Parse(resp.Body, s.clock.ns(time.Now()))
		if err == nil {
			w.Write(&sample)
		}
		return err
	})
	if strings.Contains(problem, " answered HTTP ") {
		problem += ` (set target.server_metrics_url, or "off")`
	}
	return problem
}
