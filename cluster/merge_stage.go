package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
	"github.com/plload/plload/workload"
)

// stagePart is one shard's part of a stage.
type stagePart struct {
	index int
	shard *shardDir
	stage *shardStage
	off   int64
}

// file is the path of the part's file name. A shard killed during the stage (no stage.json) never
// renamed the files it was writing: their whole lines are under name+metrics.WritingSuffix, which
// is read when name itself is not there.
func (p stagePart) file(name string) string {
	path := filepath.Join(p.stage.dir, name)
	if p.stage.report != nil {
		return path
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(path + metrics.WritingSuffix); err == nil {
			return path + metrics.WritingSuffix
		}
	}
	return path
}

// mergeStage merges stage n of every shard into dir/stage_NN and writes its stage.json; nil when no
// shard has the stage.
func mergeStage(dir string, sc *workload.Scenario, set *shardSet, n int, tool string) (*resultfiles.StageReport, error) {
	var parts []stagePart
	for i, d := range set.shards {
		if d == nil {
			continue
		}
		if st, ok := d.stages[n]; ok {
			parts = append(parts, stagePart{index: i, shard: d, stage: st, off: stageOffset(d, st)})
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	out := filepath.Join(dir, fmt.Sprintf("stage_%02d", n))
	if err := os.Mkdir(out, 0o755); err != nil {
		return nil, err
	}
	dataset, tally, err := mergeStageFiles(out, parts)
	if err != nil {
		return nil, err
	}
	i := n - 1
	in := resultfiles.StageInput(sc, i)
	eng := sumEngine(parts, tally)
	windowInputs(&in, parts, tally, sc.Load.IsOpenLoop())
	if sc.Load.IsOpenLoop() {
		in.NeverStarted = eng.NotStarted
	}
	explained := resultfiles.FailuresExplainStrain(eng.Aborted, len(eng.Outages), tally.errors, tally.ok)
	in.Warnings = append(in.Warnings, shardWarnings(set, n, parts, explained)...)
	sum, err := metrics.SummarizeFile(filepath.Join(out, "profile_export.jsonl"), in, sc.Load.IsOpenLoop())
	if err != nil {
		return nil, fmt.Errorf("stage %d: %w", n, err)
	}
	for _, p := range parts {
		sum.Partial = sum.Partial || p.stage.issue != ""
	}
	sum.Partial = sum.Partial || len(parts) < set.count
	if reuse := resultfiles.ReuseWarning(sc, resultfiles.StageReuse{Pool: bytes.Count(dataset, []byte("\n")), Sessions: eng.Sessions, Reused: eng.Reused,
		Cache: sum.ReuseCache, Explained: explained}); reuse != "" {
		sum.Warnings = append(sum.Warnings, reuse)
	}
	sha := ""
	for _, p := range parts {
		if p.stage.report != nil {
			sha = p.stage.report.DatasetSHA256
			break
		}
	}
	st := resultfiles.NewStageReport(tool, sc, i, sha, sum, eng)
	worst := worstInjector(parts)
	if worst != nil {
		st.Injector, st.NetworkRTT = worst.stage.report.Injector, worst.stage.report.NetworkRTT
	}
	st.Server = mergedServer(out, parts, sum)
	st.GPU = mergedGPU(out, parts, sum)
	return st, st.Write(out)
}

// mergeStageFiles writes the stage's dataset.jsonl, profile_export.jsonl, sessions.jsonl and run.log
// from the parts, and returns the dataset and the tally of the records.
func mergeStageFiles(out string, parts []stagePart) ([]byte, recordTally, error) {
	var t recordTally
	var dirs []string
	for _, p := range parts {
		if p.stage.report != nil && !p.stage.report.RecordsKept {
			return nil, t, inputErr("%s: the shard did not keep its records (output.record_requests: false); merge computes the run from every record, so run the shards with records kept", p.stage.dir)
		}
		dirs = append(dirs, p.stage.dir)
	}
	dataset, err := sameDataset(dirs)
	if err != nil {
		return nil, t, err
	}
	if dataset != nil {
		if err := os.WriteFile(filepath.Join(out, "dataset.jsonl"), dataset, 0o644); err != nil {
			return nil, t, err
		}
	}
	perShard, tallies, err := readParts(parts)
	if err != nil {
		return nil, t, err
	}
	var keys []recordKey
	var files []string
	var offs []int64
	var sessions []mergedSession
	var log bytes.Buffer
	orphanRecords, orphanSessions := 0, 0
	for k, p := range parts {
		unfinished := p.stage.report == nil
		nr, ns := len(perShard[k]), len(sessions)
		keys = append(keys, perShard[k]...)
		perShard[k] = nil
		t.join(tallies[k])
		files, offs = append(files, p.file("profile_export.jsonl")), append(offs, p.off)
		if sessions, err = readShardSessions(p.file("sessions.jsonl"), p.off, unfinished, sessions); err != nil {
			return nil, t, err
		}
		if unfinished { // no stage.json to count them: the records and session lines it left do
			orphanRecords += nr
			orphanSessions += len(sessions) - ns
		}
		if data, err := os.ReadFile(filepath.Join(p.stage.dir, "run.log")); err == nil {
			fmt.Fprintf(&log, "# shard %d/%d (%s), clock offset %d ns: its local times\n", p.index, p.shard.block.Count, p.shard.path, p.off)
			log.Write(data)
		}
	}
	sortGlobal(keys)
	if err := writeRecords(filepath.Join(out, "profile_export.jsonl"), files, offs, keys); err != nil {
		return nil, t, err
	}
	t.orphanRecords, t.orphanSessions = orphanRecords, orphanSessions
	if err := writeSessions(filepath.Join(out, "sessions.jsonl"), sessions); err != nil {
		return nil, t, err
	}
	return dataset, t, os.WriteFile(filepath.Join(out, "run.log"), log.Bytes(), 0o644)
}

// readParts reads the parts' record keys and tallies, shifted, one shard per core at a time (parsing
// is most of a merge's time).
func readParts(parts []stagePart) ([][]recordKey, []recordTally, error) {
	out := make([][]recordKey, len(parts))
	tallies := make([]recordTally, len(parts))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for k, p := range parts {
		g.Go(func() error {
			var err error
			out[k], tallies[k], _, err = readShardRecords(p.file("profile_export.jsonl"), p.shard.block, p.off, p.stage.report == nil, k)
			return err
		})
	}
	return out, tallies, g.Wait()
}

// windowInputs sets the stage's t0 and interrupt from the shards' windows, in coordinator time. t0 is
// the one one process would have had (docs/measurement.md, docs/deployment.md): for a closed loop its first issue, the earliest
// over the shards' records (a shard's stage.json says the barrier's instant: the start time aligns
// the shards, it does not redefine t0); for the open-loop modes the schedule's origin, the
// coordinator's start time, the earliest shard t0. The window ends early only if every shard's did:
// then at the last of their ends.
func windowInputs(in *metrics.StageInput, parts []stagePart, tally recordTally, openLoop bool) {
	allCut := true
	var lastCut int64
	for _, p := range parts {
		r := p.stage.report
		if r == nil {
			continue // no stage.json: its t0 is unknown, and the records carry its sends
		}
		w := r.Summary.Window
		if w.T0Ns != 0 && (!in.T0Ns.OK || w.T0Ns+p.off < in.T0Ns.V) {
			in.T0Ns = metrics.Some(w.T0Ns + p.off)
		}
		if w.EEffNs < w.ENs {
			lastCut = max(lastCut, w.EEffNs+p.off)
		} else {
			allCut = false
		}
	}
	if allCut && lastCut != 0 {
		in.InterruptNs = metrics.Some(lastCut)
	}
	if !openLoop && tally.firstIssue.OK {
		in.T0Ns = tally.firstIssue
	}
}

// sumEngine adds the shards' engine counts; a shard without stage.json counts its records and
// session lines. Outages are put in coordinator time and in time order.
func sumEngine(parts []stagePart, tally recordTally) resultfiles.EngineCounts {
	var e resultfiles.EngineCounts
	var aborted []string
	for _, p := range parts {
		r := p.stage.report
		if r == nil {
			continue
		}
		g := r.Engine
		e.Issued += g.Issued
		e.Sessions += g.Sessions
		e.Reused += g.Reused
		e.NotStarted += g.NotStarted
		e.Retried += g.Retried
		e.RetriedAfterClose += g.RetriedAfterClose
		e.Connections += g.Connections // each shard's client opened its own
		for _, proto := range strings.Split(g.Protocol, ", ") {
			if proto != "" && !slices.Contains(strings.Split(e.Protocol, ", "), proto) {
				e.Protocol = strings.TrimPrefix(e.Protocol+", "+proto, ", ")
			}
		}
		for _, o := range g.Outages {
			o.From, o.To = shiftStamp(o.From, p.off), shiftStamp(o.To, p.off)
			e.Outages = append(e.Outages, o)
		}
		if g.Aborted != "" {
			aborted = append(aborted, fmt.Sprintf("shard %d: %s", p.index, g.Aborted))
		}
	}
	e.Issued += tally.orphanRecords
	e.Sessions += tally.orphanSessions
	slices.SortStableFunc(e.Outages, func(a, b resultfiles.Outage) int { return strings.Compare(a.From, b.From) })
	e.Aborted = strings.Join(aborted, "; ")
	return e
}

// shiftStamp moves an RFC 3339 time by off ns (a stamp it cannot read is kept as it is).
func shiftStamp(s string, off int64) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.Add(time.Duration(off)).UTC().Format(time.RFC3339Nano)
}

// shardWarnings are the stage's warnings about shards: each strained shard's injector warnings, by
// index (one strained shard marks the run), unless failures explain the strain as they do in one
// process; and each shard missing from or partial in the stage.
func shardWarnings(set *shardSet, n int, parts []stagePart, explained bool) []string {
	var out, strain []string
	strained := map[string][]int{} // a warning → the shards that gave it, so 100 shards make one line
	have := map[int]bool{}
	for _, p := range parts {
		have[p.index] = true
		if r := p.stage.report; r != nil && !explained {
			for _, w := range r.Injector.Warnings() {
				if strained[w] == nil {
					strain = append(strain, w)
				}
				strained[w] = append(strained[w], p.index)
			}
		}
		if p.stage.issue != "" {
			out = append(out, fmt.Sprintf("shard %d/%d is partial in this stage (%s): its sessions after it stopped are missing", p.index, set.count, p.stage.issue))
		}
	}
	for _, w := range strain {
		out = append(out, shardsText(strained[w], set.count)+": "+w)
	}
	for i := 0; i < set.count; i++ {
		if !have[i] {
			why := set.missing[i]
			out = append(out, fmt.Sprintf("shard %d/%d is missing from this stage (%s): its sessions (ordinals ≡ %d mod %d) are not counted", i, set.count, why, i, set.count))
		}
	}
	return out
}

// shardsText names shards: "shard 2/4", "shards 0, 1 and 3 of 4".
func shardsText(idx []int, count int) string {
	if len(idx) == 1 {
		return fmt.Sprintf("shard %d/%d", idx[0], count)
	}
	parts := make([]string, len(idx))
	for i, x := range idx {
		parts[i] = fmt.Sprint(x)
	}
	return fmt.Sprintf("shards %s and %s of %d", strings.Join(parts[:len(parts)-1], ", "), parts[len(parts)-1], count)
}

// worstInjector is the shard whose injector worked hardest: the most warnings, then the highest
// share of its cores busy (nil when no shard left a stage.json).
func worstInjector(parts []stagePart) *stagePart {
	var worst *stagePart
	score := func(h metrics.InjectorHealth) (int, float64) {
		share := 0.0
		if h.Cores > 0 {
			share = h.CPUPercent / float64(h.Cores)
		}
		return len(h.Warnings()), share
	}
	for i := range parts {
		p := &parts[i]
		if p.stage.report == nil {
			continue
		}
		if worst == nil {
			worst = p
			continue
		}
		nw, sw := score(worst.stage.report.Injector)
		np, sp := score(p.stage.report.Injector)
		if np > nw || np == nw && sp > sw {
			worst = p
		}
	}
	return worst
}

// mergedServer is the target's own metrics over the merged window, from the lowest-index shard that
// scraped them (every shard scrapes the same server), its samples put in coordinator time.
func mergedServer(out string, parts []stagePart, sum *metrics.StageSummary) *metrics.ServerSummary {
	for _, p := range parts {
		r := p.stage.report
		if r == nil || r.Server == nil {
			continue
		}
		samples, _ := metrics.ReadJSONLines[metrics.ServerSample](filepath.Join(p.stage.dir, "server_metrics.jsonl"))
		for i := range samples {
			samples[i].TNs += p.off
		}
		writeJSONLines(filepath.Join(out, "server_metrics.jsonl"), samples)
		srv := metrics.SummarizeServer(samples, sum.Window.WNs, sum.Window.EEffNs)
		srv.Scrapes, srv.ScrapesOK, srv.Note = r.Server.Scrapes, r.Server.ScrapesOK, r.Server.Note
		srv.WithClientCacheHit(filepath.Join(out, "profile_export.jsonl"))
		return &srv
	}
	return nil
}

// mergedGPU is the GPUs' telemetry over the merged window, from the lowest-index shard that read it
// (every shard reads the same exporters), its samples put in coordinator time; its warnings join
// the merged stage's.
func mergedGPU(out string, parts []stagePart, sum *metrics.StageSummary) *metrics.GPUSummary {
	for _, p := range parts {
		r := p.stage.report
		if r == nil || r.GPU == nil {
			continue
		}
		samples, _ := metrics.ReadJSONLines[metrics.GPUSample](filepath.Join(p.stage.dir, "gpu_metrics.jsonl"))
		for i := range samples {
			samples[i].TNs += p.off
		}
		writeJSONLines(filepath.Join(out, "gpu_metrics.jsonl"), samples)
		work, _ := metrics.ReadWindowWork(filepath.Join(out, "profile_export.jsonl"), sum.Window.WNs, sum.Window.EEffNs)
		gpu := metrics.SummarizeGPU(samples, metrics.GPUWindow{WNs: sum.Window.WNs, EEffNs: sum.Window.EEffNs, Work: work,
			GPUCount: r.Cost.GPUCount, EnergyUSDPerKWh: r.Cost.EnergyUSDPerKWh})
		if len(samples) == 0 {
			gpu.Note = r.GPU.Note
		}
		sum.Warnings = append(sum.Warnings, gpu.Warnings...)
		return &gpu
	}
	return nil
}

// writeJSONLines writes values one a line; the merged copy of a shard's samples, best effort (the
// summary is computed from the values, not from this file).
func writeJSONLines[T any](path string, values []T) {
	var b bytes.Buffer
	for _, v := range values {
		if line, err := json.Marshal(v); err == nil {
			b.Write(append(line, '\n'))
		}
	}
	os.WriteFile(path, b.Bytes(), 0o644)
}
