package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/live"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/workload"
)

// StartTarget starts the in-process mock when the scenario asks for it (baseURL is then its URL; ""
// means the scenario's own) and sends the preflight request. release stops the mock.
func StartTarget(ctx context.Context, sc *workload.Scenario, w *workload.Workload, preflight bool, log *slog.Logger, stderr io.Writer) (baseURL string, release func(), err error) {
	release = func() {}
	if sc.UsesMock() {
		m, err := startMock(sc)
		if err != nil {
			return "", release, badInput("starting the in-process mock: %v", err)
		}
		release = func() {
			closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = m.Close(closeCtx)
		}
		baseURL = m.BaseURL()
		log.Info("started the bundled mock in-process", "url", baseURL)
	}
	if !preflight {
		return baseURL, release, nil
	}
	warning, err := engine.Preflight(ctx, engine.Config{Scenario: sc, Workload: w, BaseURL: baseURL})
	switch {
	case ctx.Err() != nil:
		err = &Error{Code: Interrupted, Err: errors.New("interrupted before the first stage; nothing was written")}
	case err != nil:
		err = &Error{Code: BadInput, Err: fmt.Errorf("%s: %w", sc.File, err)}
	case warning != "":
		fmt.Fprintln(stderr, "warning: "+warning)
	}
	if err != nil {
		release()
		return "", func() {}, err
	}
	return baseURL, release, nil
}

// startMock starts the bundled mock for a scenario's target.mock settings.
func startMock(sc *workload.Scenario) (*mock.Running, error) {
	m := sc.Target.Mock
	cfg := mock.DefaultConfig()
	cfg.Model = sc.Target.Model
	cfg.TTFT, cfg.TPS, cfg.Jitter = m.TTFT.D(), m.TPS, m.Jitter
	cfg.ErrorRate, cfg.CacheTTFTFactor, cfg.NoUsage, cfg.Seed = m.ErrorRate, m.CacheTTFTFactor, !m.Usage, m.Seed
	cfg.CloseAfterResponse = m.CloseAfterResponse
	cfg.PrefillPerToken = m.PrefillPerToken.D()
	cfg.MaxConcurrency, cfg.ScaleMaxConcurrency, cfg.ScaleAfter = m.MaxConcurrency, m.ScaleMaxConcurrency, m.ScaleAfter.D()
	if m.ToolCallRate != nil {
		cfg.ToolCallRate = *m.ToolCallRate
	}
	if m.JSONValidRate != nil {
		cfg.JSONValidRate = *m.JSONValidRate
	}
	cfg.Models = m.Models
	if m.GPUs != nil {
		cfg.GPUs = *m.GPUs
	}
	if m.GPUIdleWatts != nil {
		cfg.GPUIdleWatts = *m.GPUIdleWatts
	}
	if m.GPUJoulesPerToken != nil {
		cfg.GPUJoulesPerToken = *m.GPUJoulesPerToken
	}
	cfg.SharesProcess = true
	return mock.Start(cfg, "")
}

// CheckTarget refuses, before anything is written or sent, a target whose host does not resolve.
func CheckTarget(ctx context.Context, sc *workload.Scenario) error {
	if sc.UsesMock() {
		return nil
	}
	raw := workload.Expand(sc.Target.BaseURL, os.Getenv)
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return badInput("%s: target.base_url %q is not a URL with a host; nothing was sent", sc.File, workload.MaskURL(raw))
	}
	host := u.Hostname()
	if net.ParseIP(host) != nil {
		return nil
	}
	lookup, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := net.DefaultResolver.LookupHost(lookup, host); err != nil {
		return badInput("%s: target.base_url: cannot resolve host %q (%v); check the name or your DNS; nothing was sent", sc.File, host, err)
	}
	return nil
}

// ServerMetricsURL is where the target's Prometheus metrics are: target.server_metrics_url, or the
// base URL without /v1 (and its query) plus /metrics ("" when off).
func ServerMetricsURL(sc *workload.Scenario, baseURL string) string {
	switch u := sc.Target.ServerMetricsURL; u {
	case "off":
		return ""
	case "":
		if baseURL == "" {
			baseURL = workload.Expand(sc.Target.BaseURL, os.Getenv)
		}
		return workload.ServerRoot(baseURL) + "/metrics"
	default:
		return workload.Expand(u, os.Getenv)
	}
}

// servePrometheus serves the live /metrics on host:port (before any traffic: a busy port is bad
// input) until stop is called. A non-loopback host is allowed because the scenario names it, and it
// is logged.
func servePrometheus(host string, port int, progress *live.Progress, stderr io.Writer) (stop func(), err error) {
	addr := net.JoinHostPort(host, fmt.Sprint(port))
	stop, err = live.Serve(addr, progress)
	if err != nil {
		return nil, err
	}
	if !mock.IsLoopback(addr) {
		fmt.Fprintf(stderr, "warning: live /metrics on %s is reachable from other machines\n", addr)
	}
	return stop, nil
}
