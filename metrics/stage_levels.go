package metrics

import (
	"slices"
	"sort"
	"time"
)

// Levels over time: how many sessions, or requests, were open at once during the window.

// levels sweeps intervals clipped to [w, eff) and returns the time-weighted mean of how many are
// open at once, and the lowest and highest level held for at least minHold ≥ 1 ns (the level at w
// counts however briefly it is held). An interval is open from its start (inclusive) to its end. A
// level between two changes at one instant is held for no time and never counts, so a handover (one
// ends as the next starts) is not two open, in whatever order the sort leaves the two changes.
func levels(ivs []interval, w, eff, minHold int64) (mean float64, lo, hi int) {
	if eff <= w {
		return 0, 0, 0
	}
	type change struct {
		at    int64
		delta int
	}
	changes := make([]change, 0, 2*len(ivs))
	open := 0
	for _, iv := range ivs {
		start, end := max(iv.start, w), min(iv.end, eff)
		if end <= start {
			continue
		}
		if start == w {
			open++
		} else {
			changes = append(changes, change{start, +1})
		}
		if end < eff {
			changes = append(changes, change{end, -1})
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].at < changes[j].at })
	area, prev, seen := 0.0, w, false
	hold := func(level int, d int64) {
		if d < minHold && seen {
			return
		}
		if !seen || level < lo {
			lo = level
		}
		if !seen || level > hi {
			hi = level
		}
		seen = true
	}
	for _, c := range changes {
		area += float64(open) * float64(c.at-prev)
		hold(open, c.at-prev)
		prev = c.at
		open += c.delta
	}
	area += float64(open) * float64(eff-prev)
	hold(open, eff-prev)
	return area / float64(eff-w), lo, hi
}

// activeSessions is the time-weighted mean, and the min and max, of open sessions over [W, E_eff).
// The min and max ignore levels held for under a millisecond: in concurrency mode a slot's next
// session starts microseconds after the last one ended, and that dip is not a real one.
func (s *Stage) activeSessions() {
	ivs := make([]interval, 0, len(s.sessions))
	for _, iv := range s.sessions {
		ivs = append(ivs, *iv)
	}
	a := &s.s.Active
	a.Mean, a.Min, a.Max = levels(ivs, s.w, s.s.Window.EEffNs, int64(time.Millisecond))
}

// inFlightLevels is the time-weighted mean and the max of requests in flight (request_start to
// request_end) over [W, E_eff). The max is of levels held for any time at all (two requests at once
// for a microsecond were two in flight); a level only rises at a start, so it is read after each
// instant that has one, its ends taken first (a handover is not two).
func (s *Stage) inFlightLevels() {
	w, eff := s.w, s.s.Window.EEffNs
	if eff <= w {
		return
	}
	f := &s.s.InFlight
	f.Mean = float64(s.flightArea) / float64(eff-w)
	starts, ends := s.flightStarts, s.flightEnds
	slices.Sort(starts)
	slices.Sort(ends)
	open, j := 0, 0
	for i := 0; i < len(starts); {
		at := starts[i]
		for ; j < len(ends) && ends[j] <= at; j++ {
			open--
		}
		for ; i < len(starts) && starts[i] == at; i++ {
			open++
		}
		f.Max = max(f.Max, open)
	}
}
