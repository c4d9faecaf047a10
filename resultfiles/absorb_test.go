package resultfiles

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/workload"
)

// TestLoadRises: the stages asked for their time to absorb. Catches a down-ramp or a lower step
// taken for a rise, a first stage that does not ramp asked for one, and a mode left out.
func TestLoadRises(t *testing.T) {
	rate := func(from, to float64, over time.Duration) *workload.Rate {
		return &workload.Rate{From: from, To: to, Over: workload.Duration(over)}
	}
	cases := []struct {
		name   string
		plan   workload.LoadPlan
		rising []bool
	}{
		{"ramp up, then a constant rate, then more", workload.LoadPlan{Mode: workload.ModeRequestRate, Stages: []workload.Stage{
			{Rate: rate(5, 25, time.Minute)}, {Rate: rate(25, 25, 0)}, {Rate: rate(30, 30, 0)}}}, []bool{true, false, true}},
		{"first constant stage: nothing to rise from", workload.LoadPlan{Mode: workload.ModeRequestRate, Stages: []workload.Stage{
			{Rate: rate(50, 50, 0)}, {Rate: rate(10, 10, 0)}}}, []bool{false, false}},
		{"ramp down that starts above the stage before", workload.LoadPlan{Mode: workload.ModeRequestRate, Stages: []workload.Stage{
			{Rate: rate(10, 10, 0)}, {Rate: rate(40, 20, time.Minute)}, {Rate: rate(20, 5, time.Minute)}}}, []bool{false, true, false}},
		{"concurrency ladder", workload.LoadPlan{Mode: workload.ModeConcurrency, Stages: []workload.Stage{
			{Concurrency: 2}, {Concurrency: 4}, {Concurrency: 4}, {Concurrency: 1}}}, []bool{false, true, false, false}},
		{"arrival rate", workload.LoadPlan{Mode: workload.ModeArrivalRate, Stages: []workload.Stage{
			{SessionsPerSec: 1}, {SessionsPerSec: 2}}}, []bool{false, true}},
		{"replay", workload.LoadPlan{Mode: workload.ModeReplay, Stages: []workload.Stage{{}, {}}}, []bool{false, false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []bool
			for i := range c.plan.Stages {
				got = append(got, LoadRises(c.plan, i))
			}
			if diff := cmp.Diff(c.rising, got); diff != "" {
				t.Errorf("rising (-want +got):\n%s", diff)
			}
		})
	}
}
