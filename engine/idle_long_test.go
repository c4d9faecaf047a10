package engine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plload/plload/live"
	"github.com/plload/plload/workload"
)

// TestIdleSessionsMemory is issue 19's memory check, in the PLLOAD_LONG suite: many sessions that
// spend most of their time thinking (60–120 s between short turns), held for a while against the mock
// in a child process. They arrive as a Poisson process over the run's first sixth (arrival_rate, with
// max_concurrency the session count), so a session holds a connection only while its turn streams
// and the pool keeps no more idle ones than the recent peak: the open-files limit needs to cover the
// busy ones, not every session. It passes when the process's resident memory stays within 4 GiB per
// 100,000 sessions (42 KiB each) and its live heap grows over the run's last two thirds by no more
// than the histories do (≤ 1 KiB per request answered).
//
//	PLLOAD_LONG=1 [PLLOAD_IDLE_SESSIONS=100000] [PLLOAD_IDLE_FOR=10m] [PLLOAD_IDLE_THINK=60s-120s] go test ./engine -run IdleSessionsMemory -v -timeout 30m
func TestIdleSessionsMemory(t *testing.T) {
	if os.Getenv("PLLOAD_LONG") != "1" {
		t.Skip("set PLLOAD_LONG=1 to run the idle-sessions memory check (10 minutes)")
	}
	sessions, hold := 100000, 10*time.Minute
	if s := os.Getenv("PLLOAD_IDLE_SESSIONS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("PLLOAD_IDLE_SESSIONS=%q: accepted: a whole number ≥ 1", s)
		}
		sessions = n
	}
	if s := os.Getenv("PLLOAD_IDLE_FOR"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 30*time.Second {
			t.Fatalf("PLLOAD_IDLE_FOR=%q: accepted: a duration of at least 30s", s)
		}
		hold = d
	}
	// 100,000 sessions thinking 20–40 s ask 3,300 times a second, more than two cores carry with
	// the mock beside the client; at 60–120 s they ask 1,100 times.
	thinkMin, thinkMax := "60s", "120s"
	if s := os.Getenv("PLLOAD_IDLE_THINK"); s != "" {
		lo, hi, ok := strings.Cut(s, "-")
		a, errA := time.ParseDuration(lo)
		b, errB := time.ParseDuration(hi)
		if !ok || errA != nil || errB != nil || a < time.Second || b < a {
			t.Fatalf("PLLOAD_IDLE_THINK=%q: accepted: MIN-MAX durations of at least 1s, such as 60s-120s", s)
		}
		thinkMin, thinkMax = lo, hi
	}
	if err := raiseOpenFiles(uint64(sessions) + 2048); err != nil { // the busy connections need far fewer
		t.Logf("%v: only the turns streaming at once hold a connection", err)
	}
	base := childMock(t)
	arrive := hold / 6
	// 30 turns outlast the run (29 think times of 20 s at the least); the pool is the sessions held,
	// not every arrival past max_concurrency, which would wait anyway.
	text := scenarioYAML(base, fmt.Sprintf(`  turns: 30
  user_input_tokens: {min: 20, max: 60}
  max_output_tokens: {min: 8, max: 16}
  think_time: {min: %s, max: %s}`, thinkMin, thinkMax),
		fmt.Sprintf("  mode: arrival_rate\n  drain_timeout: 5s\n  stages:\n    - {sessions_per_sec: %g, max_concurrency: %d, sessions: %d, duration: %s}",
			float64(sessions)/arrive.Seconds(), sessions, sessions, workload.Duration(hold)))
	text = strings.Replace(text, "timeout: 10s", "timeout: 60s", 1)
	rss0 := residentBytes()
	// Per sample: resident memory, the heap the last collection found reachable, and the requests
	// answered (as the progress display counts them).
	// At a third of the run and at its last sample the test collects first, so the live heap is
	// exact, not the last collection's.
	var samples []uint64
	var liveHeap, answered [2]uint64
	progress := live.NewProgress(1)
	n := int(hold / (10 * time.Second))
	stop := every(10*time.Second, func() {
		samples = append(samples, residentBytes())
		if i := len(samples); i == n/3 || i == n {
			runtime.GC()
			snap, _ := progress.Snapshot()
			liveHeap[min(1, i/n)], answered[min(1, i/n)] = liveHeapBytes(), uint64(snap.OK)
		}
		atTwoThirds := len(samples) == int(hold/(10*time.Second))*2/3 // every session has arrived: where the memory is
		if atTwoThirds {
			t.Log(memoryClasses())
		}
		if path := os.Getenv("PLLOAD_IDLE_GOROUTINES"); path != "" && atTwoThirds { // who holds the stacks
			if f, err := os.Create(path); err == nil {
				pprof.Lookup("goroutine").WriteTo(f, 1)
				f.Close()
			}
		}
		if path := os.Getenv("PLLOAD_IDLE_HEAPPROFILE"); path != "" && atTwoThirds {
			if f, err := os.Create(path); err == nil {
				runtime.GC() // the profile is of the last collection: make it now
				pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
	})
	res, _, err := runScenarioConfig(t, context.Background(), text, func(c *Config) { c.Live = progress })
	stop()
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	if len(samples) < 3 {
		t.Fatalf("%d memory samples over %s", len(samples), hold)
	}
	peak := uint64(0)
	for _, s := range samples {
		peak = max(peak, s)
	}
	perSession := float64(peak-min(peak, rss0)) / float64(sessions)
	third, last := samples[len(samples)/3], samples[len(samples)-1]
	// Resident memory also holds garbage up to the collector's goal (GOGC=400, or GOMEMLIMIT), so its
	// growth says more about the collector than about the sessions. What must not grow is the live
	// heap beyond the histories: by design each answered turn adds its question and answer to its
	// session's history (20–60 and 8–16 tokens here, a few hundred bytes with their JSON). So the
	// live heap may grow by at most 1 KiB per request answered over the run's last two thirds: a
	// connection, a record or a turn kept would be more.
	if answered[1] == 0 {
		t.Fatalf("the run ended before its last sample (%d samples)", len(samples))
	}
	answeredSince := float64(answered[1] - answered[0])
	perAnswer := (float64(liveHeap[1]) - float64(liveHeap[0])) / max(1, answeredSince)
	t.Logf("live heap at a third %.0f MiB, at the last sample %.0f MiB: %+.0f bytes per request answered between (%.0f requests)",
		mib(liveHeap[0]), mib(liveHeap[1]), perAnswer, answeredSince)
	t.Logf("%d sessions (%d started; think %s–%s) for %s: %d requests, %d errors, %d cancelled; RSS before %.0f MiB, peak %.0f MiB (%.1f KiB per session), at a third %.0f MiB, at the end %.0f MiB",
		sessions, r.Sessions, thinkMin, thinkMax, hold, r.Records, r.Errors, r.Cancelled, mib(rss0), mib(peak), perSession/1024, mib(third), mib(last))
	if r.Errors > 0 {
		causes := ""
		for _, f := range r.Failures {
			causes += fmt.Sprintf("; %s × %d, first: %s", f.Kind, f.Count, f.First)
		}
		t.Errorf("%d client errors%s", r.Errors, causes)
	}
	if r.Sessions < sessions { // every session arrived and stayed open (30 turns outlast the run)
		t.Errorf("%d sessions started of %d", r.Sessions, sessions)
	}
	if limit := 4.0 * (1 << 30) / 100000; perSession > limit {
		t.Errorf("%.1f KiB per session, over the %.1f KiB that 100,000 sessions in 4 GiB allow", perSession/1024, limit/1024)
	}
	if perAnswer > 1024 {
		t.Errorf("the live heap grew by %.0f bytes per request answered over the run's last two thirds, more than a history's question and answer", perAnswer)
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// memoryClasses says where the Go runtime's memory is: live heap, heap garbage and free space,
// goroutine stacks, and the rest.
func memoryClasses() string {
	names := []string{"/gc/heap/live:bytes", "/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes",
		"/memory/classes/heap/free:bytes", "/memory/classes/heap/stacks:bytes", "/memory/classes/total:bytes", "/sched/goroutines:goroutines"}
	samples := make([]rtmetrics.Sample, len(names))
	for i, n := range names {
		samples[i].Name = n
	}
	rtmetrics.Read(samples)
	var b strings.Builder
	for _, s := range samples {
		if s.Value.Kind() != rtmetrics.KindUint64 {
			continue
		}
		if strings.HasSuffix(s.Name, ":bytes") {
			fmt.Fprintf(&b, "%s %.0f MiB; ", s.Name, mib(s.Value.Uint64()))
		} else {
			fmt.Fprintf(&b, "%s %d; ", s.Name, s.Value.Uint64())
		}
	}
	return b.String()
}

// liveHeapBytes is the heap the last collection found reachable (/gc/heap/live).
func liveHeapBytes() uint64 {
	sample := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(sample)
	if sample[0].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

// residentBytes is this process's resident set (VmRSS), 0 when it cannot be read.
func residentBytes() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(data) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// raiseOpenFiles makes sure this process (and the children it starts after) may open n files.
func raiseOpenFiles(n uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur >= n {
		return nil
	}
	want := syscall.Rlimit{Cur: n, Max: max(lim.Max, n)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		return fmt.Errorf("the open-files limit is %d (hard %d) and could not be raised: %w", lim.Cur, lim.Max, err)
	}
	return nil
}
