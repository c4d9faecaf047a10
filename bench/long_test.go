package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/plload/plload/selftest"
)

// TestTenThousandStreams is issue 19's scale check, in the PLLOAD_LONG suite (it takes about two
// minutes and both cores): 10,000 concurrent streams of 5 chunks/s each (TTFT 200 ms, a chunk every
// 200 ms) against the mock in its own process, a 60 s window after 15 s of warmup. It passes with no
// client error, injector health clean (no strain) and the client's own delay (receive time − the
// mock's stamped send time) p99 ≤ 5 ms. PLLOAD_LONG_STREAMS overrides the count (to find where a
// machine stands).
//
//	PLLOAD_LONG=1 go test ./bench -run TenThousandStreams -v -timeout 15m
func TestTenThousandStreams(t *testing.T) {
	if os.Getenv("PLLOAD_LONG") != "1" {
		t.Skip("set PLLOAD_LONG=1 to run the 10,000-stream check (about two minutes)")
	}
	streams := 10000
	if s := os.Getenv("PLLOAD_LONG_STREAMS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("PLLOAD_LONG_STREAMS=%q: accepted: a whole number ≥ 1", s)
		}
		streams = n
	}
	bin := filepath.Join(t.TempDir(), "plload")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building plload for the mock: %v\n%s", err, out)
	}
	cfg := selftest.Config{Ladder: []int{streams}, TTFT: 200 * time.Millisecond, ITL: 200 * time.Millisecond, Tokens: 20,
		Warmup: 15 * time.Second, Duration: 60 * time.Second, Bound: 5 * time.Millisecond, Executable: bin}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	steps, err := selftest.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := steps[0]
	t.Log(selftest.StepLine(st))
	t.Logf("requests %d, client CPU %.0f %% of %d cores, run-queue wait %.0f %%, scheduler p99 %.2f ms",
		st.Requests, st.Injector.CPUPercent, st.Injector.Cores, st.Injector.RunQueueWaitPercent.V, st.Injector.SchedLatencyP99Ms)
	if st.Errors > 0 {
		t.Errorf("%d client errors; first: %s", st.Errors, st.FirstError)
	}
	if len(st.Strain) > 0 {
		t.Errorf("injector strained: %v", st.Strain)
	}
	if st.ClientDelay == nil || st.ClientDelay.P99Ms > 5 {
		t.Errorf("client delay %+v: want p99 ≤ 5 ms against the mock's send times", st.ClientDelay)
	}
}
