package engine

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plload/plload/workload"
)

// gapStats is the mean rate (arrivals per second) and the CV of the gaps of a schedule.
func gapStats(offsets []time.Duration) (rate, cv float64) {
	n := len(offsets) - 1
	if n < 2 {
		return 0, 0
	}
	mean := (offsets[n] - offsets[0]).Seconds() / float64(n)
	ss := 0.0
	for i := 1; i <= n; i++ {
		d := (offsets[i] - offsets[i-1]).Seconds() - mean
		ss += d * d
	}
	return 1 / mean, math.Sqrt(ss/float64(n-1)) / mean
}

// TestRequestScheduleArrivalProcess: the precomputed schedule's rate is within 2 % and its gaps' CV
// within 5 % of the configured ones. A million draws make the tolerances many standard errors wide
// (rate: cv/√n = 0.25 % at cv 2.5; CV: about 0.3 % for gamma shape 0.16, whose kurtosis is 37.5),
// and the seed is fixed, so this cannot flake. The first arrival is at the origin.
func TestRequestScheduleArrivalProcess(t *testing.T) {
	cases := []struct {
		arrival string
		cv      float64 // configured (gamma), expected of the process
	}{
		{workload.ArrivalPoisson, 1},
		{workload.ArrivalGamma, 2.5},
		{workload.ArrivalGamma, 0.5},
		{workload.ArrivalConstant, 0},
	}
	const rate, span = 1000.0, 1000 * time.Second
	for _, c := range cases {
		sched := RequestSchedule(workload.ConstantRate(rate), c.arrival, c.cv, span, rand.New(rand.NewPCG(7, 11)))
		if sched.Len() < 900_000 || sched.Offsets[0] != 0 {
			t.Fatalf("%s: %d arrivals, the first at %v (want ~1e6, the first at the origin)", c.arrival, sched.Len(), sched.Offsets[0])
		}
		got, cv := gapStats(sched.Offsets)
		if math.Abs(got-rate)/rate > 0.02 {
			t.Errorf("%s cv %g: rate %.2f/s, want %g within 2 %%", c.arrival, c.cv, got, rate)
		}
		if c.cv == 0 && cv > 1e-6 || c.cv > 0 && math.Abs(cv-c.cv)/c.cv > 0.05 {
			t.Errorf("%s cv %g: the gaps' CV is %.4f, want %g within 5 %%", c.arrival, c.cv, cv, c.cv)
		}
		for i := 1; i < sched.Len(); i++ {
			if sched.Offsets[i] < sched.Offsets[i-1] || sched.Offsets[i] >= span {
				t.Fatalf("%s: offset %d is %v after %v (span %v)", c.arrival, i, sched.Offsets[i], sched.Offsets[i-1], span)
			}
		}
	}
}

// TestRequestScheduleIsTheSeeds: the same seed gives the same offsets; another seed others.
func TestRequestScheduleIsTheSeeds(t *testing.T) {
	draw := func(seed uint64) Schedule {
		return RequestSchedule(workload.ConstantRate(50), workload.ArrivalGamma, 2, 20*time.Second, rand.New(rand.NewPCG(seed, 1)))
	}
	if diff := cmp.Diff(draw(1), draw(1)); diff != "" {
		t.Fatalf("two schedules of one seed differ:\n%s", diff)
	}
	if cmp.Equal(draw(1), draw(2)) {
		t.Fatal("two seeds gave the same schedule")
	}
}

// TestRequestScheduleRampIsExact: a ramp's arrivals in each window are the integral of the rate over
// it (constant gaps in operational time: exact to one arrival), and Poisson ones within 4σ — a ramp
// done in steps, or at the mean rate throughout, misses both.
func TestRequestScheduleRampIsExact(t *testing.T) {
	cases := []struct {
		rate workload.Rate
		span time.Duration
	}{
		{workload.Rate{From: 0, To: 400, Over: workload.Duration(10 * time.Second)}, 15 * time.Second},
		{workload.Rate{From: 300, To: 20, Over: workload.Duration(8 * time.Second)}, 10 * time.Second},
		{workload.ConstantRate(123), 5 * time.Second},
	}
	// cumulative is Λ(t), by the trapezoid rule on 1 ms steps (independent of the closed form).
	cumulative := func(r workload.Rate, t time.Duration) float64 {
		sum := 0.0
		for s := time.Duration(0); s < t; s += time.Millisecond {
			sum += (r.At(s) + r.At(s+time.Millisecond)) / 2 * 0.001
		}
		return sum
	}
	for _, c := range cases {
		for _, arrival := range []string{workload.ArrivalConstant, workload.ArrivalPoisson} {
			sched := RequestSchedule(c.rate, arrival, 1, c.span, rand.New(rand.NewPCG(3, 3)))
			for from := time.Duration(0); from < c.span; from += time.Second {
				n := 0
				for _, o := range sched.Offsets {
					if o >= from && o < from+time.Second {
						n++
					}
				}
				want := cumulative(c.rate, from+time.Second) - cumulative(c.rate, from)
				tol := 1.5
				if arrival == workload.ArrivalPoisson {
					tol = 4*math.Sqrt(want) + 1
				}
				if math.Abs(float64(n)-want) > tol {
					t.Errorf("%s %s: %d arrivals in [%v, %v), the rate's integral is %.1f (± %.1f)", c.rate, arrival, n, from, from+time.Second, want, tol)
				}
			}
		}
	}
}

// TestReplaySchedule: the replay schedule is the sessions' own times, those past the span left out.
func TestReplaySchedule(t *testing.T) {
	plans := []workload.SessionPlan{{At: 0}, {At: 5 * time.Millisecond}, {At: 5 * time.Millisecond}, {At: time.Second}}
	got := ReplaySchedule(plans, time.Second)
	want := Schedule{Offsets: []time.Duration{0, 5 * time.Millisecond, 5 * time.Millisecond}, Span: time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
}
