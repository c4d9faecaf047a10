package workload

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// absorbScenario is baseScenario on the bundled mock, with mockLine as its target.mock block and
// sloLine added to its slo block.
func absorbScenario(mockLine, sloLine string) string {
	edits := []edit{{4, "  base_url: mock"}, {5, "  model: m\n" + mockLine}}
	if sloLine != "" {
		edits = append(edits, edit{21, "  error_rate_max: 0.01\n" + sloLine})
	}
	return applyEdits(edits...)
}

// TestAbsorbKeysRefused: slo.window and the mock's scaling keys name the key and what is accepted.
// Catches a key that is not read (unknown-key error), and a bad value that passes.
func TestAbsorbKeysRefused(t *testing.T) {
	cases := []struct {
		name, mock, slo, path, message string
	}{
		{"window zero", "  mock: {ttft: 10ms}", "  window: 0s", "slo.window", "found 0s; accepted: a duration of at least 1s"},
		{"window too short to judge", "  mock: {ttft: 10ms}", "  window: 1ms", "slo.window", "found 1ms; accepted: a duration of at least 1s"},
		{"window without a unit", "  mock: {ttft: 10ms}", "  window: 10", "slo.window", "accepted: a duration with a unit"},
		{"negative slots", "  mock: {max_concurrency: -1}", "", "target.mock.max_concurrency", "found -1; accepted: 0 (unlimited)"},
		{"scale without slots", "  mock: {scale_max_concurrency: 8, scale_after: 5s}", "", "target.mock.scale_max_concurrency", "found 8 without target.mock.max_concurrency"},
		{"scale without a moment", "  mock: {max_concurrency: 2, scale_max_concurrency: 8}", "", "target.mock.scale_after", "found 0s; accepted: a duration > 0"},
		{"a moment without slots", "  mock: {max_concurrency: 2, scale_after: 5s}", "", "target.mock.scale_after", "found 5s without target.mock.scale_max_concurrency"},
		{"too many slots", "  mock: {max_concurrency: 2, scale_max_concurrency: 2000000, scale_after: 5s}", "", "target.mock.scale_max_concurrency", "1 to 1000000"},
		{"misspelt key", "  mock: {max_concurrency: 2, scale_afer: 5s}", "", "target.mock.scale_afer", `did you mean "scale_after"?`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := absorbScenario(c.mock, c.slo)
			_, issues := Parse("testdata/t.yaml", []byte(text), LoadOptions{Getenv: noEnv})
			for _, is := range issues {
				if is.Severity == SeverityError && is.Path == c.path && strings.Contains(is.Message, c.message) {
					return
				}
			}
			t.Errorf("want an error at %s containing %q; got:\n%s\n--- file:\n%s", c.path, c.message, dump(issues), text)
		})
	}
}

// TestAbsorbKeysRead: good values reach the scenario, and slo.window defaults to 10 s.
func TestAbsorbKeysRead(t *testing.T) {
	text := absorbScenario("  mock: {max_concurrency: 2, scale_max_concurrency: 8, scale_after: 5s}", "  window: 2s")
	s, issues := Parse("testdata/t.yaml", []byte(text), LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil {
		t.Fatalf("%v\n--- file:\n%s", err, text)
	}
	got := []any{s.Target.Mock.MaxConcurrency, s.Target.Mock.ScaleMaxConcurrency, s.Target.Mock.ScaleAfter.D(), s.SLO.AbsorbWindow()}
	if diff := cmp.Diff([]any{2, 8, 5 * time.Second, 2 * time.Second}, got); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	s, _ = Parse("testdata/t.yaml", []byte(absorbScenario("  mock: {ttft: 10ms}", "")), LoadOptions{Getenv: noEnv})
	if got := s.SLO.AbsorbWindow(); got != 10*time.Second {
		t.Errorf("default window %s, want 10s", got)
	}
}
