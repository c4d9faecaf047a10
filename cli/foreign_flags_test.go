package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestForeignAndUnknownFlags: a flag a command does not define ends it with exit 2 and exactly one
// line on stderr (no help text), naming the flag as typed (its own dashes) and, for a flag of vllm
// bench serve, AIPerf or GuideLLM, what plload calls it: a flag on run and validate, a scenario key on
// the commands that take only a scenario file. Nothing reaches the server.
func TestForeignAndUnknownFlags(t *testing.T) {
	base, chats := countingMock(t)
	good := []string{"--base-url", base, "--model", "m", "--concurrency", "1", "--duration", "1s"}
	for _, tc := range []struct {
		name string
		args []string
		want string // the whole line, less "plload: " and the "see ... --help" that ends it
	}{
		{"save-result", append([]string{"run"}, append(good, "--save-result")...),
			"run: --save-result is a flag of vllm bench serve, not of plload run; in plload: results are always written, every request's record and vllm_bench_result.json included, under plload run's --out DIR (default results/; output.dir in a scenario); nothing was sent"},
		{"one dash as typed", []string{"run", "-save-result"}, "run: -save-result is a flag of vllm bench serve"},
		{"result-dir", []string{"run", "--result-dir", "x"}, "run: --result-dir is a flag of vllm bench serve, not of plload run; in plload: --out DIR of plload run"},
		{"host and port typed", []string{"run", "--host", "gpu1", "--port", "9000", "--model", "m"}, "run: --host is a flag of vllm bench serve, not of plload run; in plload: --base-url http://gpu1:9000/v1; nothing was sent"},
		{"port alone", []string{"run", "--port=9001"}, "run: --port is a flag of vllm bench serve, not of plload run; in plload: --base-url http://127.0.0.1:9001/v1"},
		{"endpoint", []string{"search", "--endpoint", "/v1/completions"}, "search: --endpoint is a flag of vllm bench serve, not of plload search; in plload: target.endpoint: the API's name, not its path: chat (POST /v1/chat/completions, the default), completions"},
		{"backend", []string{"validate", "--backend", "vllm"}, "validate: --backend is a flag of vllm bench serve, not of plload validate; in plload: nothing to pick: plload speaks the OpenAI API, chat completions unless target.endpoint: completions"},
		{"num-prompts with =", []string{"validate", "--num-prompts=5"}, "validate: --num-prompts is a flag of vllm bench serve, not of plload validate; in plload: --requests N"},
		{"aiperf request-count", append([]string{"run"}, append(good, "--request-count", "5")...), "run: --request-count is a flag of AIPerf, not of plload run; in plload: --requests N"},
		{"aiperf isl", []string{"run", "--synthetic-input-tokens-mean", "100"}, "run: --synthetic-input-tokens-mean is a flag of AIPerf, not of plload run; in plload: --isl N"},
		{"aiperf osl", []string{"run", "--output-tokens-mean", "100"}, "run: --output-tokens-mean is a flag of AIPerf, not of plload run; in plload: --osl N"},
		{"aiperf seed", []string{"run", "--random-seed", "3"}, "run: --random-seed is a flag of AIPerf, not of plload run; in plload: --seed N"},
		{"guidellm rate-type", []string{"run", "--rate-type", "poisson"}, "run: --rate-type is a flag of GuideLLM, not of plload run; in plload: synchronous → --concurrency 1"},
		{"guidellm rate", []string{"run", "--rate", "5"}, "run: --rate is a flag of GuideLLM, not of plload run; in plload: --request-rate R (poisson, constant) or --concurrency N"},
		{"guidellm max-requests", []string{"run", "--max-requests", "5"}, "run: --max-requests is a flag of GuideLLM, not of plload run; in plload: --requests N"},
		{"guidellm target on run", []string{"run", "--target", base}, "run: --target is a flag of GuideLLM, not of plload run; in plload: --base-url http://host:port/v1"},
		// Commands without run's flags get the scenario key.
		{"search seed", []string{"search", "--seed", "3", "x.yaml"}, "search: --seed is a flag of vllm bench serve and AIPerf, not of plload search; in plload: seed: N at the scenario's top level (plload run's --seed N)"},
		{"matrix num-prompts", []string{"matrix", "--num-prompts", "5"}, "matrix: --num-prompts is a flag of vllm bench serve, not of plload matrix; in plload: each stage's requests: N (plload run's --requests N)"},
		{"ab concurrency", []string{"ab", "--concurrency", "4"}, "ab: --concurrency is a flag of AIPerf, not of plload ab; in plload: load.mode: concurrency with each stage's concurrency: N"},
		{"search host", []string{"search", "--host", "h"}, "search: --host is a flag of vllm bench serve, not of plload search; in plload: target.base_url: http://h:8000/v1"},
		// Flags of no tool: the flag, and the plload commands that have it.
		{"unknown", append([]string{"run"}, append(good, "--frobnicate")...), "run: unknown flag --frobnicate"},
		{"another command's flag", []string{"matrix", "--knob", "x"}, "matrix: unknown flag --knob (a flag of plload search)"},
		{"root", []string{"--frobnicate"}, "unknown flag --frobnicate"},
		{"a value missing", []string{"run", "--out"}, "run: flag --out needs a value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := plload(t, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, stdout, stderr)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 || stdout != "" {
				t.Fatalf("want one line on stderr and nothing on stdout; got %d lines:\n%s\nstdout:\n%s", len(lines), stderr, stdout)
			}
			if !strings.HasPrefix(lines[0], "plload: "+tc.want) {
				t.Errorf("stderr does not start as wanted:\n got %s\nwant plload: %s", lines[0], tc.want)
			}
			sub := "plload"
			if !strings.HasPrefix(tc.args[0], "-") {
				sub += " " + tc.args[0]
			}
			if want := "; see " + sub + " --help"; !strings.HasSuffix(lines[0], want) {
				t.Errorf("stderr does not end with %q:\n%s", want, lines[0])
			}
		})
	}
	if n := chats.Load(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

// TestForeignFlagsAreNotPlloadFlags: the table's advice would be wrong where plload defines the flag
// itself; such a name reaches the table only on commands that lack it, and a name the table keeps for
// those (seed, model, ...) is one run really has.
func TestForeignFlagsAreNotPlloadFlags(t *testing.T) {
	runFlags := map[string]bool{}
	for _, name := range scenarioFlagNames() {
		runFlags[name] = true
	}
	var shadowed []string
	for _, cmd := range newApp(nil, nil).Commands {
		if !takesRunFlags(cmd) {
			continue
		}
		for _, f := range cmd.Flags {
			for _, n := range f.Names() {
				if _, ok := foreignFlags[n]; ok && !runFlags[n] && n != "out" && n != "quiet" {
					shadowed = append(shadowed, cmd.Name+" --"+n)
				}
			}
		}
	}
	if diff := cmp.Diff([]string(nil), shadowed); diff != "" {
		t.Errorf("flags of run or validate that the foreign table also advises on (-want +got):\n%s", diff)
	}
	for _, own := range []string{"seed", "model", "base-url", "concurrency", "request-rate", "tokenizer", "ignore-eos"} {
		if !runFlags[own] {
			t.Errorf("the table says plload run has --%s, but it does not", own)
		}
	}
}
