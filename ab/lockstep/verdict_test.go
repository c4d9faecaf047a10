package lockstep

import (
	"errors"
	"testing"

	"github.com/plload/plload/ab"
	"github.com/plload/plload/runner"
)

// TestFailOnWorseExitCodes: with --fail-on worse, a worse row that stands exits 1, a worse reading
// only on numbers that cannot vouch for it exits 3, and none exits 0.
func TestFailOnWorseExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    ab.Decision
		code runner.Code
	}{
		{"worse", ab.Decision{Worse: []string{"stage 01 ttft_p95_ms 50 → 60"}, Undecided: []string{"x"}}, runner.Failed},
		{"only undecided", ab.Decision{Undecided: []string{"stage 01 ttft_p95_ms 50 → 60: strained"}}, runner.Undecided},
		{"better", ab.Decision{Better: 2}, 0},
	} {
		err := verdictOutcome(tc.d, "/r")
		var re *runner.Error
		switch {
		case tc.code == 0 && err != nil:
			t.Errorf("%s: %v, want none", tc.name, err)
		case tc.code != 0 && (!errors.As(err, &re) || re.Code != tc.code):
			t.Errorf("%s: %v, want exit %d", tc.name, err, tc.code)
		}
	}
}
