package mock

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// ServeAsChild runs the mock with cfg as a process of its own: it prints the base URL on stdout and
// serves until stdin is closed, then returns the exit code. Benchmarks that must measure the client's
// CPU alone call it from TestMain when StartChild re-executed their test binary, so the mock and the
// client never share a Go runtime or its rusage.
func ServeAsChild(cfg Config) int {
	r, err := Start(cfg, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println(r.BaseURL())
	io.Copy(io.Discard, os.Stdin) // the parent closes stdin to stop us
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.Close(ctx)
	return 0
}

// StartChild re-executes the running test binary with env added (its TestMain sees it and calls
// ServeAsChild) and returns the child mock's base URL, and stop, which closes its stdin and waits
// for it to exit.
func StartChild(env ...string) (base string, stop func(), err error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("starting the child mock: %w", err)
	}
	stop = func() { stdin.Close(); cmd.Wait() }
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("the child mock did not say its address: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}
