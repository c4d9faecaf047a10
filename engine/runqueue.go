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

// cpuTicks reads the machine's CPU time from /proc/stat's "cpu" line, summed over cores, in USER_HZ
// ticks: all of it, and the part the hypervisor stole (gave to other guests while these cores were
// ready to run). On a shared VM host the whole machine stops for those slices, so a client whose own
// CPU, run-queue wait and Go scheduler latency all look calm still stamps chunks late: none of those
// sees it. ok is false where the kernel does not report steal.
func cpuTicks() (total, steal uint64, ok bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	// cpu user nice system idle iowait irq softirq steal [guest guest_nice, already in user and nice]
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:9] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += v
		if i == 7 {
			steal = v
		}
	}
	return total, steal, true
}

// stealPercentSince is the share of the machine's CPU time stolen since before (what top shows as
// "st"); ok is false where either reading failed or no tick passed.
func stealPercentSince(beforeTotal, beforeSteal uint64) (float64, bool) {
	total, steal, ok := cpuTicks()
	if !ok || total <= beforeTotal || steal < beforeSteal {
		return 0, false
	}
	return 100 * float64(steal-beforeSteal) / float64(total-beforeTotal), true
}
