package gate

import (
	"strings"
	"testing"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles/resultstest"
)

// GPU telemetry's figures are gate metrics: judged where the stage read its GPUs, and, as every
// unknown metric, a failed check naming the unknown where it did not (never a pass).
func TestGateGPUFigures(t *testing.T) {
	_, stages := resultstest.GoldenStages(t)
	g := &metrics.GPUSummary{JPerOutToken: metrics.Some(0.42), EnergyUSDPer1MOut: metrics.Some(0.021)}
	g.PowerMeanW, g.UtilMeanPct = metrics.Some(640.0), metrics.Some(87.0)
	for _, st := range stages {
		st.GPU = g
	}
	var rules []Rule
	for _, text := range []string{"j_per_out_token < 0.5", "j_per_out_token < 0.4", "gpu_util >= 80", "gpu_power_w < 600",
		"energy_usd_per_1m_out < 0.03", "j_per_1k_turns < 100"} {
		r, err := ParseRule(text)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, r)
	}
	want := []string{"pass", "fail", "pass", "fail", "pass", "fail"} // no J/1K turns in this summary: unknown
	for i, c := range Evaluate(rules, stages) {
		if c.Status != want[i] {
			t.Errorf("%s: %s (%s), want %s", c.Name, c.Status, c.Message, want[i])
		}
	}
	for _, st := range stages {
		st.GPU = nil
	}
	if c := Evaluate(rules[:1], stages)[0]; c.Status != "fail" || !strings.Contains(c.Message, "j_per_out_token is unknown") {
		t.Errorf("without GPU telemetry: %s (%s)", c.Status, c.Message)
	}
}
