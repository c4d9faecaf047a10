package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// MakeRunDir creates base/<name>-<YYYYmmdd-HHMMSS><suffix> (suffix: a shard's -shardIofN), adding
// -2, -3... if that exists already.
func MakeRunDir(base, name, suffix string) (string, error) {
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	stem := filepath.Join(base, name+"-"+time.Now().Format("20060102-150405")+suffix)
	dir := stem
	for i := 2; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) || i > 100 {
			return "", err
		}
		dir = fmt.Sprintf("%s-%d", stem, i)
	}
}

// AbsPath is p made absolute, or p itself when it cannot be.
func AbsPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Interruptible cancels the returned context on the first SIGINT, SIGTERM or SIGHUP, saying so on
// stderr, and exits the process at once on the second.
func Interruptible(parent context.Context, stderr io.Writer) (context.Context, func()) {
	return onSignal(parent, stderr)
}

// QuietInterrupt cancels the returned context on the first SIGINT, SIGTERM or SIGHUP, silently, and
// never exits the process: between the runs of a longer job (plload matrix's parts), where no run's
// own handler is installed, a signal then ends the job as interrupted with its report written.
func QuietInterrupt(parent context.Context) (context.Context, func()) {
	return onSignal(parent, nil)
}

// onSignal cancels the returned context on the first signal; with a writer (loud) it says so and
// exits the process at a second signal.
func onSignal(parent context.Context, loud io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-signals:
			if loud != nil {
				fmt.Fprintf(loud, "\n%s: stopping — cancelling requests in flight and writing the partial stage (again to quit at once)\n", sig)
			}
			cancel()
		case <-done:
			return
		}
		if loud == nil {
			return
		}
		select {
		case <-signals:
			fmt.Fprintln(loud, "second signal: exiting now")
			os.Exit(int(Interrupted))
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(signals)
		close(done)
		cancel()
	}
}
