package metrics

import "fmt"

// InjectorHealth is how hard the load generator itself worked during a stage. A client that is short
// of CPU or whose goroutines wait to be scheduled delays its own timestamps and sends: then it
// measures itself, not the server.
type InjectorHealth struct {
	// CPUPercent is the process's CPU time ÷ wall time × 100 (200 = two cores busy).
	CPUPercent float64 `json:"cpu_percent"`
	// Cores is GOMAXPROCS, the cores the process could use.
	Cores int `json:"cores"`
	// SchedLatencyP99Ms is the 99th percentile of the time goroutines waited to run after becoming
	// runnable (runtime/metrics /sched/latencies:seconds), over the stage.
	SchedLatencyP99Ms float64 `json:"sched_latency_p99_ms"`
	// ReadLagP99Ms is the 99th percentile of how long after bytes arrived plload's poller read them
	// (probed every 10 ms in each of its loops), over the stage: how late a chunk's timestamp can be
	// because of the client. Absent when the stage's answers were not read by the poller (https://
	// targets, PLLOAD_HTTP_CLIENT set); then SchedLatencyP99Ms stands in for it.
	ReadLagP99Ms Opt[float64] `json:"read_lag_p99_ms,omitzero"`
	// GCPauseTotalMs is the stop-the-world GC pause time during the stage.
	GCPauseTotalMs float64 `json:"gc_pause_total_ms"`
	// RunQueueWaitPercent is the time the process's threads spent runnable but waiting for a CPU
	// (Linux schedstat, summed over threads) ÷ wall time × 100: 150 is 1.5 threads waiting at a time,
	// on average, so it is not bounded by 100. It sees what SchedLatencyP99Ms
	// cannot: other processes taking the cores. Absent where the kernel does not report it.
	RunQueueWaitPercent Opt[float64] `json:"run_queue_wait_percent,omitzero"`
	// StealPercent is the share of the machine's CPU time the hypervisor gave to other guests while
	// its cores were ready to run (Linux /proc/stat steal; top's "st"), × 100. The whole machine
	// stops for those slices, so it is the one cause the process's own figures cannot see. Absent
	// where the kernel does not report it.
	StealPercent Opt[float64] `json:"steal_percent,omitzero"`
}

// InjectorLateEvents is how many scheduling delays one measurement can suffer: a TTFT spans the
// send and the first read, a chunk gap two reads, a request's cycle its send, reads and the next
// send; 3 of them, each at most the p99 scheduling latency for nearly every request, bound how
// late a strained client's measurement can read (the gate and plload search use it).
const InjectorLateEvents = 3

// Thresholds of the injector warnings.
const (
	InjectorCPUWarnShare  = 0.8 // of the cores the process may use
	InjectorSchedWarnMs   = 1.0 // scheduler latency p99
	InjectorGCPauseWarnMs = 100 // total stop-the-world pause per stage
	// InjectorRunQueueWarnPercent: measured on a 2-core VM, a calm client waited 7–14 % of the wall
	// time (up to both cores busy with its own work); with three busy loops beside it, 20–27 %.
	InjectorRunQueueWarnPercent = 15
)

// TimestampLagMs is how late the client may have stamped chunks, at p99: the poller's read lag when
// it read the stage's answers, else the scheduler latency that stands in for it.
func (h InjectorHealth) TimestampLagMs() float64 {
	if h.ReadLagP99Ms.OK {
		return h.ReadLagP99Ms.V
	}
	return h.SchedLatencyP99Ms
}

// Warnings says when the injector may have been the bottleneck.
func (h InjectorHealth) Warnings() []string {
	var out []string
	for _, s := range h.strains() {
		out = append(out, s.text)
	}
	return out
}

// Cause is the one warning a line that names a single cause of the strain shows: of the causes —
// the client's own CPU, its threads waiting for a CPU other processes took, GC pauses — the one
// furthest over its threshold; the timestamp lag (read lag, scheduler latency) only when it stands
// alone, since it is what those causes make. "" when there is no warning.
func (h InjectorHealth) Cause() string {
	best, bestOver, lag := "", 0.0, ""
	for _, s := range h.strains() {
		switch {
		case s.effect:
			lag = s.text
		case s.over > bestOver:
			best, bestOver = s.text, s.over
		}
	}
	if best == "" {
		return lag
	}
	return best
}

// strain is one warning: its text, how far over its threshold the signal is (value ÷ threshold), and
// whether it is an effect of the others (the timestamp lag) rather than a cause.
type strain struct {
	text   string
	over   float64
	effect bool
}

func (h InjectorHealth) strains() []strain {
	var out []strain
	if cpuWarn := InjectorCPUWarnShare * 100 * float64(h.Cores); h.Cores > 0 && h.CPUPercent > cpuWarn {
		out = append(out, strain{text: fmt.Sprintf("injector CPU busy: %.0f %% of %d %% (%d cores; over %.0f %%): the client may be the bottleneck; its timestamps can be late", h.CPUPercent, 100*h.Cores, h.Cores, cpuWarn),
			over: h.CPUPercent / cpuWarn})
	}
	switch {
	case h.ReadLagP99Ms.OK && h.ReadLagP99Ms.V > InjectorSchedWarnMs:
		out = append(out, strain{text: fmt.Sprintf("injector read lag p99 %.2f ms (> %.0f ms): the client read bytes that late after they arrived, so chunk timestamps may be late by about that much", h.ReadLagP99Ms.V, InjectorSchedWarnMs),
			over: h.ReadLagP99Ms.V / InjectorSchedWarnMs, effect: true})
	case !h.ReadLagP99Ms.OK && h.SchedLatencyP99Ms > InjectorSchedWarnMs:
		out = append(out, strain{text: fmt.Sprintf("injector scheduler latency p99 %.2f ms (> %.0f ms): goroutines waited to run, so chunk timestamps may be late by about that much", h.SchedLatencyP99Ms, InjectorSchedWarnMs),
			over: h.SchedLatencyP99Ms / InjectorSchedWarnMs, effect: true})
	}
	if h.RunQueueWaitPercent.OK && h.RunQueueWaitPercent.V > InjectorRunQueueWarnPercent {
		// The wait is summed over the process's threads, so as a share of wall time it passes 100 %
		// when more than one waits at once: say it as the threads waiting at a time, on average.
		out = append(out, strain{text: fmt.Sprintf("injector threads waited for a CPU: %.2f threads at a time on average were ready to run with no core free (over %.2f): other processes were taking the cores, so timestamps may be late; run the client on a quieter machine",
			ThreadsWaiting(h.RunQueueWaitPercent.V), ThreadsWaiting(InjectorRunQueueWarnPercent)),
			over: h.RunQueueWaitPercent.V / InjectorRunQueueWarnPercent})
	}
	if h.GCPauseTotalMs > InjectorGCPauseWarnMs {
		out = append(out, strain{text: fmt.Sprintf("injector GC paused %.0f ms in total (> %d ms)", h.GCPauseTotalMs, InjectorGCPauseWarnMs),
			over: h.GCPauseTotalMs / InjectorGCPauseWarnMs})
	}
	return out
}

// ThreadsWaiting is a run-queue wait (RunQueueWaitPercent: the time threads were ready to run with
// no core free, summed over threads, ÷ wall time × 100) as the threads waiting at a time, on
// average: 150 is 1.5. Summed over threads, the wait passes 100 % as a share of the time whenever
// more than one thread waits at once, so it is always said this way.
func ThreadsWaiting(percent float64) float64 { return percent / 100 }

// ThreadsWaitingText is a run-queue wait in words, for lines that list the client's state:
// "threads waiting for a CPU: 0.62 at a time on average".
func ThreadsWaitingText(percent float64) string {
	return fmt.Sprintf("threads waiting for a CPU: %.2f at a time on average", ThreadsWaiting(percent))
}

// StolenText is a steal share (StealPercent) in words: "CPU stolen by the VM host: 4.2 %".
func StolenText(percent float64) string {
	return fmt.Sprintf("CPU stolen by the VM host: %.1f %% of the machine's time", percent)
}
