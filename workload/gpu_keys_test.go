package workload

import (
	"slices"
	"strings"
	"testing"
)

// target.gpu_metrics_url takes one source or a list of exporters, completes a bare host:port as
// AIPerf's --gpu-telemetry does, and refuses the rest at its line; cost.energy_usd_per_kwh is a price.
func TestGPUTelemetryKeys(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  []string
	}{
		{"", []string{"auto"}},
		{"off", []string{"off"}},
		{"nvidia-smi", []string{"nvidia-smi"}},
		{"http://n1:9400/metrics", []string{"http://n1:9400/metrics"}},
		{"[n1:9400, 'https://n2/dcgm', 'http://[::1]:9401']", []string{"http://n1:9400/metrics", "https://n2/dcgm", "http://[::1]:9401"}},
	} {
		key := ""
		if tc.value != "" {
			key = "\n  gpu_metrics_url: " + tc.value
		}
		sc, issues := Parse("t.yaml", []byte(applyEdits(edit{5, "  model: m" + key})), LoadOptions{Getenv: noEnv})
		if err := issues.Err(); err != nil {
			t.Errorf("%q: %v", tc.value, err)
			continue
		}
		if got := sc.Target.GPUSources(); !slices.Equal(got, tc.want) {
			t.Errorf("%q: sources %q, want %q", tc.value, got, tc.want)
		}
		if tc.value != "" {
			resolved, _ := sc.ResolvedYAML()
			again, issues := Parse("r.yaml", resolved, LoadOptions{Getenv: noEnv})
			if err := issues.Err(); err != nil || !slices.Equal(again.Target.GPUSources(), tc.want) {
				t.Errorf("%q: the resolved file reads back as %q (%v)", tc.value, again.Target.GPUSources(), err)
			}
		}
	}
	for _, tc := range []struct{ edit, path, message string }{
		{"  gpu_metrics_url: ftp://n1/metrics", "target.gpu_metrics_url", `found "ftp://n1/metrics"; accepted: auto, off, nvidia-smi, or a DCGM exporter's http:// or https:// URL`},
		{"  gpu_metrics_url: [nvidia-smi, 'http://n1:9400/metrics']", "target.gpu_metrics_url", `found "nvidia-smi" in a list of 2; accepted: nvidia-smi alone`},
		{"  gpu_metrics_url: []", "target.gpu_metrics_url", "found an empty list"},
		{"  gpu_metrics_url: {url: x}", "target.gpu_metrics_url", "accepted: a list"},
	} {
		_, issues := Parse("t.yaml", []byte(applyEdits(edit{5, "  model: m\n" + tc.edit})), LoadOptions{Getenv: noEnv})
		found := false
		for _, is := range issues {
			found = found || is.Path == tc.path && is.Line == 6 && strings.Contains(is.Message, tc.message) && is.Severity == SeverityError
		}
		if !found {
			t.Errorf("%s: want %s at line 6: %q; got:\n%s", tc.edit, tc.path, tc.message, dump(issues))
		}
	}
	_, issues := Parse("t.yaml", []byte(applyEdits(edit{0, "  energy_usd_per_kwh: -0.1"})), LoadOptions{Getenv: noEnv})
	if !strings.Contains(dump(issues), "cost.energy_usd_per_kwh") || !strings.Contains(dump(issues), "accepted: a price ≥ 0 of one kilowatt-hour") {
		t.Errorf("a negative energy price: %s", dump(issues))
	}
}
