package metrics

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSLOAndCostNotSet: a limit that was not given takes no part in the verdict, and a missing price
// gives no cost — N/A, never FAIL against a limit of 0 nor $0.000 (`plload report --records` without
// its SLO and cost flags).
func TestSLOAndCostNotSet(t *testing.T) {
	recs := []*Record{ok(2, 100, []float64{10}, 2), ok(3, 300, []float64{10}, 2), failed(4, 500, "Internal Server Error")}
	cases := []struct {
		name    string
		slo     SLOLimits
		verdict string
		checks  []string
	}{
		{"nothing set", SLOLimits{ErrorRateUnset: true}, SLONA, []string{}},
		{"TTFT only, met", SLOLimits{TTFTP95Ms: 400, ErrorRateUnset: true}, SLOPass, []string{"ttft_p95_ms"}},
		{"TTFT only, missed", SLOLimits{TTFTP95Ms: 150, ErrorRateUnset: true}, SLOFail, []string{"ttft_p95_ms"}},
		{"ITL and error rate", SLOLimits{ITLP95Ms: 50, ErrorRateMax: 0.5}, SLOPass, []string{"itl_p95_ms", "error_rate"}},
		// 0 is a real error-rate limit (no errors allowed), not "not set".
		{"error rate 0 is a limit", SLOLimits{ErrorRateMax: 0}, SLOFail, []string{"error_rate"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input()
			in.SLO = tc.slo
			s := summary(in, recs...)
			names := []string{}
			for _, c := range s.SLO.Checks {
				names = append(names, c.Name)
			}
			if s.SLO.Verdict != tc.verdict || !cmp.Equal(names, tc.checks) {
				t.Fatalf("verdict %s checks %v, want %s %v", s.SLO.Verdict, names, tc.verdict, tc.checks)
			}
			if s.SLO.Checks == nil {
				t.Fatal("checks must be [] in JSON, not null")
			}
		})
	}
	in := input()
	in.Cost = CostInputs{GPUCount: 1, ExpectedTurns: 3, Unpriced: true}
	if c := summary(in, recs...).Cost; c.USDPer1MOut != nil || c.USDPer1KTurns != nil || c.USDPerSession != nil {
		t.Fatalf("no price given, yet a cost: %+v", c)
	}
	in.Cost.Unpriced = false // $0/h is a real price: a machine you own
	if c := summary(in, recs...).Cost; c.USDPer1MOut == nil || *c.USDPer1MOut != 0 {
		t.Fatalf("a price of 0 must give $0: %+v", c)
	}
}

// TestStageJSONAbsentIsNull: stage.json writes what is unknown as null and lists as [], never −1,
// never 0 standing for "no value", never a null list.
func TestStageJSONAbsentIsNull(t *testing.T) {
	in := input()
	in.NeverStarted = -1
	in.SLO = SLOLimits{TTFTP95Ms: 500, ErrorRateUnset: true}
	in.Cost.Unpriced = true
	s := summary(in, ok(2, 100, []float64{10}, 2))
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{`"never_started":null`, `"ttfo_ms":{"n":0,"mean":null,"min":null,"max":null,"p50":null,"p90":null,"p95":null,"p99":null,"std":null}`,
		`"warnings":[]`, `"ttft_ms":{"n":1,`} {
		if !strings.Contains(text, want) {
			t.Errorf("summary JSON lacks %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, "-1") {
		t.Errorf("summary JSON has a −1:\n%s", text)
	}
	in.NeverStarted = 3
	if data, _ := json.Marshal(summary(in)); !strings.Contains(string(data), `"never_started":3`) {
		t.Errorf("a known count must be written: %s", data)
	}
	// The limits and cost inputs: null when not set, and back.
	for _, tc := range []struct {
		slo  SLOLimits
		cost CostInputs
		want string
	}{
		{SLOLimits{ErrorRateUnset: true}, CostInputs{GPUCount: 1, ExpectedTurns: 1, Unpriced: true},
			`{"ttft_p95_ms":null,"itl_p95_ms":null,"error_rate_max":null,"latency":[]}{"gpu_hourly_usd":null,"gpu_count":1,"expected_turns":1}`},
		{SLOLimits{TTFTP95Ms: 250, ITLP95Ms: 50, ErrorRateMax: 0}, CostInputs{GPUHourlyUSD: 0, GPUCount: 2, ExpectedTurns: 3},
			`{"ttft_p95_ms":250,"itl_p95_ms":50,"error_rate_max":0,"latency":[]}{"gpu_hourly_usd":0,"gpu_count":2,"expected_turns":3}`},
		{SLOLimits{ErrorRateUnset: true, Latency: []LatencyLimit{{"tpot", "p99", 50}, {"e2e", "p90", 10000}}}, CostInputs{GPUCount: 1, Unpriced: true},
			`{"ttft_p95_ms":null,"itl_p95_ms":null,"error_rate_max":null,"latency":[{"metric":"tpot","stat":"p99","limit_ms":50},{"metric":"e2e","stat":"p90","limit_ms":10000}]}{"gpu_hourly_usd":null,"gpu_count":1,"expected_turns":0}`},
	} {
		a, _ := json.Marshal(tc.slo)
		b, _ := json.Marshal(tc.cost)
		if got := string(a) + string(b); got != tc.want {
			t.Errorf("JSON %s, want %s", got, tc.want)
		}
		var slo SLOLimits
		var cost CostInputs
		if err := json.Unmarshal(a, &slo); err != nil || !cmp.Equal(slo, tc.slo) {
			t.Errorf("SLO round trip: %v (-got +want):\n%s", err, cmp.Diff(slo, tc.slo))
		}
		if err := json.Unmarshal(b, &cost); err != nil || cost != tc.cost {
			t.Errorf("cost round trip: %+v %v, want %+v", cost, err, tc.cost)
		}
	}
}
