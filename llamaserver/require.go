package llamaserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// RequireEnv names the variable that turns a missing server from a skip into a failure: CI sets it
// to "require" after unpacking the server, so the tier can never pass by skipping; "off" skips the
// tier (CI's race-detector pass, which would only run the same traffic slower).
const RequireEnv = "PLLOAD_REAL_SERVER"

// modelVersion changes whenever the model's bytes would.
const modelVersion = 1

// modelPaths writes each kind of tiny model once per process, into the cache beside the server.
var (
	modelMu    sync.Mutex
	modelPaths = map[ModelOptions]string{}
)

// TinyModel is the path of the tiny model for opt, written on first use into dir (the cache
// directory beside Root() when empty).
func TinyModel(dir string, opt ModelOptions) (string, error) {
	modelMu.Lock()
	defer modelMu.Unlock()
	if p, ok := modelPaths[opt]; ok {
		return p, nil
	}
	tok, cfg, ok := Qwen3Files()
	if !ok {
		return "", fmt.Errorf("%w: Qwen3's tokenizer files (tokenizer/testdata/qwen3) are not in this source tree", ErrNoServer)
	}
	if dir == "" {
		dir = filepath.Join(filepath.Dir(Root()), "models")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := checkPooling(opt.Pooling); err != nil {
		return "", err
	}
	// The name carries the writer's version: a model written by an older writer is never reused.
	name := fmt.Sprintf("tiny-qwen3-v%d-seed%d", modelVersion, opt.Seed)
	if opt.Pooling != "" {
		name += "-" + opt.Pooling
	}
	p := filepath.Join(dir, name+".gguf")
	if _, err := os.Stat(p); err == nil {
		modelPaths[opt] = p
		return p, nil
	}
	if err := WriteTinyQwen3(p, tok, cfg, opt); err != nil {
		return "", err
	}
	modelPaths[opt] = p
	return p, nil
}

// Require starts a llama-server with the tiny model for the test and stops it at the test's end. It
// skips, saying why, when the server is not unpacked, unless PLLOAD_REAL_SERVER=require.
func Require(t testing.TB, model ModelOptions, opt Options) *Server {
	t.Helper()
	miss := func(err error) {
		t.Helper()
		if os.Getenv(RequireEnv) == "require" {
			t.Fatalf("real-server tier: %v", err)
		}
		t.Skipf("real-server tier skipped: %v", err)
	}
	switch {
	case os.Getenv(RequireEnv) == "off":
		t.Skipf("real-server tier skipped: %s=off", RequireEnv)
	case testing.Short():
		t.Skip("real-server tier skipped in -short mode")
	}
	if _, err := find(Root()); err != nil {
		miss(err)
	}
	path, err := TinyModel("", model)
	if err != nil {
		miss(err)
	}
	opt.Model = path
	s, err := Start(context.Background(), "", opt)
	if err != nil {
		t.Fatalf("real-server tier: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// TokenizerJSON is the path of Qwen3's tokenizer.json, uncompressed beside the models, for a
// scenario's target.tokenizer: the tokenizer the tiny model was written with.
func TokenizerJSON() (string, error) {
	modelMu.Lock()
	defer modelMu.Unlock()
	tok, _, ok := Qwen3Files()
	if !ok {
		return "", fmt.Errorf("%w: Qwen3's tokenizer files (tokenizer/testdata/qwen3) are not in this source tree", ErrNoServer)
	}
	dir := filepath.Join(filepath.Dir(Root()), "models")
	p := filepath.Join(dir, "qwen3-tokenizer.json")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	data, err := readMaybeGzip(tok)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "qwen3-tokenizer.*.tmp")
	if err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return p, os.Rename(f.Name(), p)
}
