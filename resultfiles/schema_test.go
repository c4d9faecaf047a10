package resultfiles_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/resultfiles/resultstest"
)

// recordsStage is a stage as `plload report --records` makes it: no SLO, no price, arrival_rate,
// no server, no dataset.
func recordsStage(t *testing.T) *resultfiles.StageReport {
	in := metrics.StageInput{NeverStarted: -1, SLO: metrics.SLOLimits{ErrorRateUnset: true}, Cost: metrics.CostInputs{GPUCount: 1, ExpectedTurns: 1, Unpriced: true},
		T0Ns: metrics.Some(resultstest.T0), Warmup: time.Second, Duration: 10 * time.Second}
	s := metrics.NewStage(in)
	s.Add(resultstest.Record(1.5, 100, 10, "a"))
	return &resultfiles.StageReport{SchemaVersion: resultfiles.SchemaVersion, Tool: "plload test", Run: "x.jsonl", Stage: 1, Stages: 1, Mode: "arrival_rate",
		SLO: in.SLO, Cost: resultfiles.CostInputs{CostInputs: in.Cost}, Engine: resultfiles.EngineCounts{Outages: []resultfiles.Outage{}}, Summary: s.Summary()}
}

// TestOutputsMatchSchema: report.json and stage.json as plload writes them (with outages, an abort,
// failed scrapes; and without SLO, price or server) validate against the committed schemas.
func TestOutputsMatchSchema(t *testing.T) {
	reportSchema, stageSchema := resultstest.Schemas(t)
	sc, r := resultstest.GoldenReport(t)
	dir := t.TempDir()
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, st := range r.Stages {
		sd := filepath.Join(dir, "stage_0"+strconv.Itoa(st.Stage))
		os.MkdirAll(sd, 0o755)
		if err := st.Write(sd); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]*jsonschema.Schema{"report.json": reportSchema, "stage_01/stage.json": stageSchema, "stage_02/stage.json": stageSchema}
	for name, sch := range files {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := resultstest.Validate(t, sch, name, data); err != nil {
			t.Errorf("%s does not match its schema: %v", name, err)
		}
	}
	extra := map[string]any{"stage of --records": recordsStage(t), "report of no stages": resultfiles.New(sc, nil, resultfiles.Meta{Tool: "t"})}
	for name, v := range extra {
		sch := stageSchema
		if strings.HasPrefix(name, "report") {
			sch = reportSchema
		}
		data, _ := json.Marshal(v)
		if err := resultstest.Validate(t, sch, name, data); err != nil {
			t.Errorf("%s does not match its schema: %v\n%s", name, err, data)
		}
	}
}

// TestSchemaCatchesChanges: a field whose type changes, a list written as null, a −1 for unknown, a
// new field not in the schema, or Markdown in the headline fails validation — so a change to the Go
// types that changes the files fails this test until the schema (and its readers) follow.
func TestSchemaCatchesChanges(t *testing.T) {
	reportSchema, stageSchema := resultstest.Schemas(t)
	_, r := resultstest.GoldenReport(t)
	reportJSON, _ := json.Marshal(r)
	stageJSON, _ := json.Marshal(r.Stages[1])
	cases := []struct {
		doc   string
		path  string // dot-separated; a number indexes an array
		value any    // deleteField removes the field
	}{
		{"stage", "engine.retried_requests", "3"},
		{"stage", "engine.retried_requests", 1.5},
		{"stage", "engine.outages", nil},
		{"stage", "engine.outages.0.requests", "412"},
		{"stage", "engine.outages.0.from", "yesterday"},
		{"stage", "engine.outages.0.first_message", deleteField},
		{"stage", "engine.aborted", true},
		{"stage", "engine.surprise", 1},
		{"stage", "server.scrapes", "12"},
		{"stage", "server.scrapes_ok", deleteField},
		{"stage", "summary.never_started", -1},
		{"stage", "summary.warnings", nil},
		{"stage", "summary.slo.checks", nil},
		{"stage", "summary.ttft_ms.p95", "485"},
		{"stage", "summary.cache_hit", "64%"},
		{"stage", "summary.slo.verdict", "OK"},
		{"stage", "slo.ttft_p95_ms", 0},
		{"stage", "cost.gpu_hourly_usd", "2"},
		{"stage", "network_rtt_ms.n", -1},
		{"report", "headline", "**Headline**: stage 01: $138.889/1M out"},
		{"report", "headline_stage", 0},
		{"report", "stages", nil},
		{"report", "stages.1.engine.outages.0.kind", 5},
		{"report", "seed", -1},
	}
	for _, tc := range cases {
		src, sch := stageJSON, stageSchema
		if tc.doc == "report" {
			src, sch = reportJSON, reportSchema
		}
		var doc any
		json.Unmarshal(src, &doc)
		if !setPath(doc, strings.Split(tc.path, "."), tc.value) {
			t.Fatalf("%s: no %s in the document", tc.doc, tc.path)
		}
		data, _ := json.Marshal(doc)
		if err := resultstest.Validate(t, sch, tc.doc, data); err == nil {
			t.Errorf("%s.json with %s = %#v passed its schema", tc.doc, tc.path, tc.value)
		}
	}
}

type deleteMarker struct{}

var deleteField = deleteMarker{}

// setPath sets (or deletes) the value at path in a decoded JSON document; false when the path's
// parent is not there.
func setPath(doc any, path []string, v any) bool {
	for _, key := range path[:len(path)-1] {
		switch d := doc.(type) {
		case map[string]any:
			doc = d[key]
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i >= len(d) {
				return false
			}
			doc = d[i]
		default:
			return false
		}
	}
	last := path[len(path)-1]
	switch d := doc.(type) {
	case map[string]any:
		if v == deleteField {
			delete(d, last)
		} else {
			d[last] = v
		}
		return true
	case []any:
		i, err := strconv.Atoi(last)
		if err != nil || i >= len(d) {
			return false
		}
		d[i] = v
		return true
	}
	return false
}

// TestStageJSONRoundTrip: stage.json reads back as it was written, and a schema it does not know is
// refused.
func TestStageJSONRoundTrip(t *testing.T) {
	_, stages := resultstest.GoldenStages(t)
	dir := t.TempDir()
	if err := stages[1].Write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := resultfiles.ReadStage(filepath.Join(dir, "stage.json"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stages[1], back); diff != "" {
		t.Fatalf("stage.json round trip (-wrote +read):\n%s", diff)
	}
	os.WriteFile(filepath.Join(dir, "stage.json"), []byte(`{"schema_version": 99, "summary": {}}`), 0o644)
	if _, err := resultfiles.ReadStage(filepath.Join(dir, "stage.json")); err == nil || !strings.Contains(err.Error(), "schema_version 99") {
		t.Fatalf("unknown schema accepted: %v", err)
	}
}
