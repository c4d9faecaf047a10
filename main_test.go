package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plload/plload/workload"
)

// plload runs the CLI in-process and returns its exit code, stdout and stderr.
func plload(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"plload"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestValidateSmoke(t *testing.T) {
	code, out, errOut := plload(t, "validate", "scenarios/smoke.yaml")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	sc, issues := workload.Load("scenarios/smoke.yaml", workload.LoadOptions{})
	if issues.Err() != nil {
		t.Fatal(issues.Err())
	}
	w, err := sc.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: smoke", "base_url: mock", "stage  load", "E[turns]", "concurrency 2", "concurrency 4",
		w.Stages[0].SHA256, w.Stages[1].SHA256, "no warnings"} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
}

func TestValidateBadScenario(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: x\ntarget: {base_url: mock}\npersonas: {count: 0, system_prompt_tokens: 10}\n"), 0o644)
	code, out, errOut := plload(t, "validate", bad)
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if out != "" {
		t.Fatalf("a bad scenario printed a resolved scenario:\n%s", out)
	}
	for _, want := range []string{bad + ":3:19: personas.count: found 0", bad + ":1:1: session: required but missing; accepted: a mapping with turns, user_input_tokens, max_output_tokens, think_time", "load: required but missing", "nothing was sent"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"validate"}, 2, "expected one argument"},
		{[]string{"validate", "no/such/file.yaml"}, 2, "cannot read the scenario file"},
		{[]string{"validate", "--nope", "x"}, 2, "flag provided but not defined"},
		{[]string{"mockserver", "--tps", "0"}, 2, "--tps 0: accepted: tokens per second"},
		{[]string{"mockserver", "--error-rate", "0.7", "--cut-rate", "0.5"}, 2, "add up to 1.2"},
		{[]string{"mockserver", "extra"}, 2, "takes no arguments"},
		{[]string{"selftest"}, 2, "not built yet"},
		{[]string{"report", "results/x"}, 2, "not built yet"},
		{[]string{"run", "scenarios/smoke.yaml"}, 2, "not built yet"},
		{[]string{"run", "no/such.yaml"}, 2, "cannot read the scenario file"},
		{[]string{"version"}, 0, ""},
	}
	for _, tc := range cases {
		code, out, errOut := plload(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("plload %v: exit %d (want %d), output lacks %q:\n%s%s", tc.args, code, tc.code, tc.want, out, errOut)
		}
	}
	_, out, _ := plload(t, "version")
	if !strings.HasPrefix(out, "plload ") || !strings.Contains(out, "go1.") {
		t.Errorf("version output: %q", out)
	}
}

// syncBuffer is a bytes.Buffer safe to write from the command and read from the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMockserverServesAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"plload", "mockserver", "--addr", "127.0.0.1:0", "--model", "cli-model"}, &out, &errOut)
	}()
	var url string
	deadline := time.Now().Add(10 * time.Second)
	for url == "" {
		if time.Now().After(deadline) {
			t.Fatalf("mockserver did not say where it listens: %q %q", out.String(), errOut.String())
		}
		if _, rest, ok := strings.Cut(out.String(), "listening on "); ok {
			url, _, _ = strings.Cut(rest, " ")
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Get(url + "/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "cli-model") {
		t.Fatalf("/v1/models: %s", body)
	}
	// A second mock on the same port is refused with exit 2.
	host := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/v1")
	if c, _, e := plload(t, "mockserver", "--addr", host); c != 2 || !strings.Contains(e, "another server using the port") {
		t.Fatalf("busy port: exit %d: %s", c, e)
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d after a stop signal: %s", c, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("mockserver did not stop")
	}
}

func TestHelpOnEveryCommand(t *testing.T) {
	for _, cmd := range newApp(nil, nil).Commands {
		code, out, _ := plload(t, cmd.Name, "--help")
		if code != 0 || !strings.Contains(out, "USAGE") || !strings.Contains(out, cmd.Usage) {
			t.Errorf("%s --help: exit %d\n%s", cmd.Name, code, out)
		}
	}
	code, out, _ := plload(t, "--help")
	for _, name := range []string{"run", "validate", "mockserver", "selftest", "report", "version"} {
		if code != 0 || !strings.Contains(out, name) {
			t.Errorf("top-level help lacks %s", name)
		}
	}
}
