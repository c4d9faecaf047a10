package metrics

// T0Finder reads t0 from the records when the caller does not know it: the first request's issue
// time; for arrival_rate, the minimum over sessions of (turn-0 issue time − its scheduled offset),
// the offsets read from turn-0 intended start times (plload's first arrival is at the origin).
type T0Finder struct {
	ArrivalRate bool
	minIssue    int64
	maxEnd      int64
	has         bool
	firsts      [][2]int64 // turn-0 (issue, intended)
}

// Add looks at one record.
func (f *T0Finder) Add(r *Record) {
	if !f.has || issueNs(r) < f.minIssue {
		f.minIssue, f.has = issueNs(r), true
	}
	f.maxEnd = max(f.maxEnd, r.RequestStartNs, r.RequestEndNs.V)
	if f.ArrivalRate && r.TurnIndex == 0 && r.IntendedStartNs.OK {
		f.firsts = append(f.firsts, [2]int64{issueNs(r), r.IntendedStartNs.V})
	}
}

// T0 is the stage's t0 (absent when there were no records).
func (f *T0Finder) T0() Opt[int64] {
	if !f.has {
		return Opt[int64]{}
	}
	if !f.ArrivalRate || len(f.firsts) == 0 {
		return Some(f.minIssue)
	}
	origin := f.firsts[0][1]
	for _, p := range f.firsts {
		origin = min(origin, p[1])
	}
	t0 := f.firsts[0][0] - (f.firsts[0][1] - origin)
	for _, p := range f.firsts {
		t0 = min(t0, p[0]-(p[1]-origin))
	}
	return Some(t0)
}
