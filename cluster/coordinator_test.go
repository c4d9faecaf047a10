package cluster

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/timingtier"
	"github.com/plload/plload/workload"
)

const testSHA = "0000000000000000000000000000000000000000000000000000000000000000"

// startCoordinator starts a coordinator on a free loopback port and returns it with its outcome.
func startCoordinator(t *testing.T, o ServeOptions) (*Coordinator, context.CancelFunc) {
	t.Helper()
	if o.Listen == "" && o.Listener == nil {
		o.Listen = "127.0.0.1:0"
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := Start(ctx, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); c.Wait() })
	return c, cancel
}

// joinAll joins n members concurrently (Join waits for all) and returns them in index order.
func joinAll(t *testing.T, addr string, n int, token string, timeout time.Duration) []*Member {
	t.Helper()
	ms := make([]*Member, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ms[i], errs[i] = Join(context.Background(), JoinOptions{Addr: addr, Token: token,
				Shard: workload.Shard{Index: i, Count: n}, ScenarioSHA: testSHA, Timeout: timeout})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	return ms
}

// stageStarts calls StageStart on every member at once and returns the local instants.
func stageStarts(ms []*Member, stage int) ([]time.Time, []error) {
	starts := make([]time.Time, len(ms))
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() { starts[i], errs[i] = m.StageStart(context.Background(), stage) })
	}
	wg.Wait()
	return starts, errs
}

func TestMembersAgreeOnStageStarts(t *testing.T) {
	const n = 4
	c, _ := startCoordinator(t, ServeOptions{Shards: n, JoinTimeout: 30 * time.Second})
	ms := joinAll(t, c.Addr(), n, "", 30*time.Second)
	judge := timingtier.Judge(t, "each offset's uncertainty ≤ 50 ms; the shards' starts within 5 ms")
	for _, m := range ms {
		off, unc := m.Offset()
		// One process, one clock: the offset is ~0, within its uncertainty plus scheduling noise.
		if abs(off) > unc+int64(5*time.Millisecond) || judge && unc > int64(50*time.Millisecond) {
			t.Errorf("offset %d ns ± %d ns in one process; want ~0", off, unc)
		}
	}
	for stage := range 3 {
		starts, errs := stageStarts(ms, stage)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("stage %d shard %d: %v", stage, i, err)
			}
		}
		for i, s := range starts[1:] {
			if d := s.Sub(starts[0]); d.Abs() > startSpread(judge, ms[0], ms[i+1]) {
				t.Errorf("stage %d: shard %d starts %v after shard 0 (offsets ± %v)", stage, i+1, d, uncertainties(ms))
			}
		}
		if time.Until(starts[0]) < -time.Second || time.Until(starts[0]) > time.Second {
			t.Errorf("stage %d starts %v from now; want within the margin", stage, time.Until(starts[0]))
		}
	}
	for _, m := range ms {
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("coordinator after every shard finished: %v", err)
	}
}

// startSpread bounds how far apart two shards in one process start a stage: each converts the
// coordinator's instant with its measured offset, whose error is within its uncertainty (half the
// best round's RTT), so they start within the sum of the two, plus scheduling noise. A busy machine
// widens the rounds' RTT and with it the uncertainty; the 5 ms is the timing tier's claim.
func startSpread(judge bool, a, b *Member) time.Duration {
	_, ua := a.Offset()
	_, ub := b.Offset()
	if judge {
		return 5 * time.Millisecond
	}
	return time.Duration(ua+ub) + 5*time.Millisecond
}

// uncertainties lists the members' offset uncertainties, for a failure's message.
func uncertainties(ms []*Member) []time.Duration {
	var out []time.Duration
	for _, m := range ms {
		_, u := m.Offset()
		out = append(out, time.Duration(u))
	}
	return out
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func TestSkewedClockIsMeasured(t *testing.T) {
	const skew = 7 * time.Second
	const n = 2
	c, _ := startCoordinator(t, ServeOptions{Shards: n, JoinTimeout: 30 * time.Second,
		Clock: func() int64 { return time.Now().UnixNano() + int64(skew) }})
	ms := joinAll(t, c.Addr(), n, "", 30*time.Second)
	for i, m := range ms {
		off, unc := m.Offset()
		// The coordinator read its clock inside the round, so the true offset lies within ±unc; the
		// microsecond covers the arithmetic's rounding.
		if d := abs(off - int64(skew)); d > unc+int64(time.Microsecond) {
			t.Errorf("shard %d: offset %d ns ± %d ns; want %d within the uncertainty (off by %d ns)", i, off, unc, int64(skew), d)
		}
	}
	starts, errs := stageStarts(ms, 0)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	// The start is converted to the local clock: about the margin from now, not 7 s away.
	if u := time.Until(starts[0]); u < -time.Second || u > time.Second {
		t.Errorf("the stage starts %v from now on the local clock; want within the 200 ms margin", u)
	}
	if d := starts[1].Sub(starts[0]); d.Abs() > startSpread(timingtier.Judge(t, "the shards' starts within 5 ms"), ms[0], ms[1]) {
		t.Errorf("shard 1 starts %v after shard 0 (offsets ± %v)", d, uncertainties(ms))
	}
}

// rawJoin registers a shard with one POST (Join itself would wait for the others).
func rawJoin(t *testing.T, addr, token string, req joinRequest) {
	t.Helper()
	m := &Member{opts: JoinOptions{Addr: addr, Token: token}, url: "http://" + addr, client: &http.Client{}}
	if err := m.post(context.Background(), pathJoin, req, nil, 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestRefusedShards(t *testing.T) {
	const token = "s3cret-token"
	var logs lockedBuffer
	c, _ := startCoordinator(t, ServeOptions{Shards: 4, Token: token, JoinTimeout: time.Minute, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	rawJoin(t, c.Addr(), token, joinRequest{Index: 0, Count: 4, ScenarioSHA: testSHA})
	otherSHA := strings.Repeat("1", 64)
	for _, tc := range []struct {
		name   string
		token  string
		shard  workload.Shard
		sha    string
		status int
		want   string
	}{
		{"no token", "", workload.Shard{Index: 1, Count: 4}, testSHA, http.StatusUnauthorized, "requires a shared secret and the request carried none"},
		{"wrong token", "guess", workload.Shard{Index: 1, Count: 4}, testSHA, http.StatusForbidden, "token does not match"},
		{"other scenario", token, workload.Shard{Index: 1, Count: 4}, otherSHA, http.StatusConflict, "runs scenario sha256 " + otherSHA + " but shard 0 joined with " + testSHA},
		{"index taken", token, workload.Shard{Index: 0, Count: 4}, testSHA, http.StatusConflict, "shard index 0 has already joined"},
		{"other count", token, workload.Shard{Index: 1, Count: 3}, testSHA, http.StatusConflict, "shard 1/3 joined a coordinator of 4 shards; accepted: --shard INDEX/4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Join(context.Background(), JoinOptions{Addr: c.Addr(), Token: tc.token, Shard: tc.shard, ScenarioSHA: tc.sha, Timeout: 10 * time.Second})
			if err == nil {
				m.Close()
				t.Fatal("joined; want a refusal")
			}
			var re *RefusedError
			if !errors.As(err, &re) || re.Status != tc.status || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v (status %d); want HTTP %d saying %q", err, statusOf(re), tc.status, tc.want)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
	if l := logs.String(); strings.Contains(l, token) || !strings.Contains(l, "shard refused") {
		t.Errorf("the coordinator's log shows the token, or not the refusals:\n%s", l)
	}
}

// lockedBuffer is a log sink the handlers and the test may use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestServeEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ServeOptions{Listen: "127.0.0.1:0", Shards: 2, JoinTimeout: time.Hour}) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Serve after cancel: %v; want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not end within 30 s of its context")
	}
}

func statusOf(re *RefusedError) int {
	if re == nil {
		return 0
	}
	return re.Status
}

func TestBeyondLoopbackNeedsToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "example.com:7070"} {
		_, err := Start(context.Background(), ServeOptions{Listen: addr, Shards: 2})
		if err == nil || !strings.Contains(err.Error(), "requires a shared secret") {
			t.Errorf("--listen %s without a token: %v; want a refusal before binding", addr, err)
		}
	}
	got := map[string]bool{}
	for _, addr := range []string{"127.0.0.1:7070", "[::1]:7070", "localhost:7070", "0.0.0.0:7070", ":7070", "10.0.0.1:7070", "7070"} {
		got[addr] = IsLoopback(addr)
	}
	want := map[string]bool{"127.0.0.1:7070": true, "[::1]:7070": true, "localhost:7070": true, "0.0.0.0:7070": false, ":7070": false, "10.0.0.1:7070": false, "7070": false}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("IsLoopback (-want +got):\n%s", d)
	}
}

func TestJoinTimeoutNamesMissing(t *testing.T) {
	const n = 3
	c, _ := startCoordinator(t, ServeOptions{Shards: n, JoinTimeout: 1500 * time.Millisecond})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for _, i := range []int{0, 2} { // shard 1 never comes
		wg.Go(func() {
			_, errs[i] = Join(context.Background(), JoinOptions{Addr: c.Addr(), Shard: workload.Shard{Index: i, Count: n}, ScenarioSHA: testSHA, Timeout: 1500 * time.Millisecond})
		})
	}
	wg.Wait()
	for _, i := range []int{0, 2} {
		var re *RefusedError
		if !errors.As(errs[i], &re) || !cmp.Equal(re.Missing, []int{1}) || !strings.Contains(re.Message, "shard(s) 1 of 3 did not join within 1.5s") {
			t.Errorf("shard %d: %v; want the coordinator's answer naming shard 1", i, errs[i])
		}
	}
	var be *BarrierError
	if err := c.Wait(); !errors.As(err, &be) || !cmp.Equal(be.Missing, []int{1}) || be.Stage != joinStage {
		t.Errorf("coordinator: %v; want a join failure naming shard 1", err)
	}
}

// TestMissedBarrierLosesShard: once the run has started, a shard that misses a barrier by the bound
// is lost and the others run on; the run ends naming it, and a late arrival is refused.
func TestMissedBarrierLosesShard(t *testing.T) {
	const n, bound = 3, 2 * time.Second
	c, _ := startCoordinator(t, ServeOptions{Shards: n, JoinTimeout: bound})
	ms := joinAll(t, c.Addr(), n, "", time.Minute)
	begin := time.Now()
	_, errs := stageStarts(ms[:2], 1) // shard 2 never reaches stage 1
	took := time.Since(begin)
	for i, err := range errs {
		if err != nil {
			t.Errorf("shard %d: %v; want stage 1 to start without shard 2", i, err)
		}
		if got := ms[i].Lost(); !cmp.Equal(got, []int{2}) {
			t.Errorf("shard %d: Lost() = %v; want [2]", i, got)
		}
	}
	// The coordinator's bound, plus the slack of a loaded box; never the shard's own 5 s later.
	if took > bound+4*time.Second {
		t.Errorf("the barrier opened after %v; want about %v", took, bound)
	}
	if _, err := ms[2].StageStart(context.Background(), 1); err == nil || !strings.Contains(err.Error(), "given it up") {
		t.Errorf("the lost shard's late arrival: %v; want a refusal saying it was given up", err)
	}
	ms[0].Close()
	ms[1].Close()
	var le *LostError
	if err := c.Wait(); !errors.As(err, &le) || !cmp.Equal(le.Lost, map[int]int{2: joinStage}) || !strings.Contains(err.Error(), "did not reach stage 1's barrier within 2s") {
		t.Errorf("coordinator: %v; want shard 2 lost before the first stage, having missed stage 1's barrier", err)
	}
}

// TestDroppedShardIsLost: a shard whose connection drops (its process died) is lost at once — the
// others' next barrier opens long before the bound — and the run ends naming it and its stage.
func TestDroppedShardIsLost(t *testing.T) {
	const n = 3
	var log lockedBuffer
	c, _ := startCoordinator(t, ServeOptions{Shards: n, JoinTimeout: time.Minute, Log: slog.New(slog.NewTextHandler(&log, nil))})
	ms := joinAll(t, c.Addr(), n, "", time.Minute)
	if _, errs := stageStarts(ms, 1); errors.Join(errs...) != nil {
		t.Fatal(errors.Join(errs...))
	}
	ms[1].release() // what the kernel does to a killed process's sockets: no leave, the line drops
	live := []*Member{ms[0], ms[2]}
	begin := time.Now()
	_, errs := stageStarts(live, 2)
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("stage 2: %v; want the barrier open without shard 1 (%s)", err, log.String())
	}
	if took := time.Since(begin); took > 20*time.Second {
		t.Errorf("stage 2's barrier opened after %v; want at once, not at the minute's bound", took)
	}
	for _, m := range live {
		if got := m.Lost(); !cmp.Equal(got, []int{1}) {
			t.Errorf("shard %s: Lost() = %v; want [1]", m.opts.Shard, got)
		}
	}
	ms[0].Close()
	ms[2].Close()
	var le *LostError
	if err := c.Wait(); !errors.As(err, &le) || !cmp.Equal(le.Lost, map[int]int{1: 1}) || !strings.Contains(err.Error(), "shard 1 lost during stage 1: its connection to the coordinator dropped") {
		t.Errorf("coordinator: %v; want shard 1 lost during stage 1", err)
	}
	if !strings.Contains(log.String(), "shard lost") || !strings.Contains(log.String(), "index=1 stage=1") {
		t.Errorf("the coordinator's log does not name the lost shard and stage:\n%s", log.String())
	}
}

func TestFinishedShardFailsLaterBarrier(t *testing.T) {
	const n = 2
	c, _ := startCoordinator(t, ServeOptions{Shards: n, JoinTimeout: time.Minute})
	ms := joinAll(t, c.Addr(), n, "", time.Minute)
	if err := ms[1].Close(); err != nil {
		t.Fatal(err)
	}
	// Shard 1 has finished: waiting a minute for it would be pointless.
	_, err := ms[0].StageStart(context.Background(), 0)
	var re *RefusedError
	if !errors.As(err, &re) || !cmp.Equal(re.Missing, []int{1}) || !strings.Contains(err.Error(), "finished and will not arrive") {
		t.Errorf("%v; want an immediate failure naming shard 1", err)
	}
}

func TestUnfinishedShardNamed(t *testing.T) {
	const n = 3
	c, _ := startCoordinator(t, ServeOptions{Shards: n, JoinTimeout: 2 * time.Second})
	ms := joinAll(t, c.Addr(), n, "", 2*time.Second)
	ms[0].Close()
	ms[2].Close()
	var be *BarrierError
	if err := c.Wait(); !errors.As(err, &be) || !cmp.Equal(be.Missing, []int{1}) || !strings.Contains(err.Error(), "did not finish") {
		t.Errorf("coordinator: %v; want shard 1 named as unfinished", err)
	}
}

func TestScenarioSHA(t *testing.T) {
	load := func() *workload.Scenario {
		sc, issues := workload.Load("../scenarios/smoke.yaml", workload.LoadOptions{})
		if err := issues.Err(); err != nil {
			t.Fatal(err)
		}
		return sc
	}
	sum := func(sc *workload.Scenario) string {
		s, err := ScenarioSHA(sc)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := sum(load())
	out := load()
	out.Output.Dir = "/elsewhere/shard-3"
	if got := sum(out); got != base {
		t.Errorf("output.dir changed the sum: %s vs %s", got, base)
	}
	if out.Output.Dir != "/elsewhere/shard-3" {
		t.Errorf("ScenarioSHA changed the scenario's output.dir to %q", out.Output.Dir)
	}
	seed := load()
	seed.Seed++
	if got := sum(seed); got == base {
		t.Errorf("another seed gave the same sum %s", got)
	}
}

// TestJoinWaitsForALateCoordinator: a shard that starts before its coordinator (pods start in any
// order) keeps trying to reach it, and joins once it listens; with none at all it gives up at the
// join timeout, saying it could not reach it.
func TestJoinWaitsForALateCoordinator(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	// Until the coordinator starts, the port takes the shard's first try and drops it unanswered, as
	// a coordinator's pod that is not up yet does; then nothing listens (refused) until it starts.
	tried := make(chan struct{})
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
		ln.Close()
		close(tried)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	joined := make(chan error, 1)
	go func() {
		m, err := Join(ctx, JoinOptions{Addr: addr, Shard: workload.Shard{Index: 0, Count: 1}, ScenarioSHA: "abc", Timeout: 10 * time.Second})
		if err == nil {
			m.Close()
		}
		joined <- err
	}()
	select { // the coordinator starts late on purpose: after the shard's first try failed
	case <-tried:
	case <-time.After(10 * time.Second):
		t.Fatal("the shard never tried to reach the coordinator's address")
	}
	c, err := Start(ctx, ServeOptions{Listen: addr, Shards: 1, JoinTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-joined; err != nil {
		t.Fatalf("a shard that started first did not join the late coordinator: %v", err)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Join(ctx, JoinOptions{Addr: addr, Shard: workload.Shard{Index: 0, Count: 1}, ScenarioSHA: "abc", Timeout: 700 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "connect") || time.Since(start) > 5*time.Second {
		t.Errorf("no coordinator at all: %v after %v", err, time.Since(start))
	}
}
