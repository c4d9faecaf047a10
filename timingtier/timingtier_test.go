package timingtier

import "testing"

// TestOnFollowsTheEnvironment: the tier is on only for PLLOAD_TIMING=1, and never under -race.
func TestOnFollowsTheEnvironment(t *testing.T) {
	for _, c := range []struct {
		value string
		want  bool
	}{{"", false}, {"0", false}, {"yes", false}, {"1", !race}} {
		t.Setenv(Env, c.value)
		if got := On(); got != c.want {
			t.Errorf("%s=%q: On() = %v, want %v", Env, c.value, got, c.want)
		}
	}
}
