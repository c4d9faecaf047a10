package metrics

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets BenchmarkSummarize1M run the summary in a child process (this test binary with
// PLLOAD_SUMMARIZE=path), so its peak RSS is the summary's alone.
func TestMain(m *testing.M) {
	if path := os.Getenv("PLLOAD_SUMMARIZE"); path != "" {
		if prof := os.Getenv("PLLOAD_CPUPROFILE"); prof != "" {
			f, _ := os.Create(prof)
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
		start := time.Now()
		in := StageInput{Warmup: time.Second, Duration: time.Hour, NeverStarted: -1}
		sum, err := SummarizeFile(path, in, false)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		fmt.Printf("%d %d %d\n", time.Since(start).Nanoseconds(), ru.Maxrss, sum.Requests.Succeeded)
		pprof.StopCPUProfile()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// writeRecords writes n successful records of 64 chunks each, 1,000 sessions, 10 requests a second.
func writeRecords(tb testing.TB, path string, n int) {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := sampleRecord()
	r.InterChunkLatency = make([]float64, 63)
	r.OutputSequenceLength = Some(64)
	buf := make([]byte, 0, 4096)
	for i := range n {
		start := int64(1_800_000_000_000_000_000) + int64(i)*100_000_000
		for k := range r.InterChunkLatency {
			r.InterChunkLatency[k] = 20 + float64((i+k)%97)/10
		}
		r.SessionNum, r.CreditIssuedNs, r.RequestStartNs = i, start, start
		r.RequestEndNs = Some(start + 1_500_000_000)
		r.XCorrelationID = fmt.Sprintf("session-%d", i%1000)
		buf = r.AppendJSON(buf[:0])
		buf = append(buf, '\n')
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
}

// BenchmarkSummarize1M: the whole stage computation over 1,000,000 records of 64 chunks (two passes:
// t0 is read from the file), in a child process. Run it on purpose:
//
//	go test ./metrics -run '^$' -bench Summarize1M -benchtime 1x
func BenchmarkSummarize1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "profile_export.jsonl")
	writeRecords(b, path, 1_000_000)
	st, _ := os.Stat(path)
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "PLLOAD_SUMMARIZE="+path)
		out, err := cmd.Output()
		if err != nil {
			b.Fatal(err, string(out))
		}
		var ns, rssKiB, n int64
		if _, err := fmt.Sscan(strings.TrimSpace(string(out)), &ns, &rssKiB, &n); err != nil || n == 0 {
			b.Fatalf("child said %q", out)
		}
		b.ReportMetric(float64(ns)/1e9, "s")
		b.ReportMetric(float64(rssKiB)/1024, "MiB-peak-RSS")
		b.ReportMetric(float64(st.Size())/(1<<20), "MiB-file")
	}
}
