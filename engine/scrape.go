package engine

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/plload/plload/metrics"
)

// scrapeServer reads the target's Prometheus endpoint every second until ctx ends, writing each
// sample to stage_NN/server_metrics.jsonl. When the endpoint does not answer with Prometheus text it
// stops and returns a note saying why (many hosted APIs have no /metrics).
func (s *stageRun) scrapeServer(ctx context.Context, url, dir string) string {
	w, err := metrics.NewWriter[*metrics.ServerSample](filepath.Join(dir, "server_metrics.jsonl"), 64)
	if err != nil {
		return fmt.Sprintf("server metrics off: %v", err)
	}
	defer w.Close()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if note := s.scrapeOnce(ctx, client, url, w); note != "" {
			return note
		}
		select {
		case <-ctx.Done():
			return ""
		case <-tick.C:
		}
	}
}

func (s *stageRun) scrapeOnce(ctx context.Context, client *http.Client, url string, w *metrics.Writer[*metrics.ServerSample]) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Sprintf("server metrics off: %v", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ""
		}
		return fmt.Sprintf("server metrics off: %s did not answer (%v)", url, rootCause(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("server metrics off: %s answered HTTP %d (set target.server_metrics_url, or \"off\")", url, resp.StatusCode)
	}
	sample, err := metrics.ParseServerMetrics(resp.Body, s.clock.ns(time.Now()))
	if err != nil {
		return fmt.Sprintf("server metrics off: %s: %v", url, err)
	}
	w.Write(&sample)
	return ""
}
