package prober

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/resultfiles/resultstest"
	"github.com/plload/plload/search"
	"github.com/plload/plload/workload"
)

// jsonKeys lists the JSON keys of a struct type's fields, in order.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		keys = append(keys, f.Tag.Get("json"))
	}
	return keys
}

// TestSearchJSONKeepsEveryProbeKey: search.json's probes (resultfiles.SearchProbe, which writeResults
// copies from the search's probes) carry every key of search.Probe, so a field the search adds to
// its probes cannot silently go missing from search.json. Its gpu key is the probe's stage's, added
// by writeResults.
func TestSearchJSONKeepsEveryProbeKey(t *testing.T) {
	written := jsonKeys(reflect.TypeFor[resultfiles.SearchProbe]())
	if last := len(written) - 1; written[last] == "gpu,omitempty" {
		written = written[:last]
	}
	if diff := cmp.Diff(jsonKeys(reflect.TypeFor[search.Probe]()), written); diff != "" {
		t.Errorf("search.Probe's keys (-) against search.json's probe (+):\n%s", diff)
	}
}

// TestSearchJSONCarriesEachProbesGPU: each probe in search.json carries its stage's GPU figures, so
// power and J/token against load (the knee's among them) need no stage.json; a stage without
// telemetry has no gpu key.
func TestSearchJSONCarriesEachProbesGPU(t *testing.T) {
	_, golden := resultstest.GoldenStages(t)
	eight, sixteen := 8.0, 16.0
	p, err := New(scenario(t, workload.ModeConcurrency, "{concurrency: 8, duration: 2s}"), Options{Resolution: "5%", Repeats: 1})
	if err != nil {
		t.Fatal(err)
	}
	pr := &prober{plan: p, dir: t.TempDir()}
	res := search.Result{Best: &eight, Above: &sixteen, Probes: []search.Probe{{Value: 8, Verdict: search.Pass, Stage: 1}, {Value: 16, Verdict: search.Fail, Stage: 2}}}
	for i, pb := range res.Probes {
		st := *golden[0]
		st.Stage = pb.Stage
		if i == 0 {
			st.GPU = &metrics.GPUSummary{GPUs: make([]metrics.GPUStats, 2), JPerOutToken: metrics.Some(0.45),
				GPUFigures: metrics.GPUFigures{PowerMeanW: metrics.Some(500.0), EnergyJ: metrics.Some(9000.0), EnergyMethod: "counter"}}
		} else {
			st.GPU = nil
		}
		pr.stages, pr.specs = append(pr.stages, &st), append(pr.specs, p.stageAt(pb.Value))
	}
	_ = p.finish(pr, res, nil, time.Now(), io.Discard)
	data, err := os.ReadFile(filepath.Join(pr.dir, "search.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sf struct {
		Probes []map[string]any `json:"probes"`
	}
	if err := json.Unmarshal(data, &sf); err != nil || len(sf.Probes) != 2 {
		t.Fatalf("search.json: %v\n%s", err, data)
	}
	gpu, ok := sf.Probes[0]["gpu"].(map[string]any)
	if !ok || gpu["gpus"] != 2.0 || gpu["power_mean_w"] != 500.0 || gpu["j_per_out_token"] != 0.45 || gpu["energy_method"] != "counter" {
		t.Errorf("the passing probe's gpu: %v, want 2 GPUs, 500 W, 0.45 J/out token by counter\n%s", sf.Probes[0]["gpu"], data)
	}
	if _, has := sf.Probes[1]["gpu"]; has {
		t.Errorf("a probe whose stage had no telemetry has a gpu key: %v", sf.Probes[1]["gpu"])
	}
}
