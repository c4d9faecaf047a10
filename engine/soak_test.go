package engine

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plload/plload/workload"
)

// TestSoak runs 500 sessions for 10 minutes against a mock in another process and samples the
// client's RSS, goroutines and open files every 10 s; after the first minute they must stay flat
// (see soakGrowth for the bounds). It is a measurement, not a CI test:
//
//	PLLOAD_SOAK=1 go test ./engine -run Soak -v -count 1 -timeout 20m
func TestSoak(t *testing.T) {
	if os.Getenv("PLLOAD_SOAK") != "1" {
		t.Skip("set PLLOAD_SOAK=1 for the 10-minute soak")
	}
	minutes := 10.0
	if s := os.Getenv("PLLOAD_SOAK_MINUTES"); s != "" {
		minutes, _ = strconv.ParseFloat(s, 64)
	}
	base := childMock(t)
	duration := time.Duration(minutes * float64(time.Minute))
	text := scenarioYAML(base, chatSessions, fmt.Sprintf("  mode: concurrency\n  drain_timeout: 10s\n  stages:\n    - {concurrency: 500, warmup: 30s, duration: %s}", workload.Duration(duration-30*time.Second)))
	sc, issues := workload.Parse("soak.yaml", []byte(text), workload.LoadOptions{Getenv: testEnv})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	w, err := sc.Build()
	if err != nil {
		t.Fatal(err)
	}
	var samples []soakSample
	start := time.Now()
	stopSampling := every(10*time.Second, func() {
		fds, _ := os.ReadDir("/proc/self/fd")
		samples = append(samples, soakSample{time.Since(start), rssKiB(), runtime.NumGoroutine(), len(fds)})
	})
	res, err := Run(context.Background(), Config{Scenario: sc, Workload: w, Dir: t.TempDir(), Getenv: testEnv})
	stopSampling()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		t.Logf("%6.0f s: RSS %d KiB, %d goroutines, %d open files", s.at.Seconds(), s.rssKiB, s.goroutines, s.openFiles)
	}
	t.Logf("%d requests, %d errors, %d cancelled", res[0].Records, res[0].Errors, res[0].Cancelled)
	summary, problems := soakGrowth(samples)
	t.Log(summary)
	for _, p := range problems {
		t.Error(p)
	}
}

type soakSample struct {
	at                 time.Duration
	rssKiB, goroutines int
	openFiles          int
}

// Bounds of the soak. The first minute is warmup and the sessions' first growth (history, pools,
// buffers) and is not judged. After it, the RSS at the end (the median of the last three samples, so
// one GC cycle's sawtooth does not decide) may exceed the RSS at the first minute (the median of the
// three samples from 1 minute on) by at most soakRSSGrowthShare of it plus soakRSSGrowthSlackKiB: the
// engine runs at GOGC 400, whose heap swings by tens of MiB between collections; a leak of one
// session's history per request (84,626 requests) grows it by hundreds of MiB. Goroutines and open
// files may grow by the sessions that are between turns, not more.
const (
	soakRSSGrowthShare    = 0.10
	soakRSSGrowthSlackKiB = 16 << 10
	soakGoroutineSwing    = 200
	soakOpenFileSwing     = 50
)

// soakGrowth judges the samples: a summary line, and one problem per bound broken. No sample after the
// first minute (a soak shorter than that) is a problem too: a soak that measured nothing must not pass.
func soakGrowth(samples []soakSample) (string, []string) {
	var after []soakSample
	for _, s := range samples {
		if s.at >= time.Minute {
			after = append(after, s)
		}
	}
	if len(after) < 2 {
		return "", []string{fmt.Sprintf("%d samples after the first minute, need 2: run the soak for 2 minutes or more (PLLOAD_SOAK_MINUTES)", len(after))}
	}
	k := min(3, len(after)/2)
	median := func(s []soakSample, of func(soakSample) int) int {
		v := make([]int, len(s))
		for i, x := range s {
			v[i] = of(x)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	type measure struct {
		name        string
		of          func(soakSample) int
		first, last int
	}
	ms := []measure{
		{name: "RSS (KiB)", of: func(s soakSample) int { return s.rssKiB }},
		{name: "goroutines", of: func(s soakSample) int { return s.goroutines }},
		{name: "open files", of: func(s soakSample) int { return s.openFiles }},
	}
	for i := range ms {
		ms[i].first, ms[i].last = median(after[:k], ms[i].of), median(after[len(after)-k:], ms[i].of)
	}
	rss, gor, fds := ms[0], ms[1], ms[2]
	limit := rss.first + int(soakRSSGrowthShare*float64(rss.first)) + soakRSSGrowthSlackKiB
	summary := fmt.Sprintf("from the first minute to the end: RSS %d → %d KiB (limit %d KiB), goroutines %d → %d, open files %d → %d",
		rss.first, rss.last, limit, gor.first, gor.last, fds.first, fds.last)
	var problems []string
	if rss.last > limit {
		problems = append(problems, fmt.Sprintf("RSS grew from %d KiB at the first minute to %d KiB at the end, over %d KiB (+%.0f %% + %d MiB): a leak",
			rss.first, rss.last, limit, soakRSSGrowthShare*100, soakRSSGrowthSlackKiB>>10))
	}
	// A fall is no leak: idle keep-alive connections (2 goroutines and a file each) close after the
	// transport's 90 s idle timeout, which a 2-minute soak sees after its first minute.
	if gor.last > gor.first+soakGoroutineSwing {
		problems = append(problems, fmt.Sprintf("goroutines grew from %d to %d after the first minute (allowed %d more)", gor.first, gor.last, soakGoroutineSwing))
	}
	if fds.last > fds.first+soakOpenFileSwing {
		problems = append(problems, fmt.Sprintf("open files grew from %d to %d after the first minute (allowed %d more)", fds.first, fds.last, soakOpenFileSwing))
	}
	return summary, problems
}

// TestSoakGrowth holds the soak's judgement to what it must catch: it runs always (no soak needed).
func TestSoakGrowth(t *testing.T) {
	series := func(rss func(i int) int) []soakSample {
		var out []soakSample
		for i := 0; i <= 60; i++ { // 10 minutes every 10 s
			out = append(out, soakSample{at: time.Duration(i) * 10 * time.Second, rssKiB: rss(i), goroutines: 1000 + i%3*30, openFiles: 260 + i%2*20})
		}
		return out
	}
	cases := []struct {
		name    string
		samples []soakSample
		want    int // problems
	}{
		// The measured soak: 269.7–271.1 MiB after the first minute, GOGC 400 sawtooth.
		{"flat with a sawtooth", series(func(i int) int { return 276000 + i%4*1500 }), 0},
		{"first-minute growth is not judged", series(func(i int) int { return min(i, 6)*40000 + 40000 }), 0},
		// 6 MiB a minute: ~52 MiB over the 9 judged minutes, over the limit of 10 % + 16 MiB (≈ 43 MiB).
		{"a slow leak", series(func(i int) int { return 276000 + i*1024 }), 1},
		{"a fast leak", series(func(i int) int { return 276000 + i*10240 }), 1},
		// One high sample at the end is a GC cycle, not a leak: the median of the last three decides.
		{"one spike at the end", series(func(i int) int {
			if i == 60 {
				return 400000
			}
			return 276000
		}), 0},
		{"too short to judge", series(func(int) int { return 1 })[:7], 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			summary, problems := soakGrowth(c.samples)
			if len(problems) != c.want {
				t.Errorf("%d problems, want %d: %q (%s)", len(problems), c.want, problems, summary)
			}
		})
	}
	// Goroutines and open files that climb are caught too.
	climb := series(func(int) int { return 276000 })
	for i := range climb {
		climb[i].goroutines += 10 * i
		climb[i].openFiles += 2 * i
	}
	if _, problems := soakGrowth(climb); len(problems) != 2 {
		t.Errorf("climbing goroutines and open files: %q", problems)
	}
	// Measured in a 2-minute soak: idle connections closed at 100 s, 1,506 → 1,048 goroutines and
	// 516 → 287 open files. A fall is not a leak.
	fall := series(func(int) int { return 276000 })
	for i := range fall {
		if i >= 10 {
			fall[i].goroutines, fall[i].openFiles = 1048, 287
		} else {
			fall[i].goroutines, fall[i].openFiles = 1506, 516
		}
	}
	if _, problems := soakGrowth(fall); len(problems) != 0 {
		t.Errorf("falling goroutines and open files: %q", problems)
	}
}

func rssKiB() int {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}
