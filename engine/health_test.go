package engine

import (
	"runtime"
	"testing"
	"time"
)

// TestHealthProbe: the probe reports CPU spent while it ran and, on Linux, how long the process's
// threads waited for a CPU, as a share of wall time no larger than the threads could have waited,
// and the share of the machine's time a VM host stole.
func TestHealthProbe(t *testing.T) {
	p := startProbe(nil)
	for deadline := time.Now().Add(50 * time.Millisecond); time.Now().Before(deadline); {
	}
	h := p.finish()
	if h.CPUPercent <= 0 || h.Cores != runtime.GOMAXPROCS(0) {
		t.Fatalf("cpu %.1f%% cores %d", h.CPUPercent, h.Cores)
	}
	if runtime.GOOS != "linux" {
		return
	}
	w := h.RunQueueWaitPercent
	if !w.OK || w.V < 0 || w.V > 100*float64(len(runQueueWait())) {
		t.Fatalf("run-queue wait %+v over %d threads", w, len(runQueueWait()))
	}
	if _, ok := runQueueWaitSince(nil); ok {
		t.Fatal("no start sample, yet a wait")
	}
	// The machine's stolen time is a share of its CPU time, read off /proc/stat.
	if st := h.StealPercent; !st.OK || st.V < 0 || st.V > 100 {
		t.Fatalf("steal %+v", st)
	}
	total, steal, ok := cpuTicks()
	if _, ok2 := stealPercentSince(total+1e9, steal); !ok || steal > total || ok2 {
		t.Fatalf("ticks %d, stolen %d (%v); a start after now still gave a share", total, steal, ok)
	}
}
