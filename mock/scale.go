package mock

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// A scaling mock (Config.ScaleMaxConcurrency, ScaleAfter) models an autoscaler that adds capacity, or
// a cold start that finishes, at a known moment: a test of plload's time to absorb a rising load
// knows exactly when the server caught up. The slots are one buffered channel of max(N, M) tokens;
// while the mock has N of them open, the other M − N are held by tokens put in at start, and the
// scale takes them out (a queued request is admitted by each one taken). A scale down puts N − M
// tokens in: at once for the slots free then, and for the others the running request that ends
// leaves its own token in (Server.closing), so that no new request takes a slot that is closing.

// scaleClock is when the slots change: ScaleAfter after the first completion request.
type scaleClock struct {
	started atomic.Bool // the first request came: the fast path of every later one
	mu      sync.Mutex
	at      time.Time
	timer   *time.Timer
	stopped bool
	done    atomic.Bool // the slots have changed (rescale ran): its timer fires at, and runs soon after
}

// newSlots is the slot channel for cfg (nil: unlimited), with the slots not yet open held.
func newSlots(cfg Config) chan struct{} {
	if cfg.MaxConcurrency <= 0 {
		return nil
	}
	slots := make(chan struct{}, max(cfg.MaxConcurrency, cfg.ScaleMaxConcurrency))
	if cfg.Scales() {
		for range cfg.ScaleMaxConcurrency - cfg.MaxConcurrency {
			slots <- struct{}{}
		}
	}
	return slots
}

// startScaleClock starts the clock at the first completion request's arrival.
func (s *Server) startScaleClock(arrival time.Time) {
	if !s.cfg.Scales() || s.scale.started.Load() {
		return
	}
	c := &s.scale
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started.Load() || c.stopped {
		return
	}
	c.at = arrival.Add(s.cfg.ScaleAfter)
	c.timer = time.AfterFunc(time.Until(c.at), s.rescale)
	c.started.Store(true)
}

// ScaleAt is when the slots go from MaxConcurrency to ScaleMaxConcurrency: ScaleAfter after the
// first completion request; zero before it, or when the mock does not scale.
func (s *Server) ScaleAt() time.Time {
	s.scale.mu.Lock()
	defer s.scale.mu.Unlock()
	return s.scale.at
}

// rescale opens (or closes) the slots that change.
func (s *Server) rescale() {
	n, m := s.cfg.MaxConcurrency, s.cfg.ScaleMaxConcurrency
	for range m - n {
		<-s.slots // never blocks: the held tokens are in the channel
	}
	for range n - m {
		select {
		case s.slots <- struct{}{}: // a free slot closes at once
		default: // all busy: the next running request to end gives its slot up (release)
			s.closing.Add(1)
		}
	}
	s.scale.done.Store(true)
	slog.Info("mock: request slots scaled", "from", n, "to", m)
}

// Scaled reports whether the slots have changed: after ScaleAt, once the change has been made (a
// loaded machine may run the timer's function a moment after its time).
func (s *Server) Scaled() bool { return s.scale.done.Load() }

// stopScaleClock cancels a scale that has not happened (the server is stopping).
func (s *Server) stopScaleClock() {
	c := &s.scale
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.timer != nil {
		c.timer.Stop()
	}
}
