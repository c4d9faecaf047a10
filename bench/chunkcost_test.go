package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/workload"
)

// Client CPU per streamed chunk (issue 19): plload against a bare net/http loop that only POSTs,
// reads the SSE lines and counts content chunks, side by side against one mock in its own process
// (TTFT 200 ms, a chunk every 20 ms, 64 chunks). Each client runs in a child process of its own (this
// test binary re-executed), and reports its whole-process CPU (getrusage) over the streaming phase
// and the content chunks it received; the benchmark prints both figures per chunk and their ratio.
//
//	PLLOAD_CHUNKCOST=1 go test ./bench -run '^$' -bench ChunkCost -benchtime 1x -count 3
const (
	chunkCostMockEnv   = "PLLOAD_BENCH_MOCK_CHILD=chunks"
	chunkCostClientEnv = "PLLOAD_BENCH_CLIENT" // bare, rawconn, epoll, plload or plload-nethttp; its settings follow in the env below
	chunkCostChunks    = 64
)

// chunkCostResult is what a client child prints: CPU over its streaming phase and chunks received.
type chunkCostResult struct {
	CPUNs  int64 `json:"cpu_ns"`
	Chunks int64 `json:"chunks"`
	Errors int64 `json:"errors"`
	// Switches are the process's context switches (voluntary and not), whole life.
	Switches int64 `json:"switches"`
}

// chunkCostChild runs the client named by PLLOAD_BENCH_CLIENT (a child's TestMain calls it) and
// prints its result; the exit code is non-zero when it could not run.
func chunkCostChild(kind string) int {
	base := os.Getenv("PLLOAD_BENCH_BASE")
	streams, _ := strconv.Atoi(os.Getenv("PLLOAD_BENCH_STREAMS"))
	span, err := time.ParseDuration(os.Getenv("PLLOAD_BENCH_SPAN"))
	if base == "" || streams < 1 || err != nil {
		fmt.Fprintln(os.Stderr, "chunk-cost child: PLLOAD_BENCH_BASE, PLLOAD_BENCH_STREAMS and PLLOAD_BENCH_SPAN are required")
		return 2
	}
	if path := os.Getenv("PLLOAD_BENCH_CPUPROFILE"); path != "" { // PATH.<client>: a profile of each client, for go tool pprof
		f, err := os.Create(path + "." + kind)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if path := os.Getenv("PLLOAD_BENCH_TRACE"); path != "" { // PATH.<client>: an execution trace, for go tool trace (-pprof=sched: who waited for a P)
		f, err := os.Create(path + "." + kind)
		if err == nil && trace.Start(f) == nil {
			defer trace.Stop()
		}
	}
	if path := os.Getenv("PLLOAD_BENCH_MEMPROFILE"); path != "" { // PATH.<client>: every allocation's site, for go tool pprof -sample_index=alloc_space
		runtime.MemProfileRate = 512
		defer writeAllocProfile(path + "." + kind)
	}
	var res chunkCostResult
	switch kind {
	case "bare":
		res = bareLoop(base, streams, span)
	case "rawconn":
		res = rawConnLoop(base, streams, span)
	case "epoll":
		res = epollLoop(base, streams, span)
	case "plload", "plload-nethttp": // the second with net/http as its client, as before issue 19
		if res, err = plloadLoop(base, streams, span); err != nil {
			fmt.Fprintln(os.Stderr, "chunk-cost child:", err)
			return 1
		}
	default:
		fmt.Fprintf(os.Stderr, "chunk-cost child: %s=%q; accepted: bare, rawconn, epoll, plload, plload-nethttp\n", chunkCostClientEnv, kind)
		return 2
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		res.Switches = ru.Nvcsw + ru.Nivcsw // the whole process's: a wake-up is a switch, and on a VM a costly one
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	return 0
}

// writeAllocProfile writes the allocations profile to path; a failure only loses the profile.
func writeAllocProfile(path string) {
	runtime.GC() // the profile holds what was allocated up to the last completed collection
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chunk-cost child:", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		fmt.Fprintln(os.Stderr, "chunk-cost child:", err)
	}
}

// bareBody is the bare loop's request: one short user message, 64 tokens exactly, streamed.
var bareBody = []byte(`{"model":"m","messages":[{"role":"user","content":"Tell me about the weather in Lisbon in the spring, in a few words."}],"max_tokens":64,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)

// loops runs stream on streams goroutines until span has passed and returns the process CPU over
// it with the content chunks they counted; stream returns at its first error.
func loops(streams int, span time.Duration, stream func(deadline time.Time, chunks *atomic.Int64) error) chunkCostResult {
	var chunks, errs atomic.Int64
	deadline := time.Now().Add(span)
	cpu0 := engine.ProcessCPU()
	var wg sync.WaitGroup
	for range streams {
		wg.Go(func() {
			if stream(deadline, &chunks) != nil {
				errs.Add(1)
			}
		})
	}
	wg.Wait()
	return chunkCostResult{CPUNs: int64(engine.ProcessCPU() - cpu0), Chunks: chunks.Load(), Errors: errs.Load()}
}

// isContentLine says whether an SSE line is a chunk with content, as the bare loops count them.
func isContentLine(line []byte) bool {
	return bytes.HasPrefix(line, []byte("data: {")) && bytes.Contains(line, []byte(`"content":"`)) && !bytes.Contains(line, []byte(`"content":""`))
}

// bareLoop is the floor: streams goroutines, each POSTing back to back for span and counting the
// content chunks of each answer, with nothing timed, decoded or recorded.
func bareLoop(base string, streams int, span time.Duration) chunkCostResult {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true}}
	return loops(streams, span, func(deadline time.Time, chunks *atomic.Int64) error {
		for time.Now().Before(deadline) {
			n, err := bareRequest(client, base+"/chat/completions")
			chunks.Add(n)
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func bareRequest(client *http.Client, url string) (int64, error) {
	resp, err := client.Post(url, "application/json", bytes.NewReader(bareBody))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var n int64
	for {
		line, err := br.ReadSlice('\n')
		if isContentLine(line) {
			n++
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// chunkCostScenario is the same traffic from plload: single-turn sessions back to back (no think
// time), a short persona and user message, 64 tokens exactly; records written as in any run.
const chunkCostScenario = `name: chunkcost
seed: 1
target: {base_url: %s, model: m, timeout: 30s}
personas: {count: 1, system_prompt_tokens: 10}
session: {turns: 1, user_input_tokens: 15, max_output_tokens: 64, think_time: 0s}
load:
  mode: concurrency
  drain_timeout: 10s
  stages:
    - {concurrency: %d, duration: %s}
`

// plloadLoop runs the engine on chunkCostScenario; its CPU covers the whole run (the stage's setup,
// every request, the records).
func plloadLoop(base string, streams int, span time.Duration) (chunkCostResult, error) {
	text := fmt.Sprintf(chunkCostScenario, base, streams, workload.Duration(span))
	sc, issues := workload.Parse("chunkcost.yaml", []byte(text), workload.LoadOptions{ForRun: true})
	if err := issues.Err(); err != nil {
		return chunkCostResult{}, err
	}
	w, err := sc.Build()
	if err != nil {
		return chunkCostResult{}, err
	}
	dir, err := os.MkdirTemp("", "chunkcost-")
	if err != nil {
		return chunkCostResult{}, err
	}
	defer os.RemoveAll(dir)
	cpu0 := engine.ProcessCPU()
	res, err := engine.Run(context.Background(), engine.Config{Scenario: sc, Workload: w, Dir: dir})
	cpu := engine.ProcessCPU() - cpu0
	if err != nil {
		return chunkCostResult{}, err
	}
	r := res[0]
	return chunkCostResult{CPUNs: int64(cpu), Chunks: int64(r.OutTokens), Errors: int64(r.Errors + r.Cancelled)}, nil
}

// runChunkClient runs one client child against base and returns its result.
func runChunkClient(b *testing.B, kind, base string, streams int, span time.Duration) chunkCostResult {
	return runChunkClientOf(b, os.Args[0], kind, base, streams, span)
}

// runChunkClientOf runs the client child of the benchmark binary bin (this one, or the previous
// release's) against base.
func runChunkClientOf(b *testing.B, bin, kind, base string, streams int, span time.Duration) chunkCostResult {
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), chunkCostClientEnv+"="+kind, "PLLOAD_BENCH_BASE="+base,
		"PLLOAD_BENCH_STREAMS="+strconv.Itoa(streams), "PLLOAD_BENCH_SPAN="+span.String(), engine.HTTPClientEnv+"=")
	if kind == "plload-nethttp" {
		cmd.Env = append(cmd.Env, engine.HTTPClientEnv+"=net/http")
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s client at %d streams: %v", kind, streams, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res chunkCostResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		b.Fatalf("%s client at %d streams printed %q: %v", kind, streams, out, err)
	}
	if res.Chunks == 0 || res.Errors > 0 {
		b.Fatalf("%s client at %d streams: %d chunks, %d errors", kind, streams, res.Chunks, res.Errors)
	}
	return res
}

// BenchmarkChunkCost: per stream count, the bare net/http loop, the raw-connection loop, plload,
// plload on net/http (PLLOAD_HTTP_CLIENT=net/http, its client before issue 19) and the epoll floor
// (epollLoop: the raw loop read as plload's poller reads), each for 10 s against the same mock: µs
// of client CPU per content chunk for each, and plload's ratio to the bare loop; with
// PLLOAD_BENCH_PREVIOUS, the previous release's plload in the same round too.
func BenchmarkChunkCost(b *testing.B) {
	if os.Getenv("PLLOAD_CHUNKCOST") != "1" {
		b.Skip("set PLLOAD_CHUNKCOST=1 to run the CPU-per-chunk comparison (about 100 s per count)")
	}
	base := childMockEnv(b, chunkCostMockEnv)
	// PLLOAD_BENCH_PREVIOUS: the bench test binary of the previous release (git worktree add OLD
	// <commit> && go test -c -o OLD.test ./bench in it), whose plload runs in the same rounds.
	previous := os.Getenv("PLLOAD_BENCH_PREVIOUS")
	const span = 10 * time.Second
	for _, streams := range []int{1, 256, 512} {
		b.Run(fmt.Sprintf("streams_%d", streams), func(b *testing.B) {
			for b.Loop() {
				bare := runChunkClient(b, "bare", base, streams, span)
				raw := runChunkClient(b, "rawconn", base, streams, span)
				pl := runChunkClient(b, "plload", base, streams, span)
				plNet := runChunkClient(b, "plload-nethttp", base, streams, span)
				ep := runChunkClient(b, "epoll", base, streams, span)
				b.ReportMetric(float64(ep.CPUNs)/float64(ep.Chunks)/1000, "µs-CPU/chunk-epoll")
				perChunk := func(r chunkCostResult) float64 { return float64(r.CPUNs) / float64(r.Chunks) / 1000 }
				b.ReportMetric(perChunk(pl), "µs-CPU/chunk-plload")
				b.ReportMetric(perChunk(plNet), "µs-CPU/chunk-plload-nethttp")
				b.ReportMetric(perChunk(bare), "µs-CPU/chunk-bare")
				b.ReportMetric(perChunk(raw), "µs-CPU/chunk-rawconn")
				b.ReportMetric(perChunk(pl)/perChunk(bare), "plload/bare")
				if previous != "" {
					prev := runChunkClientOf(b, previous, "plload", base, streams, span)
					b.ReportMetric(perChunk(prev), "µs-CPU/chunk-previous")
					b.ReportMetric(perChunk(prev)/perChunk(bare), "previous/bare")
				}
				b.ReportMetric(float64(pl.Chunks), "chunks-plload")
				b.ReportMetric(float64(bare.Chunks), "chunks-bare")
			}
		})
	}
}

// rawConnLoop is the bare loop without net/http: HTTP/1.1 written and read by hand on one kept-alive
// connection per stream (chunked framing skipped, content lines counted), for what net/http costs.
func rawConnLoop(base string, streams int, span time.Duration) chunkCostResult {
	u, _ := url.Parse(base)
	req := fmt.Appendf(nil, "POST %s/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", u.Path, u.Host, len(bareBody), bareBody)
	return loops(streams, span, func(deadline time.Time, chunks *atomic.Int64) error {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			return err
		}
		defer c.Close()
		br := bufio.NewReaderSize(c, 16<<10)
		for time.Now().Before(deadline) {
			if _, err := c.Write(req); err != nil {
				return err
			}
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if isContentLine(line) {
					chunks.Add(1)
				}
				if bytes.HasPrefix(line, []byte("data: [DONE]")) {
					break
				}
			}
			// the rest of the answer: the blank line, the chunk's CRLF, "0" and the final CRLF
			for range 4 {
				if _, err := br.ReadSlice('\n'); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
