package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFeatureInputRefusedBeforeTraffic: bad request-feature input stops `plload run` with exit 2,
// naming the file, the line and the key, before any request: a tools file not in OpenAI's layout, a
// schema that does not compile, a weight ≤ 0, requests ≤ 0, stream false with a TTFT SLO.
func TestFeatureInputRefusedBeforeTraffic(t *testing.T) {
	base, err := os.ReadFile(filepath.Join("scenarios", "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tools.json"), []byte(`{"name": "search"}`), 0o644)
	cases := []struct{ name, old, new, want string }{
		{"tools file", "    count: 6\n", "    file: tools.json\n", "session.tools.file"},
		{"schema", "        confidence: {type: number}\n", "        confidence: {type: numbr}\n", "session.response_format.schema"},
		{"weight", "{name: sql-lora, weight: 1}", "{name: sql-lora, weight: 0}", "target.models"},
		{"requests", "    - {concurrency: 4, warmup: 2s, duration: 6s}", "    - {concurrency: 4, warmup: 2s, duration: 6s, requests: 0}", "requests"},
		{"stream false with a TTFT SLO", "  timeout: 10s\n", "  timeout: 10s\n  stream: false\n", "slo.ttft"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(string(base), c.old, c.new, 1)
			if text == string(base) {
				t.Fatalf("the edit %q did not apply", c.old)
			}
			path := filepath.Join(dir, "s.yaml")
			os.WriteFile(path, []byte(text), 0o644)
			code, out, errOut := plload(t, "run", path, "--out", t.TempDir())
			if code != 2 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "s.yaml:") || !strings.Contains(errOut, "nothing was sent") || strings.Contains(out, "stage 01") {
				t.Fatalf("exit %d; stderr:\n%s", code, errOut)
			}
		})
	}
}
