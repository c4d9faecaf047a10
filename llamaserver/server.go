// Package llamaserver runs a real llama.cpp server for plload's tests: Debian's llama-server,
// unpacked (not installed) by .ci/llama-server.sh, serving a tiny random-weight model this package
// writes with Qwen3's vocabulary and chat template (or, by ModelOptions.Pooling, an embedding model
// for --embeddings or a reranker for --reranking). Tests that need it call Require, which skips with
// the reason where the server is not at hand, and fails instead when PLLOAD_REAL_SERVER=require (CI).
package llamaserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Root is where .ci/llama-server.sh unpacked the packages: $PLLOAD_LLAMA_ROOT, else
// <user cache dir>/plload/llama.cpp/root.
func Root() string {
	if r := os.Getenv("PLLOAD_LLAMA_ROOT"); r != "" {
		return r
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(cache, "plload", "llama.cpp", "root")
}

// install is an unpacked llama-server: the program, its loader and library path, and the directory
// that holds ggml's CPU backends (ggml looks for them in the working directory).
type install struct {
	server, loader, libs, backends string
}

// find checks the unpacked tree; the error says what is missing and how to get it.
func find(root string) (install, error) {
	lib := filepath.Join(root, "usr", "lib", "x86_64-linux-gnu")
	in := install{
		server:   filepath.Join(root, "usr", "bin", "llama-server"),
		loader:   filepath.Join(lib, "ld-linux-x86-64.so.2"),
		libs:     lib + ":" + filepath.Join(lib, "llama"),
		backends: filepath.Join(lib, "ggml", "backends0"),
	}
	for _, p := range []string{in.server, in.loader, in.backends} {
		if _, err := os.Stat(p); err != nil {
			return in, fmt.Errorf("no llama.cpp server unpacked at %s (%s missing): run .ci/llama-server.sh, or set PLLOAD_LLAMA_ROOT", root, p)
		}
	}
	return in, nil
}

// Options start a server.
type Options struct {
	Model   string   // path of a GGUF model (TinyModel writes one)
	Slots   int      // -np: requests served at once (default 4)
	Context int      // -c: the context shared by the slots (default 16384)
	Threads int      // -t (default 2)
	Aliases []string // -a: the names the model is served under (default: llama.cpp's own)
	Mmproj  string   // --mmproj: a multimodal projector (WriteTinyProjector writes one), for images
	Extra   []string // more flags
}

// Server is a running llama-server on a loopback port.
type Server struct {
	URL  string // base URL with /v1, as a scenario's target.base_url
	Host string // http://127.0.0.1:PORT, for /metrics and /health
	cmd  *exec.Cmd
	log  *bytes.Buffer
	mu   *sync.Mutex
	done chan struct{}
}

// Start runs llama-server from the tree at root (Root() when empty) and waits until it answers
// /health, at most a minute.
func Start(ctx context.Context, root string, opt Options) (*Server, error) {
	if root == "" {
		root = Root()
	}
	in, err := find(root)
	if err != nil {
		return nil, err
	}
	if opt.Slots == 0 {
		opt.Slots = 4
	}
	if opt.Context == 0 {
		opt.Context = 16384
	}
	if opt.Threads == 0 {
		opt.Threads = 2
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"--library-path", in.libs, in.server, "-m", opt.Model, "--jinja", "--metrics",
		"-np", strconv.Itoa(opt.Slots), "-c", strconv.Itoa(opt.Context), "-t", strconv.Itoa(opt.Threads),
		"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--no-webui"}
	if len(opt.Aliases) > 0 {
		args = append(args, "-a", strings.Join(opt.Aliases, ","))
	}
	if opt.Mmproj != "" {
		args = append(args, "--mmproj", opt.Mmproj)
	}
	args = append(args, opt.Extra...)
	cmd := exec.Command(in.loader, args...)
	cmd.Dir = in.backends
	cmd.SysProcAttr = procAttr()
	s := &Server{Host: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, log: &bytes.Buffer{}, mu: &sync.Mutex{}, done: make(chan struct{})}
	s.URL = s.Host + "/v1"
	cmd.Stdout, cmd.Stderr = lockedWriter{s}, lockedWriter{s}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting llama-server: %w", err)
	}
	go func() { cmd.Wait(); close(s.done) }()
	if err := s.waitHealthy(ctx, time.Minute); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

type lockedWriter struct{ s *Server }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.s.log.Len() < 4<<20 {
		w.s.log.Write(p)
	}
	return len(p), nil
}

// Log is what the server printed so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

func (s *Server) waitHealthy(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Host+"/health", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("llama-server exited before it was ready:\n%s", tail(s.Log(), 3000))
		case <-ctx.Done():
			return fmt.Errorf("llama-server not ready within %s:\n%s", limit, tail(s.Log(), 3000))
		case <-tick.C:
		}
	}
}

// Close stops the server and waits for it to exit.
func (s *Server) Close() {
	if s.cmd.Process != nil {
		s.cmd.Process.Signal(os.Interrupt)
	}
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// ErrNoServer is wrapped by Require's errors when the server is not unpacked.
var ErrNoServer = errors.New("no llama.cpp server")

// FreshConnections opens a connection a request, for a test that talks to the server directly.
// llama-server closes a connection after an answer although it announced keep-alive (measured:
// about one request in three after a stream failed with EOF on the reused connection), and Go does
// not retry a POST. plload's engine retries such a request itself (engine/request.go, retryable); a
// test that sends its own requests has no such retry, so it does not reuse a connection at all.
var FreshConnections = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
