package engine

import (
	"runtime"
	"runtime/metrics"
	"syscall"
	"time"

	"github.com/plload/plload/engine/h1client"
	plmetrics "github.com/plload/plload/metrics"
)

// healthProbe measures the process over a stage: CPU time, scheduler latency, the poller's read lag,
// GC pauses, and the machine's CPU time a hypervisor took.
type healthProbe struct {
	wall    time.Time
	cpu     time.Duration
	sched   []uint64
	buckets []float64
	pauseNs uint64
	waits   map[string]uint64 // run-queue wait per thread at the start
	// the machine's CPU ticks, all and stolen, at the start (stealOK: read)
	ticks, stolen uint64
	stealOK       bool
	// lag is the poller's read lag over the stage, when its transport has a poller.
	lag *h1client.ReadLag
}

const schedMetric = "/sched/latencies:seconds"

// ProcessCPU is the user+system CPU time this process has used so far.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func readSched() ([]uint64, []float64) {
	s := []metrics.Sample{{Name: schedMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil, nil
	}
	h := s[0].Value.Float64Histogram()
	return append([]uint64(nil), h.Counts...), h.Buckets
}

// startProbe starts measuring; pl is the poller that reads the stage's answers (nil: none).
func startProbe(pl *h1client.Poller) *healthProbe {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p := &healthProbe{wall: time.Now(), cpu: ProcessCPU(), pauseNs: ms.PauseTotalNs}
	p.sched, p.buckets = readSched()
	p.waits = runQueueWait()
	p.ticks, p.stolen, p.stealOK = cpuTicks()
	if pl != nil {
		p.lag = pl.MeasureReadLag()
	}
	return p
}

// finish returns the health over the time since startProbe.
func (p *healthProbe) finish() plmetrics.InjectorHealth {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h := plmetrics.InjectorHealth{Cores: runtime.GOMAXPROCS(0), GCPauseTotalMs: float64(ms.PauseTotalNs-p.pauseNs) / 1e6}
	if p.lag != nil {
		p.lag.Stop()
		if ms, ok := p.lag.P99Ms(); ok {
			h.ReadLagP99Ms = plmetrics.Some(ms)
		}
	}
	if wall := time.Since(p.wall); wall > 0 {
		h.CPUPercent = 100 * float64(ProcessCPU()-p.cpu) / float64(wall)
		if ns, ok := runQueueWaitSince(p.waits); ok {
			h.RunQueueWaitPercent = plmetrics.Some(100 * float64(ns) / float64(wall))
		}
		if st, ok := stealPercentSince(p.ticks, p.stolen); ok && p.stealOK {
			h.StealPercent = plmetrics.Some(st)
		}
	}
	after, buckets := readSched()
	if len(after) == len(p.sched) && len(after) > 0 {
		var total uint64
		delta := make([]uint64, len(after))
		for i := range after {
			delta[i] = after[i] - p.sched[i]
			total += delta[i]
		}
		if total > 0 {
			want := uint64(float64(total)*0.99 + 0.5)
			var seen uint64
			for i, c := range delta {
				seen += c
				if seen >= want {
					// The bucket's upper bound: a conservative p99.
					h.SchedLatencyP99Ms = buckets[min(i+1, len(buckets)-1)] * 1000
					break
				}
			}
		}
	}
	return h
}
