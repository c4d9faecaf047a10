package cluster

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
	for _, m := range ms {
		off, unc := m.Offset()
		// One process, one clock: the offset is ~0, within its uncertainty plus scheduling noise.
		if abs(off) > unc+int64(5*time.Millisecond) || unc > int64(50*time.Millisecond) {
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
			if d := s.Sub(starts[0]); d.Abs() > 5*time.Millisecond {
				t.Errorf("stage %d: shard %d starts %v after shard 0", stage, i+1, d)
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

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

var _ = cmp.Diff
var _ = errors.As
var _ = strings.Contains
var _ = net.Listen
