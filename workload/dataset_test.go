package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func loadFile(t testing.TB, path string) *Scenario {
	t.Helper()
	s, issues := Load(path, LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestResolvedGolden pins scenario.resolved.yaml for smoke.yaml; regenerate with -update and read the diff.
func TestResolvedGolden(t *testing.T) {
	s := loadFile(t, "../scenarios/smoke.yaml")
	got, err := s.ResolvedYAML()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "smoke.resolved.yaml")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./workload -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Fatalf("resolved YAML differs from %s (-want +got):\n%s", golden, diff)
	}
}

// TestResolvedRoundTrip: the resolved file is itself a valid scenario that resolves to the same text
// and the same workload, for every bundled scenario.
func TestResolvedRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("../scenarios/*.yaml")
	if len(files) < 5 {
		t.Fatalf("want the 5 bundled scenarios, found %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s := loadFile(t, f)
			first, err := s.ResolvedYAML()
			if err != nil {
				t.Fatal(err)
			}
			again, issues := Parse(f, first, LoadOptions{Getenv: noEnv})
			if err := issues.Err(); err != nil {
				t.Fatalf("resolved YAML does not load back: %v\n%s", err, first)
			}
			second, _ := again.ResolvedYAML()
			if diff := cmp.Diff(string(first), string(second)); diff != "" {
				t.Fatalf("resolving twice changes the text (-first +second):\n%s", diff)
			}
		})
	}
}

func TestSecretsMasked(t *testing.T) {
	text := insertUnder(t, []edit{{0, `  headers: {Authorization: "Bearer sk-SENTINEL", X-Api-Key: sk-SENTINEL2, X-Team: blue}`}}, map[string]int{"target.": 5}, "target.")
	s, out := resolvedOf(t, text)
	if bytes.Contains(out, []byte("SENTINEL")) || !bytes.Contains(out, []byte("X-Team: blue")) {
		t.Fatalf("secrets not masked or non-secret header lost:\n%s", out)
	}
	if s.Target.Headers["Authorization"] != "Bearer sk-SENTINEL" {
		t.Fatal("masking changed the scenario itself")
	}
}

// TestDatasetDeterministic: same scenario + seed ⇒ byte-identical datasets. The pinned sha256 makes a
// change of the generator (or a platform that draws differently) fail here rather than silently
// change the workload identity that `plload report` compares.
func TestDatasetDeterministic(t *testing.T) {
	s := loadFile(t, "../scenarios/smoke.yaml")
	a, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadFile(t, "../scenarios/smoke.yaml").Build()
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Stages {
		if !bytes.Equal(datasetOf(t, &a.Stages[i]), datasetOf(t, &b.Stages[i])) || a.Stages[i].SHA256 != b.Stages[i].SHA256 {
			t.Fatalf("stage %d: two builds differ", i+1)
		}
	}
	golden := filepath.Join("testdata", "smoke.sha256")
	var got strings.Builder
	for _, st := range a.Stages {
		got.WriteString(st.SHA256 + "\n")
	}
	if *update {
		_ = os.WriteFile(golden, []byte(got.String()), 0o644)
	}
	want, _ := os.ReadFile(golden)
	if got.String() != string(want) {
		t.Fatalf("smoke dataset sha256 changed:\nwant %s\ngot  %s(if the generator changed on purpose, run with -update)", want, got.String())
	}
	// A different seed gives a different workload.
	s.Seed++
	c, _ := s.Build()
	if c.Stages[0].SHA256 == a.Stages[0].SHA256 {
		t.Fatal("seed does not change the dataset")
	}
}

// TestDatasetLayout: dataset.jsonl is AIPerf's multi_turn layout with the system prompt first, and it
// says what the engine will send.
func TestDatasetLayout(t *testing.T) {
	s := loadFile(t, "../scenarios/rag-assistant.yaml")
	s.Load.Stages = s.Load.Stages[:1]
	w, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	pool := w.Stages[0]
	lines := bytes.Split(bytes.TrimSpace(datasetOf(t, &pool)), []byte("\n"))
	if len(lines) != len(pool.Sessions) {
		t.Fatalf("%d lines for %d sessions", len(lines), len(pool.Sessions))
	}
	for i, l := range lines[:20] {
		var got datasetSession
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		sp := pool.Sessions[i]
		if got.SessionID != sp.ID || got.Turns[0].Role != "system" || got.Turns[0].Text != w.Personas[sp.Persona].SystemPrompt {
			t.Fatalf("line %d: session id or system prompt wrong", i+1)
		}
		cur := pool.Cursor(i)
		for k := 0; ; k++ {
			turn, text, ok := cur.Next()
			if !ok {
				break
			}
			dt := got.Turns[k+1]
			if dt.Role != "user" || dt.Text != text || dt.OutputLength != int(turn.MaxOutputTokens) || dt.Delay != turn.ThinkBefore.Milliseconds() {
				t.Fatalf("line %d turn %d does not match the plan", i+1, k)
			}
			if k == 0 && dt.Delay != 0 {
				t.Fatalf("first turn has a think time")
			}
			if !strings.HasPrefix(text, "Reference document") {
				t.Fatalf("RAG turn does not start with its document: %.60q", text)
			}
		}
	}
}

// TestTokenAccuracy: generated texts land on their token targets, measured by the real o200k_base
// encoder over ≥ 1,000 texts per language (the spec allows ±2 %, ±1 under 50 tokens; we land exactly).
func TestTokenAccuracy(t *testing.T) {
	for _, lang := range []string{"en", "ko"} {
		g, err := NewTextGen(lang, o200kForTest(t))
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(7, 7))
		worst := 0.0
		for i := range 1200 {
			n := 1 + r.IntN(400)
			if i%100 == 0 {
				n = 1000 + r.IntN(3000)
			}
			text := g.Prose(r, n)
			got := g.Count(text)
			tol := math.Max(1, 0.02*float64(n))
			if n < 50 {
				tol = 1
			}
			if d := math.Abs(float64(got - n)); d > tol {
				t.Fatalf("%s: target %d, got %d tokens: %q", lang, n, got, text)
			} else {
				worst = math.Max(worst, d/float64(n))
			}
		}
		t.Logf("%s: 1200 texts, worst relative error %.4f", lang, worst)
	}
}

func TestProseReadsLikeProse(t *testing.T) {
	g, _ := NewTextGen("en", o200kForTest(t))
	text := g.Prose(rand.New(rand.NewPCG(1, 1)), 200)
	words := strings.Fields(text)
	if len(words) < 100 || !strings.HasSuffix(text, ".") || strings.Count(text, ".") < 5 {
		t.Fatalf("does not read like sentences: %q", text)
	}
	for _, w := range words {
		if strings.ContainsAny(w, "0123456789\x00") {
			t.Fatalf("odd word %q", w)
		}
	}
	k, _ := NewTextGen("ko", o200kForTest(t))
	kt := k.Prose(rand.New(rand.NewPCG(1, 1)), 200)
	if !strings.ContainsRune(kt, '다') || strings.ContainsAny(kt, "abcdefghijklmnopqrstuvwxyz") {
		t.Fatalf("Korean text is not Korean: %q", kt)
	}
}

// TestZipfFrequencies draws personas with Zipf(s) and compares the counts to the law with a chi-square
// test. The seed is fixed, so the statistic is a fixed number; the bound is the 99.9 % quantile.
func TestZipfFrequencies(t *testing.T) {
	const n, draws = 10, 200000
	for _, s := range []float64{0.5, 1.0, 1.5} {
		p := NewPersonaPicker(n, "zipf", s)
		r := rand.New(rand.NewPCG(11, 12))
		counts := make([]float64, n)
		for range draws {
			counts[p.Pick(r)]++
		}
		chi := 0.0
		norm := 0.0
		for k := 1; k <= n; k++ {
			norm += math.Pow(float64(k), -s)
		}
		for k := range n {
			expected := draws * math.Pow(float64(k+1), -s) / norm
			chi += (counts[k] - expected) * (counts[k] - expected) / expected
		}
		if chi > 27.88 { // chi-square, 9 degrees of freedom, p = 0.001
			t.Fatalf("s=%g: chi-square %.2f over 27.88; counts %v", s, chi, counts)
		}
		if counts[0] <= counts[1] || counts[1] <= counts[n-1] {
			t.Fatalf("s=%g: not decreasing in rank: %v", s, counts)
		}
	}
	u := NewPersonaPicker(4, "uniform", 1)
	if u.Probability(3) != 0.25 {
		t.Fatal("uniform picker is not uniform")
	}
}

// TestDistMeans: the exact E after rounding and clamping matches a large sample.
func TestDistMeans(t *testing.T) {
	cases := []Dist{
		Uniform(2, 4),
		Constant(7),
		{Kind: DistLognormal, Mean: 60, Sigma: 0.6, HasMean: true, HasSigma: true, Min: 10, Max: 300, HasMin: true, HasMax: true},
		{Kind: DistExponential, Mean: 5, HasMean: true, Min: 2, Max: 12, HasMin: true, HasMax: true},
		{Kind: DistExponential, Mean: 3, HasMean: true},
		{Kind: DistLognormal, Mean: 3, Sigma: 1, HasMean: true, HasSigma: true, Max: 8, HasMax: true},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, d := range cases {
		const n = 400000
		sum, sumSq := 0.0, 0.0
		for range n {
			x := float64(d.SampleInt(r))
			sum += x
			sumSq += x * x
		}
		mean := sum / n
		se := math.Sqrt((sumSq/n - mean*mean) / n)
		if math.Abs(mean-d.MeanInt()) > 5*se+1e-9 {
			t.Errorf("%+v: exact mean %.4f, sample mean %.4f ± %.4f", d, d.MeanInt(), mean, se)
		}
	}
	think := []Dist{
		{Kind: DistExponential, Mean: 5, HasMean: true, Min: 1, Max: 30, HasMin: true, HasMax: true, Seconds: true},
		{Kind: DistLognormal, Mean: 8, Sigma: 0.5, HasMean: true, HasSigma: true, Min: 2, Max: 40, HasMin: true, HasMax: true, Seconds: true},
	}
	for _, d := range think {
		const n = 400000
		sum := 0.0
		for range n {
			sum += d.SampleDuration(r).Seconds()
		}
		if got := sum / n; math.Abs(got-d.MeanSeconds()) > 0.02*d.MeanSeconds() {
			t.Errorf("%+v: exact mean %.4f s, sample mean %.4f s", d, d.MeanSeconds(), got)
		}
	}
}

// TestStatsPromptGrowth: validate's prompt-token means grow with the history.
func TestStatsPromptGrowth(t *testing.T) {
	s := loadFile(t, "../scenarios/long-context.yaml")
	w, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stats(w)[0]
	if !(st.PromptFirst < st.PromptMid && st.PromptMid < st.PromptLast) || st.PromptLast < 8000 {
		t.Fatalf("prompt tokens do not grow into the 10k range: %+v", st)
	}
	if st.ExpectedTurns != 40 || st.PoolSize != 24 {
		t.Fatalf("E[turns] %v pool %d", st.ExpectedTurns, st.PoolSize)
	}
}

// BenchmarkBuildPersonaShared generates every stage of persona-shared.yaml (780 sessions).
func BenchmarkBuildPersonaShared(b *testing.B) {
	s := loadFile(b, "../scenarios/persona-shared.yaml")
	o200kForTest(b) // loaded once, before the clock
	var w *Workload
	for b.Loop() {
		var err error
		if w, err = s.Build(); err != nil {
			b.Fatal(err)
		}
	}
	tokens := 0 // counted after the clock: a pool's turns are drawn again to be read
	for _, p := range w.Personas {
		tokens += p.Tokens
	}
	for _, st := range w.Stages {
		for i := range st.Sessions {
			for _, turn := range st.Turns(i) {
				tokens += int(turn.UserTokens)
			}
		}
	}
	b.ReportMetric(float64(tokens), "tokens/op")
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkWriteDatasetPersonaShared: writing every stage's dataset.jsonl of persona-shared.yaml,
// each session drawn again (what the engine does before each stage), against building the workload.
func BenchmarkWriteDatasetPersonaShared(b *testing.B) {
	s := loadFile(b, "../scenarios/persona-shared.yaml")
	w, err := s.Build()
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for b.Loop() {
		size = 0
		for i := range w.Stages {
			if err := w.Stages[i].WriteDataset(io.Discard); err != nil {
				b.Fatal(err)
			}
			size += w.Stages[i].DatasetSize
		}
	}
	b.ReportMetric(float64(size), "bytes/op")
}

// datasetOf is the pool's dataset.jsonl as WriteDataset writes it, checked against the pool's
// sha256 (of the file and then the line naming the sessions past the pool) and size (what the build
// hashed is what is written).
func datasetOf(t testing.TB, p *StagePool) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := p.WriteDataset(&buf); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(slices.Clone(buf.Bytes()), p.Reuse.ruleLine()...))
	if got := hex.EncodeToString(sum[:]); got != p.SHA256 || int64(buf.Len()) != p.DatasetSize {
		t.Fatalf("stage %d: dataset written as %d bytes, sha256 %s; the build said %d bytes, %s", p.Stage, buf.Len(), got, p.DatasetSize, p.SHA256)
	}
	return buf.Bytes()
}
