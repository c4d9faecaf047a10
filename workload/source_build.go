package workload

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// sourcePoolMax bounds a stage's pool drawn from a source when the stage does not say `sessions`:
// a stage walks the file in order, and its pool (with its text) is held in memory.
const sourcePoolMax = 10_000

// buildFromSource makes the stages' pools from the dataset or trace the scenario read: personas are
// the distinct system prompts (so sessions that share one share its prefix on the server), and each
// stage takes the next sessions of the source in order — its `sessions`, else the whole source up
// to sourcePoolMax — wrapping around at the end (the entries past it are repeats: FirstRepeat).
func (s *Scenario) buildFromSource(g *TextGen) (*Workload, error) {
	src := s.source
	w := &Workload{}
	persona := map[string]int{}
	for _, ss := range src.Sessions {
		if _, seen := persona[ss.System]; ss.System == "" || seen {
			continue
		}
		persona[ss.System] = len(w.Personas)
		w.Personas = append(w.Personas, Persona{Name: fmt.Sprintf("system prompt %d of %s", len(w.Personas)+1, src.File),
			SystemPrompt: ss.System, Tokens: ss.SystemTokens})
	}
	w.Picker = NewPersonaPicker(max(1, len(w.Personas)), "uniform", 1)
	next := 0
	replay := newReplaySlicer(s)
	for i, st := range s.Load.Stages {
		n := st.Sessions
		if n == 0 {
			n = min(len(src.Sessions), sourcePoolMax)
		}
		picks := replay.stage(st)
		if replay.on {
			if len(replay.sorted) == 0 {
				return nil, fmt.Errorf("load.mode replay: %s has no request times; accepted: a trace (mooncake, azure, burstgpt, qwen_bailian) or an aiperf dataset whose turns have \"timestamp\" (ms), or load.mode request_rate", src.File)
			}
			if len(picks) == 0 {
				return nil, fmt.Errorf("load.stages[%d]: load.mode replay: no request of %s falls in this stage's slice of the trace (%s to %s after time_scale %g); accepted: a trace with request times, and stages that fit in its length", i, src.File, replay.prev, replay.from, s.Load.TimeScale)
			}
			n = len(picks)
		}
		pool := StagePool{Stage: i + 1, Spec: st, Sessions: make([]SessionPlan, n), personas: w.Personas, Reuse: s.Load.SessionReuse}
		// The entries from the file's end on repeat conversations the run already sent (a replay's
		// picks are each the trace's own, once).
		if picks == nil {
			pool.repeats = n - min(n, max(0, len(src.Sessions)-next))
		}
		lines := newDatasetHash()
		for j := range pool.Sessions {
			ss := &src.Sessions[next%len(src.Sessions)]
			var at time.Duration
			if picks != nil {
				ss, at = &src.Sessions[picks[j].index], picks[j].at
			}
			r := s.rng(streamSession, uint64(i+1)<<32|uint64(j))
			sp := SessionPlan{ID: fmt.Sprintf("s%02d-%06d", i+1, j), Persona: -1, Turns: make([]Turn, len(ss.Turns)), At: at, Timed: picks != nil}
			if ss.System != "" {
				sp.Persona = persona[ss.System]
			}
			for k, t := range ss.Turns {
				pool.TraceBlocks += int64(t.Blocks)
				pool.TraceReusedBlocks += int64(t.ReusedBlocks)
				sp.Turns[k] = Turn{User: t.User, UserTokens: int32(t.UserTokens), MaxOutputTokens: int32(s.outputTokens(t, r)),
					ExactOutput: t.ExactOutput, Recorded: t.Recorded}
				if len(t.Images) > 0 {
					sp.Turns[k].Extra = &TurnExtra{Images: t.Images} // the source's images, never copied
				}
				if k > 0 && t.DelayMs < 0 && t.AtMs >= 0 && ss.Turns[k-1].AtMs >= 0 {
					sp.Turns[k].AfterPrevious = max(time.Millisecond, time.Duration((t.AtMs-ss.Turns[k-1].AtMs)*replay.turnScale()*float64(time.Millisecond)).Round(time.Millisecond))
				} else {
					sp.Turns[k].ThinkBefore = s.thinkBefore(ss.Turns, k, r)
				}
			}
			pool.Sessions[j] = sp
			lines.add(sp, w.Personas)
			pool.addPrompts(sp)
			next++
		}
		pool.finish(lines)
		w.Stages = append(w.Stages, pool)
	}
	return w, nil
}

// outputTokens is a turn's max output tokens: a trace's measured length, else the dataset's
// output_tokens (from_file: the file's value, or DefaultDatasetOutputTokens).
func (s *Scenario) outputTokens(t SourceTurn, r *rand.Rand) int {
	if t.ExactOutput && t.OutputTokens > 0 {
		return t.OutputTokens
	}
	if d := s.Workload.Dataset; d != nil && d.OutputTokens.Dist != nil {
		return d.OutputTokens.Dist.SampleInt(r)
	}
	if t.OutputTokens > 0 {
		return t.OutputTokens
	}
	return DefaultDatasetOutputTokens
}

// thinkBefore is the pause before turn k: the file's own delay, else a draw from session.think_time
// (a trace's times make the turn due AfterPrevious instead).
func (s *Scenario) thinkBefore(turns []SourceTurn, k int, r *rand.Rand) time.Duration {
	if k == 0 {
		return 0
	}
	t := turns[k]
	switch {
	case t.DelayMs >= 0:
		return time.Duration(t.DelayMs) * time.Millisecond
	}
	return s.Session.ThinkTime.SampleDuration(r).Round(time.Millisecond)
}
