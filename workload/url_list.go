package workload

import (
	"net/url"
	"strings"
)

// URLList is a scenario key that takes one value or a list of them (target.gpu_metrics_url: one
// exporter, or one per node); the scenario's decoder reads a lone value as a list of one.
type URLList []string

// MarshalYAML writes one value as a string, more as a list.
func (l URLList) MarshalYAML() (any, error) {
	if len(l) == 1 {
		return l[0], nil
	}
	return []string(l), nil
}

// GPU telemetry's named sources (target.gpu_metrics_url).
const (
	GPUMetricsAuto      = "auto"
	GPUMetricsOff       = "off"
	GPUMetricsNvidiaSMI = "nvidia-smi"
)

// GPUSources is target.gpu_metrics_url as the engine reads it: "auto" when not set, "off",
// "nvidia-smi", or the exporters' URLs, a bare host:port completed to http://host:port/metrics (as
// AIPerf's --gpu-telemetry takes it).
func (t Target) GPUSources() []string {
	if len(t.GPUMetricsURL) == 0 {
		return []string{GPUMetricsAuto}
	}
	out := make([]string, 0, len(t.GPUMetricsURL))
	for _, u := range t.GPUMetricsURL {
		u = strings.TrimSpace(u)
		if u != GPUMetricsAuto && u != GPUMetricsOff && u != GPUMetricsNvidiaSMI && !strings.Contains(u, "://") {
			u = "http://" + u
			if !strings.Contains(strings.TrimPrefix(u, "http://"), "/") {
				u += "/metrics"
			}
		}
		out = append(out, u)
	}
	return out
}

// gpuMetricsURL checks target.gpu_metrics_url: a named source alone, or http(s) URLs.
func (c *checker) gpuMetricsURL() {
	list := c.s.Target.GPUMetricsURL
	if c.s.has("target.gpu_metrics_url") && len(list) == 0 {
		c.errorf("target.gpu_metrics_url", "found an empty list; accepted: auto, off, nvidia-smi, or DCGM exporter URLs")
		return
	}
	for _, u := range c.s.Target.GPUSources() {
		switch u {
		case GPUMetricsAuto, GPUMetricsOff, GPUMetricsNvidiaSMI:
			if len(list) > 1 {
				c.errorf("target.gpu_metrics_url", "found %q in a list of %d; accepted: %s alone, or a list of DCGM exporter URLs", u, len(list), u)
				return
			}
			continue
		}
		parsed, err := url.Parse(u)
		if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			c.errorf("target.gpu_metrics_url", "found %q; accepted: auto, off, nvidia-smi, or a DCGM exporter's http:// or https:// URL (host:port means http://host:port/metrics)", u)
			return
		}
	}
}
