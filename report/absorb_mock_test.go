package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plload/plload/engine"
	"github.com/plload/plload/metrics"
	"github.com/plload/plload/mock"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// absorbScenario ramps single-turn requests from 5 to 25 req/s over 2 s, then holds 25 req/s, with
// a TTFT p95 limit of 150 ms judged in 1 s windows. Against a mock of 50 ms TTFT and 5 tokens 10 ms
// apart, one slot serves about 11 req/s: the queue starts to grow about 1.2 s in.
const absorbScenario = `name: absorb
seed: 7
target: {base_url: %s, model: m, timeout: 30s}
personas: {count: 1, system_prompt_tokens: 10}
session: {turns: 1, user_input_tokens: 10, max_output_tokens: 5, think_time: 0s}
load:
  mode: request_rate
  arrival: constant
  drain_timeout: 2s
  stages:
    - {rate: {from: 5, to: 25, over: 2s}, warmup: 0s, duration: %s}
slo: {ttft: {p95: 150ms}, window: 1s}
`

// runAbsorb runs the ramp against a real mock on loopback and summarizes the stage as plload run
// does (StageInput, SummarizeFile, NewStageReport); it returns the stage and when the mock scaled,
// in seconds from the stage's t0 (−1 when it does not scale).
func runAbsorb(t *testing.T, cfg mock.Config, duration time.Duration) (*resultfiles.StageReport, float64, []*metrics.Record) {
	t.Helper()
	m, err := mock.Start(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m.Close(ctx)
	}()
	text := fmt.Sprintf(absorbScenario, m.BaseURL(), workload.Duration(duration))
	sc, issues := workload.Parse("absorb.yaml", []byte(text), workload.LoadOptions{ForRun: true})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	w, err := sc.Build()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A stage of at most 8 s and a 2 s drain: a minute means the run hung, and says so.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := engine.Run(ctx, engine.Config{Scenario: sc, Workload: w, Dir: dir})
	if err != nil {
		t.Fatalf("the run did not finish: %v", err)
	}
	in := resultfiles.StageInput(sc, 0)
	in.T0Ns = metrics.Some(res[0].T0Ns)
	path := filepath.Join(res[0].Dir, "profile_export.jsonl")
	sum, err := metrics.SummarizeFile(path, in, true)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []*metrics.Record
	if err := metrics.ReadRecords(f, func(r *metrics.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	st := resultfiles.NewStageReport("plload test", sc, 0, "", sum, resultfiles.EngineCounts{})
	scaled := -1.0
	if at := m.ScaleAt(); !at.IsZero() {
		scaled = float64(at.UnixNano()-res[0].T0Ns) / 1e9
	}
	return st, scaled, recs
}

// drainedAt is when the mock's queue had emptied after the scale, as the client saw it: the first
// request started after the scale whose TTFT is the mock's own (no wait for a slot).
func drainedAt(recs []*metrics.Record, t0 int64, scaled float64, ttft time.Duration) float64 {
	best := -1.0
	for _, r := range recs {
		s := float64(r.RequestStartNs-t0) / 1e9
		if r.OK() && s >= scaled && r.TTFT.V < ttft.Seconds()*1000+30 && (best < 0 || s < best) {
			best = s
		}
	}
	return best
}

// TestAbsorbOnAScalingMock: a ramp into a mock whose one slot becomes eight 3 s after its first
// request breaks the TTFT limit while the queue grows, and is absorbed once the new slots have
// drained it: absorbed_s is the scale moment plus the time to drain the queue, within one window.
// The same ramp into a mock that never scales is "not absorbed by the end of the stage" (the queue
// grows to the end; the drain cancels what is left). Catches an absorb that ignores the windows
// after the scale, one that says absorbed when the server never caught up, and a stage whose rising
// load is not asked for its absorb.
func TestAbsorbOnAScalingMock(t *testing.T) {
	if testing.Short() {
		t.Skip("two 6–8 s stages against the mock")
	}
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.TPS, cfg.MaxConcurrency = 50*time.Millisecond, 100, 1

	t.Run("scales after 3 s", func(t *testing.T) {
		c := cfg
		c.ScaleMaxConcurrency, c.ScaleAfter = 8, 3*time.Second
		st, scaled, recs := runAbsorb(t, c, 8*time.Second)
		a := st.Summary.Absorb
		if a == nil {
			t.Fatal("a ramp stage has no absorb")
		}
		drained := drainedAt(recs, st.Summary.Window.T0Ns, scaled, c.TTFT)
		t.Logf("scaled at %.2f s, queue drained at %.2f s; absorb: first violation %v s, absorbed %v s; %s", scaled, drained,
			a.FirstViolationS, a.AbsorbedS, resultfiles.AbsorbText(st))
		switch {
		case !a.FirstViolationS.OK || a.FirstViolationS.V >= scaled:
			t.Errorf("first violation %+v, want a window before the scale at %.2f s", a.FirstViolationS, scaled)
		case !a.AbsorbedS.OK:
			t.Errorf("not absorbed, though the mock scaled at %.2f s and drained its queue by %.2f s", scaled, drained)
		case drained < 0:
			t.Errorf("the queue never drained after the scale at %.2f s", scaled)
		case a.AbsorbedS.V < scaled-a.WindowS || a.AbsorbedS.V > drained+a.WindowS:
			t.Errorf("absorbed at %v s, want the scale (%.2f s) plus the drain (to %.2f s) within one window of %v s", a.AbsorbedS.V, scaled, drained, a.WindowS)
		}
		if want := fmt.Sprintf("absorbed %s s after the ramp began", resultfiles.Seconds(a.AbsorbedS.V)); !strings.HasPrefix(resultfiles.AbsorbText(st), want) {
			t.Errorf("text %q, want it to start %q", resultfiles.AbsorbText(st), want)
		}
	})
	t.Run("never scales", func(t *testing.T) {
		st, _, _ := runAbsorb(t, cfg, 6*time.Second)
		a := st.Summary.Absorb
		if a == nil {
			t.Fatal("a ramp stage has no absorb")
		}
		t.Logf("absorb: first violation %v s, absorbed %v s; %s", a.FirstViolationS, a.AbsorbedS, resultfiles.AbsorbText(st))
		if !a.NotAbsorbed() {
			t.Errorf("first violation %v, absorbed %v: want a violation and no absorption", a.FirstViolationS, a.AbsorbedS)
		}
		if !strings.HasPrefix(resultfiles.AbsorbText(st), "not absorbed by the end of the stage") {
			t.Errorf("text %q", resultfiles.AbsorbText(st))
		}
	})
}
