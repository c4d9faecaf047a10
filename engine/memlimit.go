package engine

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

// The engine runs at GOGC=400 (fewer collections, less jitter), which lets garbage grow to four times
// the live heap. On a machine or a container with little memory to spare, that headroom is what
// gets the process killed: a Kubernetes pod sized for the live heap is OOM-killed at its limit,
// where GOGC=100 would have fit. A soft memory limit keeps the GOGC=400 behaviour while memory is
// plentiful and makes the collector work harder only near the limit.

// tuning counts the Runs in progress: the first sets the runtime up, the last puts back what it
// found (plload ab runs two at once; each restoring its own would leave the other's settings).
var tuning struct {
	sync.Mutex
	runs    int
	restore func()
}

// tuneRuntime sets GOGC=400 and the soft memory limit while any Run is in progress. Fewer GC
// cycles, less client jitter: a collection's assist work and pauses land on the goroutines
// timestamping chunks (measured by the self-test at 100 streams: scheduler latency p99 10.5 ms with
// the default GOGC=100, 1.6 ms with 400). A user's own GOGC wins. The returned func ends this Run's
// hold; it may be called once.
func tuneRuntime() (release func()) {
	tuning.Lock()
	defer tuning.Unlock()
	if tuning.runs == 0 {
		restoreGC := func() {}
		if os.Getenv("GOGC") == "" {
			prev := debug.SetGCPercent(400)
			restoreGC = func() { debug.SetGCPercent(prev) }
		}
		restoreMem := setMemoryLimit() // GOGC=400's headroom, but never past the machine's or the pod's memory
		tuning.restore = func() { restoreMem(); restoreGC() }
	}
	tuning.runs++
	return sync.OnceFunc(func() {
		tuning.Lock()
		defer tuning.Unlock()
		if tuning.runs--; tuning.runs == 0 {
			tuning.restore()
		}
	})
}

// memoryLimitShare is the share of the machine's (or the container's) memory the Go heap may reach
// before the collector works harder: the rest is for the kernel's socket buffers, the page cache of
// the records and the runtime's own.
const memoryLimitShare = 0.8

// setMemoryLimit sets the soft memory limit from the container's limit (cgroup v2 memory.max, v1
// memory.limit_in_bytes) or else the machine's memory, unless GOMEMLIMIT is set; it returns a func
// that restores the previous limit.
func setMemoryLimit() (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := memoryLimit(readSmall)
	if limit <= 0 {
		return func() {}
	}
	prev := debug.SetMemoryLimit(int64(float64(limit) * memoryLimitShare))
	return func() { debug.SetMemoryLimit(prev) }
}

// memoryLimit is the memory this process may use, in bytes: the smallest of the cgroup limits and
// the machine's MemTotal; 0 when none can be read.
func memoryLimit(read func(string) []byte) int64 {
	var limit int64
	take := func(n int64) {
		if n > 0 && (limit == 0 || n < limit) {
			limit = n
		}
	}
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		// "max" (v2) or a huge number (v1's "no limit") leave the machine's memory as the bound.
		if n, err := strconv.ParseInt(strings.TrimSpace(string(read(path))), 10, 64); err == nil && n < 1<<60 {
			take(n)
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(read("/proc/meminfo")))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			if kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64); err == nil {
				take(kb << 10)
			}
		}
	}
	return limit
}

// readSmall reads a small system file; nil when it cannot.
func readSmall(path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return data
}
