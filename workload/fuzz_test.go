package workload

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: no input makes scenario parsing panic, and every error names the file and a position.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../scenarios/*.yaml")
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(baseScenario))
	f.Add([]byte("name: [\n"))
	f.Add([]byte("a: &x {b: *x}\n"))
	f.Add([]byte("session: {turns: {dist: lognormal, mean: 1e308, sigma: 1e308}}\n"))
	f.Add([]byte("load: {stages: &x [*x]}\n"))
	f.Add([]byte("target: {extra_body: {a: &a [1,1,1,1,1,1,1,1,1,1], b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a], c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b], d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c], e: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, issues := Parse("fuzz.yaml", data, LoadOptions{Getenv: noEnv})
		for _, is := range issues {
			if is.File != "fuzz.yaml" || is.Message == "" {
				t.Fatalf("issue without file or message: %+v", is)
			}
		}
		if issues.Err() == nil && s != nil {
			if _, err := s.ResolvedYAML(); err != nil {
				t.Fatalf("valid scenario cannot be resolved: %v", err)
			}
		}
	})
}
