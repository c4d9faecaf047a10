package workload

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestMatrixKeysRefused: each bad matrix: value is refused at its key, saying what is accepted.
// Catches a key that is not read (unknown-key error) and a bad value that passes.
func TestMatrixKeysRefused(t *testing.T) {
	cases := []struct {
		name, block, path, message string
	}{
		{"zero mean", "matrix: {mean_rate: 0, peak_rate: 4}", "matrix.mean_rate", "found 0; accepted: a rate > 0"},
		{"negative peak", "matrix: {mean_rate: 1, peak_rate: -4}", "matrix.peak_rate", "found -4; accepted: a rate > 0"},
		{"mean alone", "matrix: {mean_rate: 2}", "matrix.mean_rate", "set without matrix.peak_rate"},
		{"peak alone", "matrix: {peak_rate: 2}", "matrix.peak_rate", "set without matrix.mean_rate"},
		{"peak below mean", "matrix: {mean_rate: 5, peak_rate: 2}", "matrix.peak_rate", "found 2, below matrix.mean_rate 5"},
		{"zero ladder", "matrix: {max_concurrency: 0}", "matrix.max_concurrency", "found 0; accepted: the top of part A's concurrency ladder"},
		{"zero ramp", "matrix: {ramp: 0s}", "matrix.ramp", "found 0s; accepted: a duration > 0"},
		{"hold without a unit", "matrix: {hold: 30}", "matrix.hold", "accepted: a duration with a unit"},
		{"misspelt key", "matrix: {mean_rat: 2}", "matrix.mean_rat", `did you mean "mean_rate"?`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := applyEdits(edit{0, c.block})
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

// TestMatrixKeysRead: good values reach the scenario and survive scenario.resolved.yaml; ramp and
// hold default to the seed's 2m and 3m.
func TestMatrixKeysRead(t *testing.T) {
	text := applyEdits(edit{0, "matrix: {mean_rate: 1.5, peak_rate: 4, max_concurrency: 16, ramp: 20s, hold: 40s}"})
	s, issues := Parse("testdata/t.yaml", []byte(text), LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil {
		t.Fatalf("%v\n--- file:\n%s", err, text)
	}
	want := Matrix{MeanRate: 1.5, PeakRate: 4, MaxConcurrency: 16, Ramp: Duration(20 * time.Second), Hold: Duration(40 * time.Second)}
	if diff := cmp.Diff(want, *s.Matrix); diff != "" {
		t.Errorf("matrix (-want +got):\n%s", diff)
	}
	resolved, err := s.ResolvedYAML()
	if err != nil {
		t.Fatal(err)
	}
	again, issues := Parse("testdata/t.yaml", resolved, LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil {
		t.Fatalf("the resolved file does not load: %v\n%s", err, resolved)
	}
	if diff := cmp.Diff(want, *again.Matrix); diff != "" {
		t.Errorf("matrix after scenario.resolved.yaml (-want +got):\n%s", diff)
	}
	var none *Matrix
	if got := []time.Duration{none.RampOrDefault(), none.HoldOrDefault(), s.Matrix.RampOrDefault(), s.Matrix.HoldOrDefault()}; !cmp.Equal(got, []time.Duration{2 * time.Minute, 3 * time.Minute, 20 * time.Second, 40 * time.Second}) {
		t.Errorf("ramp and hold %v, want 2m 3m 20s 40s", got)
	}
}
