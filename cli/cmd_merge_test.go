package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/plload/plload/metrics"
	"github.com/plload/plload/resultfiles"
)

// mergeScenario is two short stages on the mock with some errors, so error records, warmup rows
// and requests that end after the window are all in the records merge has to add up.
const mergeScenario = `name: mergesrc
seed: 11
target: {base_url: mock, mock: {ttft: 4ms, tps: 500, error_rate: 0.05, seed: 3}, timeout: 10s}
personas: {count: 3, system_prompt_tokens: {min: 20, max: 40}}
session: {turns: {min: 2, max: 4}, user_input_tokens: {min: 5, max: 15}, max_output_tokens: {min: 4, max: 10}, think_time: {min: 5ms, max: 20ms}}
load:
  mode: concurrency
  drain_timeout: 5s
  session_pool_factor: 40
  stages: [{concurrency: 5, warmup: 200ms, duration: 700ms}, {concurrency: 7, warmup: 100ms, duration: 500ms}]
slo: {ttft_p95: 1s, itl_p95: 100ms, error_rate_max: 0.5}
cost: {gpu_hourly_usd: 2}
`

// mergeOpenLoopScenario is an open-loop source: t0 is the schedule's origin, not a send.
const mergeOpenLoopScenario = `name: mergesrc
seed: 7
target: {base_url: mock, mock: {ttft: 4ms, tps: 500, error_rate: 0.05, seed: 2}, timeout: 5s}
session: {user_input_tokens: {min: 5, max: 15}, max_output_tokens: {min: 4, max: 10}}
personas: {count: 2, system_prompt_tokens: {min: 20, max: 40}}
load:
  mode: request_rate
  arrival: gamma
  cv: 2.0
  max_in_flight: 50
  drain_timeout: 5s
  stages: [{rate: 80, warmup: 200ms, duration: 600ms}, {rate: {from: 40, to: 120, over: 300ms}, duration: 500ms}]
slo: {ttft: {p95: 500ms}, error_rate: 0.5}
`

// mergeSource is one real single-process run of mergeScenario on the mock.
func mergeSource(t *testing.T) string { return mergeSourceOf(t, mergeScenario) }

// mergeSourceOf is one real single-process run of a scenario named mergesrc on the mock.
func mergeSourceOf(t *testing.T, scenario string) string {
	t.Helper()
	base := t.TempDir()
	path := filepath.Join(base, "mergesrc.yaml")
	os.WriteFile(path, []byte(scenario), 0o644)
	if code, stdout, stderr := plload(t, "run", path, "--out", base, "--quiet"); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(base, "mergesrc-*"))
	return dirs[0]
}

// splitRun makes n shard directories from a single run, as n shards of it would have written them:
// each keeps the sessions whose global ordinal ≡ its index mod n, its times in its own clock (the
// coordinator's minus offsets[i]), and a shard block. The engine counts a shard cannot split from
// the records (reused, never started, retried) go to shard 0.
func splitRun(t *testing.T, src string, n int, offsets []int64) []string {
	t.Helper()
	base := t.TempDir()
	var dirs []string
	for i := range n {
		d := filepath.Join(base, fmt.Sprintf("shard%d", i))
		os.MkdirAll(d, 0o755)
		copyFile(t, filepath.Join(src, "scenario.resolved.yaml"), filepath.Join(d, "scenario.resolved.yaml"))
		rep := readJSONMap(t, filepath.Join(src, "report.json"))
		rep["shard"] = map[string]any{"index": i, "count": n, "clock_offset_ns": offsets[i], "offset_uncertainty_ns": 1000}
		writeJSONMap(t, filepath.Join(d, "report.json"), rep)
		dirs = append(dirs, d)
	}
	stages, _ := filepath.Glob(filepath.Join(src, "stage_*"))
	for _, sd := range stages {
		splitStage(t, sd, dirs, offsets)
	}
	return dirs
}

// splitStage writes one stage of the source run into each shard directory.
func splitStage(t *testing.T, srcStage string, dirs []string, offsets []int64) {
	t.Helper()
	n := len(dirs)
	name := filepath.Base(srcStage)
	recs := make([][]*metrics.Record, n)
	f, _ := os.Open(filepath.Join(srcStage, "profile_export.jsonl"))
	defer f.Close()
	var minIssue int64
	minShard := -1
	if err := metrics.ReadRecords(f, func(r *metrics.Record) error {
		i := int(ordinalOf(r.ConversationID) % int64(n))
		recs[i] = append(recs[i], r)
		if minShard < 0 || r.CreditIssuedNs < minIssue {
			minIssue, minShard = r.CreditIssuedNs, i
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sessions := make([][]metrics.SessionRecord, n)
	data, _ := os.ReadFile(filepath.Join(srcStage, "sessions.jsonl"))
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var s metrics.SessionRecord
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatal(err)
		}
		i := int(ordinalOf(s.ConversationID) % int64(n))
		sessions[i] = append(sessions[i], s)
	}
	st := readJSONMap(t, filepath.Join(srcStage, "stage.json"))
	window := st["summary"].(map[string]any)["window"].(map[string]any)
	t0 := mustInt(t, window["t0_ns"])
	for i, d := range dirs {
		off := offsets[i]
		out := filepath.Join(d, name)
		os.MkdirAll(out, 0o755)
		copyFile(t, filepath.Join(srcStage, "dataset.jsonl"), filepath.Join(out, "dataset.jsonl"))
		copyFile(t, filepath.Join(srcStage, "run.log"), filepath.Join(out, "run.log"))
		var b []byte
		shardT0 := int64(0)
		for _, r := range slices.Backward(recs[i]) { // completion order differs per shard: reversed here
			if shardT0 == 0 || r.CreditIssuedNs < shardT0 {
				shardT0 = r.CreditIssuedNs
			}
			c := *r
			shiftRecordForTest(&c, -off)
			b = append(c.AppendJSON(b), '\n')
		}
		os.WriteFile(filepath.Join(out, "profile_export.jsonl"), b, 0o644)
		var sb []byte
		for _, s := range sessions[i] {
			s.ScheduledNs -= off
			if s.StartNs != 0 {
				s.StartNs -= off
			}
			if s.EndNs != 0 {
				s.EndNs -= off
			}
			sb = append(s.AppendJSON(sb), '\n')
		}
		os.WriteFile(filepath.Join(out, "sessions.jsonl"), sb, 0o644)
		// The shard that sent the first request has the run's t0; the others their own first issue.
		if i == minShard || shardT0 < t0 {
			shardT0 = t0
		}
		shardStageJSON(t, st, out, i, n, off, shardT0-t0, len(recs[i]), len(sessions[i]))
	}
}

// shardStageJSON writes a shard's stage.json: the source's, with the shard's window, counts and block.
func shardStageJSON(t *testing.T, src map[string]any, out string, i, n int, off, t0Delta int64, records, sessions int) {
	t.Helper()
	st := cloneJSONMap(t, src)
	st["shard"] = map[string]any{"index": i, "count": n, "clock_offset_ns": off, "offset_uncertainty_ns": 1000}
	window := st["summary"].(map[string]any)["window"].(map[string]any)
	for _, k := range []string{"t0_ns", "w_ns", "e_ns", "e_eff_ns"} {
		window[k] = json.Number(fmt.Sprint(mustInt(t, window[k]) - off + t0Delta))
	}
	eng := st["engine"].(map[string]any)
	eng["issued"], eng["sessions"] = records, sessions
	if i != 0 {
		eng["reused_sessions"], eng["never_started"], eng["retried_requests"] = 0, 0, 0
		delete(eng, "connections") // shard 0's, as the counts above: the merge sums the shards' own
	}
	writeJSONMap(t, filepath.Join(out, "stage.json"), st)
}

func shiftRecordForTest(r *metrics.Record, off int64) {
	r.CreditIssuedNs += off
	r.RequestStartNs += off
	for _, o := range []*metrics.Opt[int64]{&r.RequestAckNs, &r.RequestEndNs, &r.CancellationTimeNs, &r.IntendedStartNs} {
		if o.OK {
			o.V += off
		}
	}
}

func ordinalOf(id string) int64 {
	var n int64
	fmt.Sscanf(id[strings.LastIndexByte(id, '-')+1:], "%d", &n)
	return n
}

func TestMergeAddsUpToTheSingleRun(t *testing.T) {
	closed, open := mergeSource(t), mergeSourceOf(t, mergeOpenLoopScenario)
	for _, tc := range []struct {
		name    string
		src     string
		offsets []int64
	}{
		{"three shards, one clock", closed, []int64{0, 0, 0}},
		{"three shards, clocks off by +3.5 s and -1.25 s", closed, []int64{0, 3_500_000_000, -1_250_000_000}},
		{"two shards, both off", closed, []int64{-7_000_000_001, 42}},
		{"request_rate, four shards, clocks off", open, []int64{1_000_000, 0, -2_500_000_000, 77}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src
			single, err := resultfiles.ReadRun(src)
			if err != nil {
				t.Fatal(err)
			}
			dirs := splitRun(t, src, len(tc.offsets), tc.offsets)
			out := filepath.Join(t.TempDir(), "merged")
			code, stdout, stderr := plload(t, append(append([]string{"merge"}, dirs...), "--out", out)...)
			if code != 0 {
				t.Fatalf("merge: exit %d\n%s%s", code, stdout, stderr)
			}
			merged, err := resultfiles.ReadRun(out)
			if err != nil {
				t.Fatal(err)
			}
			checkRunMatchesSchema(t, out)
			if code, stdout, stderr := plload(t, "report", out); code != 0 || !strings.Contains(stdout, "**Headline**") {
				t.Errorf("plload report of the merged directory: exit %d\n%s%s", code, stdout, stderr)
			}
			if len(merged) != len(single) {
				t.Fatalf("%d merged stages, want %d", len(merged), len(single))
			}
			for k := range single {
				compareMergedStage(t, single[k], merged[k])
				compareRecords(t, filepath.Join(src, fmt.Sprintf("stage_%02d", k+1)), filepath.Join(out, fmt.Sprintf("stage_%02d", k+1)))
			}
		})
	}
}

// compareMergedStage: the merged stage's numbers are the single run's, field for field (to 1e-9:
// sums over another order), its warnings too but for the per-shard injector lines.
func compareMergedStage(t *testing.T, want, got *resultfiles.StageReport) {
	t.Helper()
	approx := cmpopts.EquateApprox(1e-9, 1e-9)
	if d := cmp.Diff(want.Summary, got.Summary, approx, cmpopts.IgnoreFields(metrics.StageSummary{}, "Warnings"), cmpopts.EquateEmpty()); d != "" {
		t.Errorf("stage %d summary (-single +merged):\n%s", want.Stage, d)
	}
	if d := cmp.Diff(want.Engine, got.Engine, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("stage %d engine counts (-single +merged):\n%s", want.Stage, d)
	}
	keep := func(ws []string, drop string) []string {
		return slices.DeleteFunc(slices.Clone(ws), func(w string) bool { return strings.Contains(w, drop) })
	}
	if d := cmp.Diff(keep(want.Summary.Warnings, "injector"), keep(got.Summary.Warnings, "shard"), cmpopts.EquateEmpty()); d != "" {
		t.Errorf("stage %d warnings (-single +merged):\n%s", want.Stage, d)
	}
	if d := cmp.Diff(want.Injector, got.Injector); d != "" {
		t.Errorf("stage %d injector (-single +merged):\n%s", want.Stage, d)
	}
}

// compareRecords: the merged file holds the single run's records, byte for byte but for
// session_num, which the merge numbers afresh in global order; sessions.jsonl its sessions.
func compareRecords(t *testing.T, srcStage, mergedStage string) {
	t.Helper()
	lines := func(path string) []string {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out []string
		var nums []int
		if err := metrics.ReadRecords(f, func(r *metrics.Record) error {
			nums = append(nums, r.SessionNum)
			r.SessionNum = 0
			out = append(out, string(r.AppendJSON(nil)))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out
	}
	want, got := lines(filepath.Join(srcStage, "profile_export.jsonl")), lines(filepath.Join(mergedStage, "profile_export.jsonl"))
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s records (-single +merged):\n%s", mergedStage, d)
	}
	sessionLines := func(path string) []string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out := strings.Split(strings.TrimSpace(string(data)), "\n")
		slices.Sort(out)
		return out
	}
	if d := cmp.Diff(sessionLines(filepath.Join(srcStage, "sessions.jsonl")), sessionLines(filepath.Join(mergedStage, "sessions.jsonl"))); d != "" {
		t.Errorf("%s sessions (-single +merged):\n%s", mergedStage, d)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readJSONMap(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // epoch ns do not fit a float64
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func cloneJSONMap(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	data, _ := json.Marshal(m)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out map[string]any
	dec.Decode(&out)
	return out
}

func writeJSONMap(t *testing.T, path string, m map[string]any) {
	t.Helper()
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, data, 0o644)
}

func mustInt(t *testing.T, v any) int64 {
	t.Helper()
	n, err := v.(json.Number).Int64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMergeRefusesWhatIsNotOneRun(t *testing.T) {
	src := mergeSource(t)
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, dirs []string) []string // returns the merge arguments before --out
		code    int
		want    []string // in the error (exit 2) or in merge.json and the warnings (--allow-partial)
	}{
		{"a different scenario", func(t *testing.T, d []string) []string {
			editFile(t, filepath.Join(d[1], "scenario.resolved.yaml"), "seed: 11", "seed: 12")
			return d
		}, 2, []string{shard1Dir, "ran a different scenario", "sha256"}},
		{"only output differs: the same run", func(t *testing.T, d []string) []string {
			editFile(t, filepath.Join(d[1], "scenario.resolved.yaml"), "dir: results/", "dir: /elsewhere/")
			return d
		}, 0, nil},
		{"a duplicate index", func(t *testing.T, d []string) []string {
			dup := filepath.Join(t.TempDir(), "again")
			copyDir(t, d[0], dup)
			return []string{d[0], d[1], dup, d[2]}
		}, 2, []string{"shard index 0 given twice", "again"}},
		{"a missing index", func(t *testing.T, d []string) []string { return []string{d[0], d[2]} },
			2, []string{"shard 1/3: no directory given", "--allow-partial"}},
		{"a missing index, allowed", func(t *testing.T, d []string) []string { return []string{d[0], d[2], "--allow-partial"} },
			1, []string{"shard 1/3 is missing from this stage", `"problem": "no directory given for this index"`}},
		{"a partial shard", func(t *testing.T, d []string) []string {
			os.Remove(filepath.Join(d[2], "stage_02", "stage.json"))
			return d
		}, 2, []string{"shard 2/3", "stage 02: no stage.json"}},
		{"a lost stage directory", func(t *testing.T, d []string) []string {
			os.RemoveAll(filepath.Join(d[2], "stage_02"))
			return d
		}, 2, []string{"shard 2/3: stage 02 missing"}},
		{"a corrupt records line", func(t *testing.T, d []string) []string {
			appendFile(t, filepath.Join(d[1], "stage_01", "profile_export.jsonl"), "{not a record\n")
			return d
		}, 2, []string{filepath.Join(shard1Dir, "stage_01", "profile_export.jsonl") + ":"}},
		{"a record of another shard's session", func(t *testing.T, d []string) []string {
			data, _ := os.ReadFile(filepath.Join(d[0], "stage_01", "profile_export.jsonl"))
			appendFile(t, filepath.Join(d[1], "stage_01", "profile_export.jsonl"), string(data[:bytes.IndexByte(data, '\n')+1]))
			return d
		}, 2, []string{"is not shard 1/3's", "≡ 1 mod 3"}},
		{"different datasets", func(t *testing.T, d []string) []string {
			appendFile(t, filepath.Join(d[2], "stage_01", "dataset.jsonl"), "{}\n")
			return d
		}, 2, []string{"dataset.jsonl differs"}},
		{"a run that is not sharded", func(t *testing.T, d []string) []string { return []string{src} },
			2, []string{"no shard block", "accepted:"}},
		{"not a directory", func(t *testing.T, d []string) []string { return []string{filepath.Join(d[0], "report.json")} },
			2, []string{"not a directory", "accepted:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dirs := splitRun(t, src, 3, []int64{0, 1_000_000, -2_000_000})
			args := tc.prepare(t, dirs)
			out := filepath.Join(t.TempDir(), "merged")
			code, stdout, stderr := plload(t, append(append([]string{"merge"}, args...), "--out", out)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, stdout, stderr)
			}
			text := stderr
			if code != 2 {
				man, _ := os.ReadFile(filepath.Join(out, "merge.json"))
				text = stdout + string(man)
			} else if _, err := os.Stat(out); err == nil {
				t.Errorf("refused, yet %s was written", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, strings.ReplaceAll(w, shard1Dir, dirs[1])) {
					t.Errorf("output lacks %q:\n%s", w, text)
				}
			}
			if strings.Contains(stderr, "panic") {
				t.Errorf("a panic:\n%s", stderr)
			}
		})
	}
}

// shard1Dir stands for shard 1's directory in a want string (its temp path is known only in the test).
const shard1Dir = "<shard1>"

func TestMergeRefusesAnOutThatIsNotEmpty(t *testing.T) {
	src := mergeSource(t)
	dirs := splitRun(t, src, 2, []int64{0, 0})
	out := t.TempDir()
	os.WriteFile(filepath.Join(out, "keep.txt"), []byte("mine"), 0o644)
	code, _, stderr := plload(t, append(append([]string{"merge"}, dirs...), "--out", out)...)
	if code != 2 || !strings.Contains(stderr, "not empty") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 {
		t.Errorf("the --out directory was touched: %v", entries)
	}
}

func editFile(t *testing.T, path, from, to string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(data, []byte(from)) {
		t.Fatalf("%s: %v, or no %q in it", path, err, from)
	}
	os.WriteFile(path, bytes.Replace(data, []byte(from), []byte(to), 1), 0o644)
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(text)
	f.Close()
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

func TestMergeShowsTheWorstInjectorAndAPartialShard(t *testing.T) {
	src := mergeSource(t)
	dirs := splitRun(t, src, 3, []int64{0, 5_000, -9_000})
	// Shard 2's injector was strained in stage 1.
	st := readJSONMap(t, filepath.Join(dirs[2], "stage_01", "stage.json"))
	inj := st["injector"].(map[string]any)
	inj["cpu_percent"], inj["cores"] = 390, 4
	writeJSONMap(t, filepath.Join(dirs[2], "stage_01", "stage.json"), st)
	// Shard 1 was killed during stage 2: no stage.json, and its last records line half-written.
	os.Remove(filepath.Join(dirs[1], "stage_02", "stage.json"))
	recPath := filepath.Join(dirs[1], "stage_02", "profile_export.jsonl")
	data, _ := os.ReadFile(recPath)
	kept := bytes.Count(data, []byte("\n")) - 1
	cut := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	os.WriteFile(recPath, data[:cut+(len(data)-cut)/2], 0o644)
	out := filepath.Join(t.TempDir(), "merged")
	code, stdout, stderr := plload(t, append(append([]string{"merge"}, dirs...), "--out", out, "--allow-partial")...)
	if code == 2 {
		t.Fatalf("merge: exit %d\n%s%s", code, stdout, stderr)
	}
	merged, err := resultfiles.ReadRun(out)
	if err != nil {
		t.Fatal(err)
	}
	one := merged[0]
	if one.Injector.CPUPercent != 390 || !slices.ContainsFunc(one.Summary.Warnings, func(w string) bool { return strings.HasPrefix(w, "shard 2/3: injector CPU busy") }) {
		t.Errorf("stage 1 shows injector %+v, warnings %q; want shard 2's, named", one.Injector, one.Summary.Warnings)
	}
	two := merged[1]
	if !two.Summary.Partial || !slices.ContainsFunc(two.Summary.Warnings, func(w string) bool { return strings.HasPrefix(w, "shard 1/3 is partial") }) {
		t.Errorf("stage 2: partial %v, warnings %q; want partial, naming shard 1", two.Summary.Partial, two.Summary.Warnings)
	}
	want := 0
	for i, d := range dirs {
		if i == 1 {
			want += kept
			continue
		}
		s, _ := resultfiles.ReadStage(filepath.Join(d, "stage_02", "stage.json"))
		want += s.Engine.Issued
	}
	if two.Summary.Requests.Total != want || two.Engine.Issued != want {
		t.Errorf("stage 2: %d records (engine %d), want %d: the two whole shards' and the killed one's whole lines", two.Summary.Requests.Total, two.Engine.Issued, want)
	}
	if man, _ := os.ReadFile(filepath.Join(out, "merge.json")); !bytes.Contains(man, []byte("stage 02: no stage.json")) {
		t.Errorf("merge.json does not name the partial shard:\n%s", man)
	}
}

// TestMergeExpandsPatterns: a pattern argument is expanded by merge itself — a Kubernetes merge Job
// passes `/results/<run>/shard-*/*` with no shell to expand it — and one that matches nothing is
// refused (exit 2), naming it.
func TestMergeExpandsPatterns(t *testing.T) {
	dirs := splitRun(t, mergeSource(t), 2, []int64{0, 0})
	pattern := filepath.Join(filepath.Dir(dirs[0]), "shard*")
	out := filepath.Join(t.TempDir(), "merged")
	if code, stdout, stderr := plload(t, "merge", pattern, "--out", out); code != 0 {
		t.Fatalf("merge %s: exit %d\n%s%s", pattern, code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "stage_01", "profile_export.jsonl")); err != nil {
		t.Fatal(err)
	}
	none := filepath.Join(t.TempDir(), "nothing-*")
	code, _, stderr := plload(t, "merge", none, "--out", filepath.Join(t.TempDir(), "m2"))
	if code != 2 || !strings.Contains(stderr, "matches no directory") {
		t.Errorf("a pattern matching nothing: exit %d\n%s", code, stderr)
	}
}
