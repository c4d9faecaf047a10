package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// qwen3JSON is Qwen3's tokenizer.json, from the tokenizer package's testdata (Apache-2.0).
func qwen3JSON(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("tokenizer", "testdata", "qwen3", "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestTokenizeMatchesHuggingFace: `plload tokenize --jsonl` over the shared corpus writes, line for
// line, the ids Hugging Face's tokenizers gave for Qwen3 and for o200k_base; TEXT arguments print a
// count and, with --ids, the ids; bad input exits 2 naming the line.
func TestTokenizeMatchesHuggingFace(t *testing.T) {
	dir := t.TempDir()
	qwen := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(qwen, qwen3JSON(t), 0o644); err != nil {
		t.Fatal(err)
	}
	corpus := filepath.Join("tokenizer", "testdata", "corpus.jsonl")
	code, out, errOut := plload(t, "tokenize", "--tokenizer", dir, "--jsonl", corpus)
	want, err := os.ReadFile(filepath.Join("tokenizer", "testdata", "qwen3", "ids.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if norm := func(s string) string { return strings.ReplaceAll(s, " ", "") }; norm(out) != norm(string(want)) {
		got, exp := strings.Split(out, "\n"), strings.Split(norm(string(want)), "\n")
		for i := range min(len(got), len(exp)) {
			if norm(got[i]) != exp[i] {
				t.Fatalf("corpus line %d: got %s, want %s", i+1, got[i], exp[i])
			}
		}
		t.Fatalf("%d lines, want %d", len(got), len(exp))
	}
	// o200k_base by default; its special tokens' text is plain text, as tiktoken's encode_ordinary.
	code, out, _ = plload(t, "tokenize", "--ids", "Hello, world", "<|endoftext|>")
	if lines := strings.Split(out, "\n"); code != 0 || len(lines) != 3 || lines[0] != "3 [13225,11,2375]" || strings.HasPrefix(lines[1], "1 ") {
		t.Fatalf("o200k_base: exit %d, %q", code, out)
	}
	if code, out, _ = plload(t, "tokenize", "--tokenizer", qwen, "--ids", "<|im_start|>"); code != 0 || out != "1 [151644]\n" {
		t.Fatalf("Qwen3's added token: exit %d, %q (want one id, 151644)", code, out)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"text\": \"a\"}\n{\"txt\": \"b\"}\n"), 0o644)
	if code, _, errOut = plload(t, "tokenize", "--jsonl", bad); code != 2 || !strings.Contains(errOut, "bad.jsonl line 2: no \"text\" key") {
		t.Fatalf("a line without text: exit %d, %s", code, errOut)
	}
	if code, _, errOut = plload(t, "tokenize"); code != 2 || !strings.Contains(errOut, "TEXT arguments or --jsonl FILE") {
		t.Fatalf("nothing to count: exit %d, %s", code, errOut)
	}
}

// TestTokenizerFromAStandInHub: a repo id resolves from a loopback stand-in for the Hugging Face hub
// (its /{org}/{name}/resolve/{revision}/tokenizer.json layout, X-Repo-Commit) into the standard cache
// layout; a later process with the hub gone and HF_HUB_OFFLINE=1 counts from the cache; a gated repo
// and an uncached one offline exit 2 with the fix, and a scenario naming one is refused before any
// traffic.
func TestTokenizerFromAStandInHub(t *testing.T) {
	bin := buildBinary(t)
	body := qwen3JSON(t)
	const commit = "0123456789abcdef0123456789abcdef01234567"
	var requests atomic.Int64
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch r.URL.Path {
		case "/acme/qwen3-test/resolve/main/tokenizer.json":
			w.Header().Set("X-Repo-Commit", commit)
			w.Header().Set("ETag", `"qwen3-etag-1"`)
			w.Write(body)
		case "/acme/gated/resolve/main/tokenizer.json":
			w.Header().Set("X-Error-Code", "GatedRepo")
			http.Error(w, "Access to model acme/gated is restricted", http.StatusUnauthorized)
		default:
			http.NotFound(w, r)
		}
	}))
	cache := t.TempDir()
	plloadEnv := func(offline bool, args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "HF_HUB_CACHE="+cache, "HF_ENDPOINT="+hub.URL, "HF_TOKEN=", "HF_HUB_OFFLINE=")
		if offline {
			cmd.Env = append(cmd.Env, "HF_HUB_OFFLINE=1")
		}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errOut.String()
	}
	if code, out, errOut := plloadEnv(false, "tokenize", "--tokenizer", "acme/qwen3-test", "--ids", "<|im_start|>hi"); code != 0 || out != "2 [151644,6023]\n" {
		t.Fatalf("from the stand-in hub: exit %d, %q, %s", code, out, errOut)
	}
	snap := filepath.Join(cache, "models--acme--qwen3-test", "snapshots", commit, "tokenizer.json")
	if ref, err := os.ReadFile(filepath.Join(cache, "models--acme--qwen3-test", "refs", "main")); err != nil || string(ref) != commit {
		t.Fatalf("refs/main: %q, %v", ref, err)
	}
	if got, err := os.ReadFile(snap); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("the snapshot's tokenizer.json: %v", err)
	}
	hub.Close()
	before := requests.Load()
	if code, out, errOut := plloadEnv(true, "tokenize", "--tokenizer", "acme/qwen3-test", "<|im_start|>hi"); code != 0 || out != "2\n" {
		t.Fatalf("offline from the cache: exit %d, %q, %s", code, out, errOut)
	}
	scenario := filepath.Join(t.TempDir(), "s.yaml")
	smoke, err := os.ReadFile(filepath.Join("scenarios", "smoke.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(scenario, []byte(strings.Replace(string(smoke), "  timeout: 20s\n", "  timeout: 20s\n  tokenizer: acme/qwen3-test\n", 1)), 0o644)
	if code, _, errOut := plloadEnv(true, "validate", scenario); code != 0 {
		t.Fatalf("a scenario counting in the cached repo's tokenizer: exit %d, %s", code, errOut)
	}
	if requests.Load() != before {
		t.Fatal("the offline runs asked the hub")
	}
	code, _, errOut := plloadEnv(true, "tokenize", "--tokenizer", "acme/other", "x")
	if code != 2 || !strings.Contains(errOut, "acme/other") || !strings.Contains(errOut, "HF_HUB_OFFLINE") {
		t.Fatalf("offline and not cached: exit %d, %s", code, errOut)
	}
	os.WriteFile(scenario, []byte(strings.Replace(string(smoke), "  timeout: 20s\n", "  timeout: 20s\n  tokenizer: acme/other\n", 1)), 0o644)
	if code, out, errOut := plloadEnv(true, "run", scenario, "--out", t.TempDir()); code != 2 || !strings.Contains(errOut, "target.tokenizer") || strings.Contains(out, "stage 01") {
		t.Fatalf("a run whose tokenizer cannot be had: exit %d, %s%s", code, out, errOut)
	}
	// A live hub that refuses: gated.
	gated := httptest.NewServer(hub.Config.Handler)
	defer gated.Close()
	cmd := exec.Command(bin, "tokenize", "--tokenizer", "acme/gated", "x")
	cmd.Env = append(os.Environ(), "HF_HUB_CACHE="+cache, "HF_ENDPOINT="+gated.URL, "HF_TOKEN=", "HF_HUB_OFFLINE=")
	var gatedErr bytes.Buffer
	cmd.Stderr = &gatedErr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(gatedErr.String(), "HF_TOKEN") || !strings.Contains(gatedErr.String(), gated.URL+"/acme/gated/resolve/main/tokenizer.json") {
		t.Fatalf("gated: %v, %s", err, gatedErr.String())
	}
	sc := bufio.NewScanner(strings.NewReader(gatedErr.String()))
	for sc.Scan() {
		t.Log(sc.Text())
	}
}
