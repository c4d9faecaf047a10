package lockstep

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// errOtherSideStopped ends a side's run because the other side's stopped: not a failure of its own.
var errOtherSideStopped = errors.New("the other target stopped")

// startBarrier lines the targets' stages up: a stage starts when every running side has reached it,
// at one instant for all (engine.Config.StageStart, the hook sharded runs use), so each stage's
// window is the same on both sides.
type startBarrier struct {
	mu      sync.Mutex
	parties int
	gates   map[int]*stageGate
	failed  error // a side stopped early: no further stage starts
}

// stageGate is one stage's meeting point: how many sides reached it, the start it was given (zero
// until it opens) and the channel closed when it opens.
type stageGate struct {
	arrived int
	at      time.Time
	open    chan struct{}
}

// startLead is how far ahead of the last arrival a stage's start is set: both engines must be
// waiting for it, not yet waking, when it comes.
const startLead = 20 * time.Millisecond

func newStartBarrier(parties int) *startBarrier {
	return &startBarrier{parties: parties, gates: map[int]*stageGate{}}
}

// wait is called by each side before each stage; it returns the stage's start once every running
// side has arrived, or an error when a side stopped early or ctx ended.
func (b *startBarrier) wait(ctx context.Context, stage int) (time.Time, error) {
	b.mu.Lock()
	if b.failed != nil {
		b.mu.Unlock()
		return time.Time{}, b.failed
	}
	g := b.gates[stage]
	if g == nil {
		g = &stageGate{open: make(chan struct{})}
		b.gates[stage] = g
	}
	g.arrived++
	b.openReady()
	b.mu.Unlock()
	select {
	case <-g.open:
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if g.at.IsZero() {
		return time.Time{}, b.failed
	}
	return g.at, nil
}

// leave is called as a side's run ends; err (a side that did not finish) closes every later gate.
func (b *startBarrier) leave(name string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.parties--
	if err != nil && b.failed == nil {
		b.failed = fmt.Errorf("%w: target %s stopped (%v), so the A/B is over", errOtherSideStopped, name, err)
		for _, g := range b.gates {
			if g.at.IsZero() {
				close(g.open)
				g.arrived = -1 << 30 // never opened again by openReady
			}
		}
	}
	b.openReady()
}

// openReady opens the gates every running side has reached (b.mu held).
func (b *startBarrier) openReady() {
	for _, g := range b.gates {
		if g.at.IsZero() && g.arrived >= b.parties && g.arrived > 0 {
			g.at = time.Now().Add(startLead)
			close(g.open)
		}
	}
}
