package mock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"
)

// The capacity benchmark runs the mock in a child process (this test binary, re-executed with
// PLLOAD_MOCK_CHILD=1 and GOMAXPROCS=1), so the mock gets one core and does not share a Go runtime
// with the client that loads it.
func TestMain(m *testing.M) {
	if os.Getenv("PLLOAD_MOCK_CHILD") == "1" {
		os.Exit(childMock())
	}
	os.Exit(m.Run())
}

func childMock() int {
	cfg := DefaultConfig()
	cfg.TTFT, cfg.TPS = 200*time.Millisecond, 50 // 20 ms between chunks
	cfg.BusyPoll = os.Getenv("PLLOAD_MOCK_BUSY_POLL") == "1"
	if path := os.Getenv("PLLOAD_MOCK_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	return ServeAsChild(cfg)
}

// capacityStep loads a fresh one-core mock with n concurrent streams of 100 tokens, started at
// uniform offsets over one second, and returns the mock's send lateness over the step.
func capacityStep(b *testing.B, n int, busyPoll bool) LatenessStats {
	env := []string{"PLLOAD_MOCK_CHILD=1", "GOMAXPROCS=1"}
	if busyPoll {
		env = append(env, "PLLOAD_MOCK_BUSY_POLL=1")
	}
	base, stop, err := StartChild(env...)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, DisableCompression: true}}
	var wg sync.WaitGroup
	failures := make(chan error, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(n))))
			body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"stream %d"}],"stream":true,"max_tokens":100}`, i)
			resp, err := client.Post(base+"/chat/completions", "application/json", bytes.NewReader([]byte(body)))
			if err != nil {
				failures <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	wg.Wait()
	close(failures)
	for err := range failures {
		b.Fatalf("%d streams: %v", n, err)
	}
	resp, err := http.Get(strings.TrimSuffix(base, "/v1") + "/mock/stats")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var st LatenessStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		b.Fatal(err)
	}
	if st.Chunks != int64(n)*100 {
		b.Fatalf("%d streams: the mock sent %d chunks, want %d", n, st.Chunks, n*100)
	}
	return st
}

// BenchmarkMockCapacity finds the most concurrent streams a one-core mock serves at TTFT 200 ms and
// 20 ms between chunks with send lateness p99 ≤ 2 ms, with plain timers and with BusyPoll. Run it once:
//
//	go test ./mock -run '^$' -bench MockCapacity -benchtime 1x
func BenchmarkMockCapacity(b *testing.B) {
	b.Run("timers", func(b *testing.B) { capacityLadder(b, false) })
	b.Run("busy-poll", func(b *testing.B) { capacityLadder(b, true) })
}

func capacityLadder(b *testing.B, busyPoll bool) {
	for b.Loop() {
		best := 0
		for _, n := range []int{125, 250, 500, 750, 1000, 1500, 2000, 3000, 4000} {
			st := capacityStep(b, n, busyPoll)
			ok := st.P99Ms <= 2
			b.Logf("%5d streams: send lateness p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms  %v", n, st.P50Ms, st.P99Ms, st.P999Ms, st.MaxMs, map[bool]string{true: "ok", false: "over 2 ms"}[ok])
			if !ok {
				break
			}
			best = n
		}
		b.ReportMetric(float64(best), "streams@p99≤2ms")
	}
}
