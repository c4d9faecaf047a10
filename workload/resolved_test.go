package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// personaScenario is a scenario that names its persona file and CA file relative to itself, as users
// write them.
const personaScenario = `name: with-files
seed: 3
target:
  base_url: https://127.0.0.1:8443/v1
  model: m
  tls: {ca_file: certs/ca.pem}
personas:
  source: file
  file: personas.jsonl
session: {turns: 2, user_input_tokens: 10, max_output_tokens: 5, think_time: 0s}
load:
  mode: concurrency
  stages: [{concurrency: 2, duration: 1s}]
slo: {ttft_p95: 1s, itl_p95: 100ms, error_rate_max: 0.01}
cost: {gpu_hourly_usd: 1}
gate: ["ttft_p95 < 1ms"]
`

// TestResolvedIsSelfContained: the resolved scenario, written elsewhere and loaded from yet another
// working directory, still finds its persona and CA files and builds the same workload. Before it
// wrote absolute paths, loading it failed: personas.file stayed relative to the original scenario.
func TestResolvedIsSelfContained(t *testing.T) {
	src := t.TempDir()
	personas := `{"name":"Ada","system_prompt":"You are Ada, a careful tutor."}` + "\n" +
		`{"name":"Bo","system_prompt":"You are Bo, a patient guide."}` + "\n"
	for name, text := range map[string]string{"scenario.yaml": personaScenario, "personas.jsonl": personas, "certs/ca.pem": "not parsed by Load\n"} {
		if err := os.MkdirAll(filepath.Join(src, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Loaded the way `plload run scenario.yaml` is: a path relative to the working directory.
	t.Chdir(src)
	orig, issues := Load("scenario.yaml", LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	resolved, err := orig.ResolvedYAML()
	if err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	path := filepath.Join(results, "scenario.resolved.yaml")
	if err := os.WriteFile(path, resolved, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	again, issues := Load(path, LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil {
		t.Fatalf("the resolved scenario does not load from another directory: %v\n%s", err, resolved)
	}
	if want := filepath.Join(src, "personas.jsonl"); again.Personas.File != want {
		t.Errorf("personas.file = %q, want %q", again.Personas.File, want)
	}
	if want := filepath.Join(src, "certs", "ca.pem"); again.Target.TLS.CAFile != want {
		t.Errorf("target.tls.ca_file = %q, want %q", again.Target.TLS.CAFile, want)
	}
	sum := sha256.Sum256([]byte(personas))
	if line := "# sha256 " + hex.EncodeToString(sum[:]); !strings.Contains(string(resolved), line) {
		t.Errorf("no %q beside personas.file:\n%s", line, resolved)
	}
	w1, err := orig.Build()
	if err != nil {
		t.Fatal(err)
	}
	w2, err := again.Build()
	if err != nil {
		t.Fatal(err)
	}
	if w1.Stages[0].SHA256 != w2.Stages[0].SHA256 {
		t.Errorf("the resolved scenario builds another workload: dataset sha256 %s, the original's %s", w2.Stages[0].SHA256, w1.Stages[0].SHA256)
	}
	// Resolving the resolved file changes nothing (the file names are absolute already).
	twice, err := again.ResolvedYAML()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(resolved), string(twice)); diff != "" {
		t.Errorf("resolving twice changes the text (-first +second):\n%s", diff)
	}
}

// TestReadGateRules: the rules come back from a resolved scenario whatever else it names; a missing or
// malformed file is an error naming it, never an empty list.
func TestReadGateRules(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, path string
		want       []string
		err        []string // substrings of the error
	}{
		{"rules, persona file gone", write("a.yaml", personaScenario), []string{"ttft_p95 < 1ms"}, nil},
		{"no gate list", write("b.yaml", "name: x\n"), nil, nil},
		{"missing file", filepath.Join(dir, "absent.yaml"), nil, []string{"absent.yaml", "cannot read the run's scenario", "restore it"}},
		{"gate is not a list", write("c.yaml", "name: x\ngate: {a: 1}\n"), nil, []string{"c.yaml", "gate: cannot be read", "accepted: a list of rules"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadGateRules(tc.path)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if (err != nil) != (tc.err != nil) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
			for _, s := range tc.err {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}

// TestURLCredentialsMasked: a password in a URL's user info, or a key in its query, is a secret as
// much as an Authorization header is; before this, scenario.resolved.yaml and stage.json wrote
// target.base_url whole.
func TestURLCredentialsMasked(t *testing.T) {
	for raw, want := range map[string]string{
		"https://bob:sk-SENTINEL@api.example.com/v1":                 "https://bob:***@api.example.com/v1",
		"https://api.example.com/v1?api_key=sk-SENTINEL&region=eu":   "https://api.example.com/v1?api_key=***&region=eu",
		"https://api.example.com/v1?api-version=2024-06-01":          "https://api.example.com/v1?api-version=2024-06-01",
		"https://bob:${PASS}@${HOST}/v1?token=${TOKEN}":              "https://bob:${PASS}@${HOST}/v1?token=${TOKEN}",
		"https://bob:sk-SENTINEL@${HOST}:8443/v1?access_token=x%2Fy": "https://bob:***@${HOST}:8443/v1?access_token=***",
		"https://bob@api.example.com/v1":                             "https://bob@api.example.com/v1",
		"http://127.0.0.1:8000/v1":                                   "http://127.0.0.1:8000/v1",
		"nvidia-smi":                                                 "nvidia-smi",
		"mock":                                                       "mock",
		"":                                                           "",
	} {
		if got := MaskURL(raw); got != want {
			t.Errorf("MaskURL(%q) = %q, want %q", raw, got, want)
		}
	}

	text := strings.Replace(personaScenario, "  base_url: https://127.0.0.1:8443/v1\n",
		"  base_url: https://bob:sk-SENTINEL1@127.0.0.1:8443/v1\n"+
			"  server_metrics_url: http://127.0.0.1:8443/metrics?token=sk-SENTINEL2\n"+
			"  gpu_metrics_url: [http://ops:sk-SENTINEL3@127.0.0.1:9400/metrics, 127.0.0.1:9401]\n", 1)
	text = strings.Replace(text, "  tls: {ca_file: certs/ca.pem}\n", "", 1)
	text = strings.Replace(text, "personas:\n  source: file\n  file: personas.jsonl\n", "personas: {count: 2, system_prompt_tokens: 20}\n", 1)
	s, out := resolvedOf(t, text)
	if strings.Contains(string(out), "SENTINEL") || !strings.Contains(string(out), "bob:***@127.0.0.1:8443") || !strings.Contains(string(out), "127.0.0.1:9401") {
		t.Fatalf("URL credentials not masked, or a URL lost:\n%s", out)
	}
	if !strings.Contains(s.Target.BaseURL, "sk-SENTINEL1") || !strings.Contains(s.Target.GPUMetricsURL[0], "sk-SENTINEL3") {
		t.Fatal("masking changed the scenario itself")
	}
	rag := &Scenario{Session: Session{RAG: &RAGSpec{Embed: &StepTarget{BaseURL: "https://a:sk-SENTINEL4@embed.example/v1"}}}}
	if got := rag.Masked().Session.RAG.Embed.BaseURL; got != "https://a:***@embed.example/v1" || !strings.Contains(rag.Session.RAG.Embed.BaseURL, "SENTINEL4") {
		t.Fatalf("session.rag.embed.base_url masked as %q; the scenario's own is now %q", got, rag.Session.RAG.Embed.BaseURL)
	}
}

// resolvedOf is the scenario text parsed, and its scenario.resolved.yaml.
func resolvedOf(t *testing.T, text string) (*Scenario, []byte) {
	t.Helper()
	s, issues := Parse("t.yaml", []byte(text), LoadOptions{Getenv: noEnv})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	out, err := s.ResolvedYAML()
	if err != nil {
		t.Fatal(err)
	}
	return s, out
}
