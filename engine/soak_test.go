package engine

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plload/plload/workload"
)

// TestSoak runs 500 sessions for 10 minutes against a mock in another process and samples the
// client's RSS, goroutines and open files every 10 s; after warmup they must stay flat. It is a
// measurement, not a CI test:
//
//	PLLOAD_SOAK=1 go test ./engine -run Soak -v -count 1 -timeout 20m
func TestSoak(t *testing.T) {
	if os.Getenv("PLLOAD_SOAK") != "1" {
		t.Skip("set PLLOAD_SOAK=1 for the 10-minute soak")
	}
	minutes := 10.0
	if s := os.Getenv("PLLOAD_SOAK_MINUTES"); s != "" {
		minutes, _ = strconv.ParseFloat(s, 64)
	}
	base := childMock(t)
	duration := time.Duration(minutes * float64(time.Minute))
	text := scenarioYAML(base, chatSessions, fmt.Sprintf("  mode: concurrency\n  drain_timeout: 10s\n  stages:\n    - {concurrency: 500, warmup: 30s, duration: %s}", workload.Duration(duration-30*time.Second)))
	sc, issues := workload.Parse("soak.yaml", []byte(text), workload.LoadOptions{Getenv: testEnv})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	w, err := sc.Build()
	if err != nil {
		t.Fatal(err)
	}
	type sample struct {
		at                 time.Duration
		rssKiB, goroutines int
		openFiles          int
	}
	var samples []sample
	start := time.Now()
	stopSampling := every(10*time.Second, func() {
		fds, _ := os.ReadDir("/proc/self/fd")
		samples = append(samples, sample{time.Since(start), rssKiB(), runtime.NumGoroutine(), len(fds)})
	})
	res, err := Run(context.Background(), Config{Scenario: sc, Workload: w, Dir: t.TempDir(), Getenv: testEnv})
	stopSampling()
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := sample{rssKiB: 1 << 30, goroutines: 1 << 30, openFiles: 1 << 30}, sample{}
	for _, s := range samples {
		t.Logf("%6.0f s: RSS %d KiB, %d goroutines, %d open files", s.at.Seconds(), s.rssKiB, s.goroutines, s.openFiles)
		if s.at < time.Minute { // warmup and the first sessions' growth
			continue
		}
		lo.rssKiB, hi.rssKiB = min(lo.rssKiB, s.rssKiB), max(hi.rssKiB, s.rssKiB)
		lo.goroutines, hi.goroutines = min(lo.goroutines, s.goroutines), max(hi.goroutines, s.goroutines)
		lo.openFiles, hi.openFiles = min(lo.openFiles, s.openFiles), max(hi.openFiles, s.openFiles)
	}
	if hi.rssKiB == 0 {
		t.Logf("no samples after the first minute (the soak was shorter); %d requests, %d errors", res[0].Records, res[0].Errors)
		return
	}
	t.Logf("after the first minute: RSS %d–%d KiB, goroutines %d–%d, open files %d–%d; %d requests, %d errors, %d cancelled",
		lo.rssKiB, hi.rssKiB, lo.goroutines, hi.goroutines, lo.openFiles, hi.openFiles, res[0].Records, res[0].Errors, res[0].Cancelled)
	if hi.openFiles > lo.openFiles+50 || hi.goroutines > lo.goroutines+200 {
		t.Errorf("open files or goroutines grew during the soak")
	}
}

func rssKiB() int {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}
