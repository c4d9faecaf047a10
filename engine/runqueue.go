package engine

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// runQueueWait returns, per thread of this process, the nanoseconds it has spent runnable but
// waiting for a CPU (the second field of Linux's /proc/self/task/TID/schedstat). Go's scheduler
// latency cannot see this: when other processes take the cores, a goroutine the runtime thinks is
// running is not, and the timestamps it takes are late all the same. nil where the kernel does not
// expose it.
func runQueueWait() map[string]uint64 {
	paths, err := filepath.Glob("/proc/self/task/*/schedstat")
	if err != nil || len(paths) == 0 {
		return nil
	}
	out := make(map[string]uint64, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue // the thread exited between the glob and the read
		}
		fields := strings.Fields(string(data))
		if len(fields) < 2 {
			continue
		}
		if wait, err := strconv.ParseUint(fields[1], 10, 64); err == nil {
			out[filepath.Base(filepath.Dir(p))] = wait
		}
	}
	return out
}

// runQueueWaitSince sums the wait added since before. Threads born since count from zero; threads
// that exited take their wait with them, so this can only undercount.
func runQueueWaitSince(before map[string]uint64) (ns uint64, ok bool) {
	if before == nil {
		return 0, false
	}
	after := runQueueWait()
	if after == nil {
		return 0, false
	}
	for tid, w := range after {
		if w >= before[tid] {
			ns += w - before[tid]
		}
	}
	return ns, true
}
