package deploy

import "math"

// Per-stream costs, from bench/README.md (engine rows; 2-core KVM box, mock in a child process):
//   - CPU: "engine: client CPU per streamed chunk ... 1,000 concurrent chat sessions": 29.0 µs of
//     user+system CPU per streamed chunk (38 µs with the progress display and a Prometheus scrape
//     watching). A stream receives one chunk per token, so a stream costs TokensPerSec × 29 µs per
//     second while it streams; sizing counts every stream as streaming all the time (think time
//     only lowers it).
//   - Memory: 24 KiB live heap and 28 KiB goroutine stacks per open session, but the engine runs at
//     GOGC 400, where "heap per session reads 250–335 KiB" (heap in use, garbage included): 384 KiB
//     per stream covers the 335 KiB and the stacks. The soak (500 sessions for 10 min) held a flat
//     RSS of 270 MiB, under the 128 MiB + 500 × 384 KiB = 316 MiB this gives. A session thinking
//     between turns holds no connection and a small stack: 100,000 of them (arrival_rate, 60–120 s
//     think, 10 minutes) peaked at 27.1 KiB each, garbage included (bench/README.md, "Third pass");
//     48 KiB per thinking session leaves room for longer histories than those 20–60-token turns.
const (
	memPerThinkingBytes = 48 << 10
	cpuPerChunkSec      = 29.0e-6
	memPerStreamBytes   = 384 << 10
	baseMemBytes        = 128 << 20 // the process: dataset, record writer's buffers, report
	baseCPUMillicores   = 100       // per-stage and per-second work (probes, records, progress)
	cpuHeadroomFactor   = 2         // see SizeShard
	memLimitMultiplier  = 2
)

// Resources is one shard's request (and memory limit), in Kubernetes' units.
type Resources struct {
	CPUMillicores int64 // request; no CPU limit (see SizeShard)
	MemoryMiB     int64 // request
	MemoryLimMiB  int64 // limit
}

// CPUs is the request in whole CPUs, rounded up (Slurm's --cpus-per-task).
func (r Resources) CPUs() int64 { return (r.CPUMillicores + 999) / 1000 }

// SizeShard sizes a shard holding streams at tps tokens per second each, among sessions open
// sessions (the rest of them thinking: memory, no CPU).
//
// CPU is requested at twice the measured cost: the self-test saw the client's timing break (client
// delay p99 past 1 ms) from about a third of its CPU busy, and a client that is the bottleneck lies
// about the server, so a shard should run at half its request or less. No CPU limit is set: CFS
// throttling would stall a shard for whole periods (100 ms), exactly the client-side delay plload
// must not add. Memory has a limit of twice the request, so one shard's leak cannot take the node,
// with room for GOGC 400's garbage.
func SizeShard(streams, sessions int, tps float64) Resources {
	cpu := float64(streams) * tps * cpuPerChunkSec * cpuHeadroomFactor
	thinking := int64(max(0, sessions-streams))
	r := Resources{
		CPUMillicores: baseCPUMillicores + int64(math.Ceil(cpu*1000)),
		MemoryMiB:     int64(math.Ceil(float64(baseMemBytes+int64(streams)*memPerStreamBytes+thinking*memPerThinkingBytes) / (1 << 20))),
	}
	r.MemoryLimMiB = r.MemoryMiB * memLimitMultiplier
	return r
}
