package matrix

import (
	"fmt"
	"math"
	"slices"

	"github.com/goccy/go-yaml"

	"github.com/plload/plload/workload"
)

// ScenarioYAML is the scenario file (its bytes) with the part's load in place of its own: name
// <name>-<part>, load.mode and load.stages the part's, the load keys that mode does not read
// removed (the workload's registry says which each mode reads; its mode would refuse the others). A
// synthetic file that leaves session.turns or think_time out (request_rate's single-turn defaults)
// gets them written when the part is another mode, which requires them, so every part sends the same
// sessions. Everything else — target, workload, SLO, cost — stays as
// written, so `workload.Parse` checks the result as it checks any file.
func ScenarioYAML(original []byte, p Part) ([]byte, error) {
	var doc yaml.MapSlice
	if err := yaml.UnmarshalWithOptions(original, &doc, yaml.UseOrderedMap()); err != nil {
		return nil, fmt.Errorf("reading the scenario: %w", err)
	}
	nameDoc, _ := workload.DocGet(doc, "name")
	name, _ := nameDoc.(string)
	doc = workload.DocSet(doc, "name", fmt.Sprintf("%s-%s", name, p.ID))
	loadDoc, _ := workload.DocGet(doc, "load")
	load, _ := loadDoc.(yaml.MapSlice)
	modeDoc, _ := workload.DocGet(load, "mode")
	oldMode, _ := modeDoc.(string)
	mode := workload.ModeOf(p.Mode)
	var kept yaml.MapSlice
	for _, it := range load {
		k := fmt.Sprint(it.Key)
		if k == "mode" || k == "stages" || (oldMode != p.Mode && !mode.ReadsLoadKey(k) && slices.Contains(workload.ModeLoadKeys(), k)) {
			continue
		}
		kept = append(kept, it)
	}
	stages := make([]any, len(p.Stages))
	for i, st := range p.Stages {
		stages[i] = stageDoc(p.Mode, st)
	}
	kept = append(yaml.MapSlice{{Key: "mode", Value: p.Mode}, {Key: "stages", Value: stages}}, kept...)
	doc = workload.DocSet(doc, "load", kept)
	source, _ := workload.DocGet(doc, "workload")
	_, hasSource := source.(yaml.MapSlice)
	if !mode.SingleTurn && !hasSource {
		for _, kv := range []yaml.MapItem{{Key: "turns", Value: 1}, {Key: "think_time", Value: "0s"}} {
			path := "session." + kv.Key.(string)
			if v, _ := workload.DocGet(doc, path); v == nil {
				doc = workload.DocSet(doc, path, kv.Value)
			}
		}
	}
	return yaml.MarshalWithOptions(doc, yaml.IndentSequence(true))
}

// stageDoc writes a stage with the keys its mode reads.
func stageDoc(mode string, st workload.Stage) yaml.MapSlice {
	out := yaml.MapSlice{}
	if st.Name != "" {
		out = append(out, yaml.MapItem{Key: "name", Value: st.Name})
	}
	m := workload.ModeOf(mode)
	if m.ReadsStageKey("concurrency") {
		out = append(out, yaml.MapItem{Key: "concurrency", Value: st.Concurrency})
	}
	if r := st.Rate; m.ReadsStageKey("rate") && r != nil {
		var rate any = r.To
		if r.IsRamp() {
			rate = yaml.MapSlice{{Key: "from", Value: r.From}, {Key: "to", Value: r.To}, {Key: "over", Value: r.Over.String()}}
		}
		out = append(out, yaml.MapItem{Key: "rate", Value: rate})
	}
	out = append(out, yaml.MapItem{Key: "warmup", Value: st.Warmup.String()}, yaml.MapItem{Key: "duration", Value: st.Duration.String()})
	if st.Sessions > 0 && m.ReadsStageKey("sessions") {
		out = append(out, yaml.MapItem{Key: "sessions", Value: st.Sessions})
	}
	return out
}

// SizePools gives each stage of a closed-loop part on a synthetic workload a session pool of twice
// the sessions it is expected to start plus its concurrency (as plload run does for a run from
// flags): single-turn sessions end fast, and past a pool of 3 per slot the sessions are drawn fresh
// (load.session_reuse) and are not in the stage's dataset.jsonl; a pool of their size keeps what the
// stage is likely to send in the file. sc is the part's scenario as parsed; a stage that sets
// sessions, and a workload from a file (whose sessions are the file's), are left as they are.
func SizePools(sc *workload.Scenario, p Part) Part {
	if workload.ModeOf(p.Mode).OpenLoop || sc.Source() != nil {
		return p
	}
	p.Stages = slices.Clone(p.Stages)
	for i, st := range p.Stages {
		if st.Sessions == 0 {
			p.Stages[i].Sessions = int(math.Ceil(2*sc.EstimateStage(st).SessionsNeeded)) + st.Concurrency
		}
	}
	return p
}
