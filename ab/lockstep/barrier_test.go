package lockstep

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

type arrival struct {
	at  time.Time
	err error
}

// arrive calls b.wait from its own goroutine, as a side's engine does.
func arrive(ctx context.Context, b *startBarrier, stage int) <-chan arrival {
	out := make(chan arrival, 1)
	go func() {
		at, err := b.wait(ctx, stage)
		out <- arrival{at, err}
	}()
	return out
}

// await is the side's answer, or a failed test when none comes.
func await(t *testing.T, ch <-chan arrival) arrival {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("the barrier never answered")
		return arrival{}
	}
}

// TestBarrierStartsAStageWhenBothSidesArrive: a side alone waits; once both have arrived both get
// one start, set ahead of the last arrival, and the next stage gets a later one.
func TestBarrierStartsAStageWhenBothSidesArrive(t *testing.T) {
	b := newStartBarrier(2)
	alone, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.wait(alone, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a side alone at stage 0: %v; want it to wait until its context ends", err)
	}
	ctx := context.Background()
	var last time.Time
	for stage := 1; stage <= 3; stage++ {
		before := time.Now()
		a := arrive(ctx, b, stage)
		atB, errB := b.wait(ctx, stage)
		atA := await(t, a)
		if atA.err != nil || errB != nil {
			t.Fatalf("stage %d: A %v, B %v", stage, atA.err, errB)
		}
		if !atA.at.Equal(atB) {
			t.Errorf("stage %d starts at %v for A, %v for B: want one instant", stage, atA.at, atB)
		}
		if atB.Before(before.Add(startLead)) || !atB.After(last) {
			t.Errorf("stage %d starts at %v: want at least %v after %v, later than the stage before (%v)", stage, atB, startLead, before, last)
		}
		last = atB
	}
}

// TestBarrierSideThatFailsReleasesTheOther: a side whose run stopped with an error leaves; the side
// waiting at the next stage is released with an error saying the other stopped, and no later stage
// starts.
func TestBarrierSideThatFailsReleasesTheOther(t *testing.T) {
	b := newStartBarrier(2)
	ctx := context.Background()
	a := arrive(ctx, b, 1)
	if _, err := b.wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if r := await(t, a); r.err != nil {
		t.Fatal(r.err)
	}
	a = arrive(ctx, b, 2)
	b.leave("B", errors.New("stage 01 failed: the target stopped answering"))
	r := await(t, a)
	if !errors.Is(r.err, errOtherSideStopped) || !r.at.IsZero() ||
		!strings.Contains(r.err.Error(), "target B stopped (stage 01 failed: the target stopped answering), so the A/B is over") {
		t.Fatalf("A at stage 2 after B failed: %v, %v; want released with the other side's stop", r.at, r.err)
	}
	if _, err := b.wait(ctx, 3); !errors.Is(err, errOtherSideStopped) {
		t.Errorf("a later stage: %v; want refused at once", err)
	}
}

// TestBarrierSideThatFinishedLetsTheOtherGoOn: a side that ran every stage leaves without an error;
// the other is no longer waited for.
func TestBarrierSideThatFinishedLetsTheOtherGoOn(t *testing.T) {
	b := newStartBarrier(2)
	a := arrive(context.Background(), b, 1)
	b.leave("B", nil)
	if r := await(t, a); r.err != nil || r.at.IsZero() {
		t.Fatalf("A after B finished: %v, %v; want a start", r.at, r.err)
	}
}

// TestBarrierCancelledContext: a side waiting when its context ends returns the context's error,
// and so does one that arrives with it already ended.
func TestBarrierCancelledContext(t *testing.T) {
	b := newStartBarrier(2)
	ctx, cancel := context.WithCancel(context.Background())
	a := arrive(ctx, b, 1)
	cancel()
	if r := await(t, a); !errors.Is(r.err, context.Canceled) || !r.at.IsZero() {
		t.Fatalf("waiting when cancelled: %v, %v; want context.Canceled", r.at, r.err)
	}
	if _, err := newStartBarrier(2).wait(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("arriving cancelled: %v; want context.Canceled", err)
	}
}
