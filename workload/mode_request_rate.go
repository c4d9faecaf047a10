package workload

import (
	"fmt"
	"math"
)

// ModeRequestRate is open loop per request: requests (or sessions, for multi-turn workloads)
// arrive at the stage's rate — a constant or a ramp — on poisson, gamma or constant gaps, at most
// load.max_in_flight in flight.
const ModeRequestRate = "request_rate"

// Arrival processes of request_rate.
const (
	ArrivalPoisson  = "poisson"
	ArrivalGamma    = "gamma"
	ArrivalConstant = "constant"
)

func init() {
	registerMode(&LoadMode{
		Name:       ModeRequestRate,
		order:      2,
		OpenLoop:   true,
		Scheduled:  true,
		SingleTurn: true,
		Knob: &Knob{Name: "rate", Unit: "req/s",
			Of: func(st Stage) float64 {
				if st.Rate != nil {
					return st.Rate.To
				}
				return 0
			},
			With: func(st Stage, v float64) Stage { r := ConstantRate(v); st.Rate = &r; return st }},
		loadKeys:   []string{"arrival", "cv", "max_in_flight"},
		stageKeys:  []string{"name", "rate", "duration", "warmup", "sessions", "requests"},
		checkLoad:  requestRateLoad,
		checkStage: requestRateStage,
		defaults: func(s *Scenario) {
			if s.Load.Arrival == "" {
				s.Load.Arrival = ArrivalPoisson
			}
			if s.Load.Arrival == ArrivalGamma && !s.has("load.cv") {
				s.Load.CV = 1
			}
			s.maxInFlightDefault()
		},
		estimate: requestRateEstimate,
		poolSize: requestRatePool,
		describe: func(l LoadPlan, st Stage) string {
			if st.Rate == nil {
				return "n/a" // validation requires a rate
			}
			return fmt.Sprintf("%s %s (max %d in flight)", st.Rate, l.Arrival, l.MaxInFlight)
		},
		text:   requestRateText,
		rises:  requestRateRises,
		atOnce: requestRateAtOnce,
		openCap: func(l LoadPlan, _ int) (int, string) {
			return l.MaxInFlight, "load.max_in_flight"
		},
	})
}

// requestRateLoad checks load.arrival, load.cv and load.max_in_flight.
func requestRateLoad(c *checker) {
	l := c.s.Load
	if c.s.has("load.arrival") {
		c.oneOf("load.arrival", l.Arrival, ArrivalPoisson, ArrivalGamma, ArrivalConstant)
	}
	if c.s.has("load.cv") {
		if l.Arrival != ArrivalGamma {
			c.errorf("load.cv", "cv is the burstiness of arrival: gamma; here arrival is %s (write arrival: gamma, or drop cv)", l.Arrival)
		} else if l.CV <= 0 {
			c.errorf("load.cv", "found %g; accepted: a coefficient of variation > 0 (1 = Poisson, > 1 bursty)", l.CV)
		}
	}
	c.maxInFlight()
}

func requestRateStage(c *checker, p string, st Stage) {
	if c.require(p+".rate", "requests per second, such as 20, or a ramp {from: 10, to: 50, over: 2m}") && st.Rate != nil {
		c.rate(p+".rate", *st.Rate, st)
	}
}

// rate checks a request_rate stage's rate: a constant > 0, or a ramp from ≥ 0 to > 0 over a
// duration that fits in the stage.
func (c *checker) rate(p string, r Rate, st Stage) {
	if !c.s.has(p+".from") && !c.s.has(p+".to") && !c.s.has(p+".over") { // a plain number
		if r.To <= 0 {
			c.errorf(p, "found %g; accepted: requests per second > 0", r.To)
		}
		return
	}
	for _, k := range []string{"from", "to", "over"} {
		c.require(p+"."+k, map[string]string{"from": "the rate at the start, ≥ 0", "to": "the rate at the end of the ramp, > 0", "over": "the ramp's length, such as 2m"}[k])
	}
	if r.From < 0 {
		c.errorf(p+".from", "found %g; accepted: requests per second ≥ 0", r.From)
	}
	if c.s.has(p+".to") && r.To <= 0 {
		c.errorf(p+".to", "found %g; accepted: requests per second > 0", r.To)
	}
	c.positive(p+".over", r.Over)
	if st.Duration > 0 && r.Over > st.Warmup+st.Duration {
		c.warnf(p+".over", "the ramp (%s) is longer than the stage's warmup + duration (%s): it never reaches %g req/s", r.Over, st.Warmup+st.Duration, r.To)
	}
}

// arrivalCV is the coefficient of variation of request_rate's gaps: gamma's cv, never below
// Poisson's 1 (a constant rate varies less, so it needs no more headroom than Poisson).
func (l LoadPlan) arrivalCV() float64 {
	cv := 1.0
	if l.Arrival == ArrivalGamma {
		cv = max(cv, l.CV)
	}
	return cv
}

// requestRateEstimate: sessions arrive at the stage's mean rate (a ramp's integral), with a count
// that varies by cv²× Poisson's (headroom of 3σ), each bringing its turns.
func requestRateEstimate(s *Scenario, st Stage, e *Estimate) {
	span := (st.Warmup.D() + st.Duration.D()).Seconds()
	var sessions float64
	if st.Rate != nil {
		sessions = st.Rate.Mean(st.Warmup.D()+st.Duration.D()) * span
	}
	e.SessionsNeeded = sessions + 3*s.Load.arrivalCV()*math.Sqrt(sessions)
	s.inFlightCapped(span, sessions*s.ExpectedTurns(), e)
	e.capRequests(st)
	e.capSessions(s, st)
}

func requestRatePool(s *Scenario, st Stage) int {
	if st.Rate == nil {
		return 1
	}
	span := st.Warmup.D() + st.Duration.D()
	return arrivalPool(st.Rate.Mean(span)*span.Seconds(), s.Load.arrivalCV(), st)
}

func requestRateText(l StageLoad) string {
	if l.Rate == nil {
		return "n/a"
	}
	rate := fmt.Sprintf("%g req/s", l.Rate.To)
	if l.Rate.IsRamp() {
		rate = fmt.Sprintf("%g→%g req/s over %s", l.Rate.From, l.Rate.To, l.Rate.Over)
	}
	arrival := l.Arrival
	if arrival == ArrivalGamma {
		arrival += fmt.Sprintf(" cv %g", l.CV)
	}
	if arrival != "" {
		arrival = " " + arrival
	}
	return rate + arrival + capText(l.MaxInFlight)
}

// requestRateRises: a ramp up, or a rate above the last one of the stage before.
func requestRateRises(prev *Stage, st Stage) bool {
	if st.Rate == nil {
		return false
	}
	if st.Rate.IsRamp() && st.Rate.To > st.Rate.From {
		return true
	}
	return prev != nil && prev.Rate != nil && st.Rate.At(0) > prev.Rate.To
}

// requestRateAtOnce: the expected requests in flight (capped by max_in_flight: the cap itself is a
// bound, not a need), and for multi-turn sessions the arriving sessions × a session's length
// (single-turn: an arrival waiting for a slot holds nothing).
func requestRateAtOnce(s *Scenario, st Stage) (streams, sessions float64) {
	e := s.EstimateStage(st)
	if st.Rate != nil && s.ExpectedTurns() > 1 {
		sessions = st.Rate.Mean(st.Warmup.D()+st.Duration.D()) * e.SessionSeconds
	}
	return e.InFlight, sessions
}
