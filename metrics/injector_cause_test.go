package metrics

import (
	"strings"
	"testing"
)

// TestInjectorCause: the cause a one-line verdict names is the largest of the causes over its
// threshold — never the timestamp lag they make, unless it stands alone — and a run-queue wait of
// several threads at once reads as threads, never as a share of time over 100 %.
func TestInjectorCause(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    InjectorHealth
		want string
	}{
		{"none", InjectorHealth{Cores: 2, CPUPercent: 50}, ""},
		{"a CPU wait beside a longer read lag: the wait is the cause",
			InjectorHealth{Cores: 2, CPUPercent: 50, ReadLagP99Ms: Some(4.48), RunQueueWaitPercent: Some(62.0)},
			"injector threads waited for a CPU: 0.62 threads at a time on average"},
		{"the lag alone", InjectorHealth{Cores: 2, CPUPercent: 50, ReadLagP99Ms: Some(4.48)}, "injector read lag p99 4.48 ms"},
		{"the client's own CPU further over than the wait", InjectorHealth{Cores: 2, CPUPercent: 199, RunQueueWaitPercent: Some(16.0)}, "injector CPU busy: 199 %"},
		{"GC further over than the wait", InjectorHealth{Cores: 2, GCPauseTotalMs: 900, RunQueueWaitPercent: Some(20.0)}, "injector GC paused 900 ms"},
		{"1.74 threads waiting", InjectorHealth{Cores: 2, RunQueueWaitPercent: Some(174.0)}, "injector threads waited for a CPU: 1.74 threads at a time on average were ready to run with no core free (over 0.15)"},
	} {
		got := tc.h.Cause()
		if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %q…", tc.name, got, tc.want)
		}
		if strings.Contains(got, "174") {
			t.Errorf("%s: a share over 100 %%: %q", tc.name, got)
		}
	}
}

// TestThreadsWaitingText: a run-queue wait summed over threads reads as threads waiting at a time,
// never as a share of the time over 100 %, in the self-test's and the strain warning's one wording.
func TestThreadsWaitingText(t *testing.T) {
	for percent, want := range map[float64]string{
		0:   "threads waiting for a CPU: 0.00 at a time on average",
		12:  "threads waiting for a CPU: 0.12 at a time on average",
		174: "threads waiting for a CPU: 1.74 at a time on average",
	} {
		if got := ThreadsWaitingText(percent); got != want {
			t.Errorf("%g %%: %q, want %q", percent, got, want)
		}
	}
}
