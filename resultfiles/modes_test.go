package resultfiles_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/resultfiles/resultstest"
)

// The stage fields of the open-loop modes (issue 16) in stage.json, and the load column they make.

// TestLoadColumnEveryMode: the load column reads in each mode's words, with the stage's name when it
// has one, and stage.json carries the mode's keys (only those).
func TestLoadColumnEveryMode(t *testing.T) {
	for _, tc := range []struct {
		name, load string
		want       []string // the load column of each stage
		json       []string // stage.json's stage fields of stage 1, as JSON
	}{
		{"concurrency", "  mode: concurrency\n  stages: [{concurrency: 16, warmup: 1s, duration: 10s}, {name: peak, concurrency: 64, duration: 10s}]\n",
			[]string{"c=16", "peak: c=64"}, []string{`"concurrency":16`}},
		{"arrival_rate", "  mode: arrival_rate\n  stages: [{sessions_per_sec: 2, max_concurrency: 32, duration: 10s}, {sessions_per_sec: 0.25, max_concurrency: 8, duration: 10s}]\n",
			[]string{"2.0 sess/s ≤ 32", "0.25 sess/s ≤ 8"}, []string{`"sessions_per_sec":2`, `"max_concurrency":32`}},
		{"request_rate poisson", "  mode: request_rate\n  stages: [{name: average, rate: 20, duration: 10s}, {rate: {from: 10, to: 50, over: 2m}, duration: 3m}]\n",
			[]string{"average: 20 req/s poisson ≤ 1000", "10→50 req/s over 2m poisson ≤ 1000"},
			[]string{`"name":"average"`, `"rate":20`, `"arrival":"poisson"`, `"max_in_flight":1000`}},
		{"request_rate gamma", "  mode: request_rate\n  arrival: gamma\n  cv: 2.5\n  max_in_flight: 64\n  stages: [{rate: 2.5, duration: 10s}]\n",
			[]string{"2.5 req/s gamma cv 2.5 ≤ 64"}, []string{`"rate":2.5`, `"arrival":"gamma"`, `"cv":2.5`, `"max_in_flight":64`}},
		{"request_rate constant", "  mode: request_rate\n  arrival: constant\n  stages: [{rate: 20, duration: 10s}]\n",
			[]string{"20 req/s constant ≤ 1000"}, []string{`"rate":20`, `"arrival":"constant"`, `"max_in_flight":1000`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := resultstest.ModeScenario(t, tc.load, "")
			var got []string
			for i := range sc.Load.Stages {
				got = append(got, resultstest.ModeStage(t, sc, i).LoadText())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("load column (-want +got):\n%s", diff)
			}
			st := resultstest.ModeStage(t, sc, 0)
			st.Tokenizer = nil // its own "name" is not the stage's
			data, _ := json.Marshal(st)
			for _, w := range tc.json {
				if !strings.Contains(string(data), w) {
					t.Errorf("stage.json lacks %s", w)
				}
			}
			for _, key := range []string{`"rate"`, `"arrival"`, `"cv"`, `"max_in_flight"`, `"time_scale"`, `"name"`} {
				if strings.Contains(string(data), key+":") != strings.Contains(strings.Join(tc.json, " "), key+":") {
					t.Errorf("stage.json has %s = %v, want %v: %s", key, !strings.Contains(strings.Join(tc.json, " "), key), strings.Contains(strings.Join(tc.json, " "), key), data)
				}
			}
		})
	}
}

// TestStageRateJSON: a constant rate is a number in stage.json, a ramp an object; both read back, and
// a request_rate stage.json validates against the schema.
func TestStageRateJSON(t *testing.T) {
	for _, tc := range []struct {
		rate resultfiles.StageRate
		json string
	}{
		{resultfiles.StageRate{From: 20, To: 20}, `20`},
		{resultfiles.StageRate{From: 10, To: 50, Over: "2m"}, `{"from":10,"to":50,"over":"2m"}`},
		{resultfiles.StageRate{From: 0, To: 50, Over: "30s"}, `{"from":0,"to":50,"over":"30s"}`},
	} {
		data, err := json.Marshal(tc.rate)
		if err != nil || string(data) != tc.json {
			t.Errorf("%+v: %s %v, want %s", tc.rate, data, err, tc.json)
		}
		var back resultfiles.StageRate
		if err := json.Unmarshal(data, &back); err != nil || back != tc.rate {
			t.Errorf("%s read back as %+v (%v)", data, back, err)
		}
	}
	var bad resultfiles.StageRate
	if err := json.Unmarshal([]byte(`"fast"`), &bad); err == nil || !strings.Contains(err.Error(), "accepted: a number") {
		t.Errorf("a string rate: %v", err)
	}
	_, stageSchema := resultstest.Schemas(t)
	sc := resultstest.ModeScenario(t, "  mode: request_rate\n  arrival: gamma\n  cv: 2\n  stages: [{name: ramp, rate: {from: 10, to: 50, over: 2m}, duration: 3m}, {rate: 20, duration: 10s}]\n", "")
	for i := range sc.Load.Stages {
		data, _ := json.Marshal(resultstest.ModeStage(t, sc, i))
		if err := resultstest.Validate(t, stageSchema, "stage.json", data); err != nil {
			t.Errorf("stage %d: %v\n%s", i+1, err, data)
		}
	}
}
