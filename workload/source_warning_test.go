package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIgnoredSessionKeysNameWhatIsUsed: a session key a dataset replaces is a warning that names
// the key (or the file's field) that sets the value instead, so the user knows where to write it.
func TestIgnoredSessionKeysNameWhatIsUsed(t *testing.T) {
	dir := t.TempDir()
	copyTestdata(t, dir, "prompts.jsonl")
	for key, want := range map[string]string{
		"max_output_tokens: 64":  "session.max_output_tokens: ignored with workload.dataset: workload.dataset.output_tokens is used instead",
		"turns: 3":               "session.turns: ignored with workload.dataset: the file's turns are used instead (workload.dataset.max_turns caps them)",
		"user_input_tokens: 100": "session.user_input_tokens: ignored with workload.dataset: the file's prompts are used instead (workload.dataset.min_input_tokens and max_input_tokens filter them)",
	} {
		text := "name: ds\ntarget: {base_url: mock}\nworkload:\n  dataset: {file: prompts.jsonl, format: prompts}\nsession: {" + key + "}\n" +
			"load: {mode: concurrency, stages: [{concurrency: 2, duration: 1s}]}\n"
		path := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, issues := Load(path, LoadOptions{})
		if err := issues.Err(); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		var got []string
		for _, w := range issues.Warnings() {
			got = append(got, w.Error())
		}
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("%s: warnings\n%s\nwant one with %q", key, strings.Join(got, "\n"), want)
		}
	}
}
