package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
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

// caught is the process's one subscription to the stop signals once CatchSignals made it: its
// goroutine hands each signal, under mu, to every handler installed (Interruptible, QuietInterrupt),
// or ends the process when none is. Deciding under the same lock that installs and removes
// handlers is what makes a signal never lost between a handler's removal and the next.
var caught struct {
	mu       sync.Mutex
	on       bool // subscribed, and not released
	handlers map[*interrupt]bool
	release  func()
}

// stopSignals are the signals that stop plload, less those the process was started ignoring:
// `nohup plload run …` ignores SIGHUP, a job a script starts with & ignores SIGINT, and
// signal.Notify would turn them back on — a soak run under nohup would stop when its terminal
// closed.
var stopSignals = func() []os.Signal {
	var sigs []os.Signal
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		if !signal.Ignored(sig) {
			sigs = append(sigs, sig)
		}
	}
	return sigs
}()

// notify relays stopSignals to c; none when every one is ignored (signal.Notify with no signal
// would relay them all).
func notify(c chan<- os.Signal) {
	if len(stopSignals) > 0 {
		signal.Notify(c, stopSignals...)
	}
}

// CatchSignals makes plload's answer to SIGINT, SIGTERM and SIGHUP its own from the process's first
// instant: main calls it before anything else. Without it a signal that came before a command
// installed its handler (while the scenario was read, the workload built, the target resolved)
// killed the process by the signal's default action, with no message and no exit code of plload's.
// With it, a signal while no handler is installed ends the process at once with exit 130 and a line
// on stderr; while one is, the handlers decide. Commands that handle the signals themselves (by
// signal.NotifyContext) call ReleaseSignals first.
func CatchSignals(stderr io.Writer) {
	caught.mu.Lock()
	defer caught.mu.Unlock()
	if caught.on {
		return
	}
	signals := make(chan os.Signal, 4)
	notify(signals)
	caught.on, caught.handlers = true, map[*interrupt]bool{}
	caught.release = func() { signal.Stop(signals) }
	go func() {
		for sig := range signals {
			caught.mu.Lock()
			if len(caught.handlers) == 0 {
				fmt.Fprintf(stderr, "\n%s: interrupted\n", sig)
				os.Exit(int(Interrupted))
			}
			for h := range caught.handlers {
				select {
				case h.signals <- sig:
				default: // its buffer holds two already: the second exits at once
				}
			}
			caught.mu.Unlock()
		}
	}()
}

// ReleaseSignals hands the stop signals back to a command that handles them itself (plload
// mockserver and coordinate shut down gracefully by signal.NotifyContext), where no handler of
// this package is installed: CatchSignals no longer exits at them.
func ReleaseSignals() {
	caught.mu.Lock()
	defer caught.mu.Unlock()
	if caught.on {
		caught.release()
		caught.on = false
	}
}

// subscribe installs h: with CatchSignals's subscription, into its handlers (false: not
// subscribed, and h has its own signal.Notify).
func (h *interrupt) subscribe() bool {
	caught.mu.Lock()
	defer caught.mu.Unlock()
	if caught.on {
		caught.handlers[h] = true
		return true
	}
	notify(h.signals)
	return false
}

// unsubscribe uninstalls h: once it returns, no signal is handed to h any more.
func (h *interrupt) unsubscribe() {
	caught.mu.Lock()
	defer caught.mu.Unlock()
	if !h.dispatched {
		signal.Stop(h.signals) // waits for a delivery under way
		return
	}
	delete(caught.handlers, h)
}

// Interruptible cancels the returned context on the first SIGINT, SIGTERM or SIGHUP, saying so on
// stderr, and exits the process at once on the second.
func Interruptible(parent context.Context, stderr io.Writer) (context.Context, func()) {
	h := newInterrupt(parent, stderr)
	return h.ctx, func() { h.stop() }
}

// QuietInterrupt cancels the returned context on the first SIGINT, SIGTERM or SIGHUP, silently, and
// never exits the process: between the runs of a longer job (plload matrix's parts), where no run's
// own handler is installed, a signal then ends the job as interrupted with its report written.
func QuietInterrupt(parent context.Context) (context.Context, func()) {
	h := newInterrupt(parent, nil)
	return h.ctx, func() { h.stop() }
}

// interrupt is one installed handler of the stop signals: the first cancels ctx; with a writer
// (loud) it says so, with note's words, and a second signal exits the process at once.
type interrupt struct {
	ctx      context.Context
	cancel   context.CancelFunc
	signals  chan os.Signal
	done     chan struct{} // closed by stop
	finished chan struct{} // closed as the handler's goroutine returns
	note     atomic.Pointer[string]
	// signalled is set by the goroutine before finished is closed; read after.
	signalled bool
	// dispatched: installed in CatchSignals's handlers, not subscribed on its own.
	dispatched bool
	stopOnce   sync.Once
}

// stageNote is what a run's first signal says while its stages run.
const stageNote = "stopping — cancelling requests in flight and writing the partial stage (again to quit at once)"

func newInterrupt(parent context.Context, loud io.Writer) *interrupt {
	ctx, cancel := context.WithCancel(parent)
	h := &interrupt{ctx: ctx, cancel: cancel, signals: make(chan os.Signal, 2), done: make(chan struct{}), finished: make(chan struct{})}
	h.setNote(stageNote)
	h.dispatched = h.subscribe()
	go h.run(loud)
	return h
}

// setNote changes what the first signal says (a run's report is written after its stages).
func (h *interrupt) setNote(note string) { h.note.Store(&note) }

func (h *interrupt) run(loud io.Writer) {
	defer close(h.finished)
	select {
	case sig := <-h.signals:
		h.signalled = true
		if loud != nil {
			fmt.Fprintf(loud, "\n%s: %s\n", sig, *h.note.Load())
		}
		h.cancel()
	case <-h.done:
		// stop has unsubscribed: a signal delivered before that is in the buffer, and counts.
		select {
		case <-h.signals:
			h.signalled = true
			h.cancel()
		default:
		}
		return
	}
	if loud == nil {
		return
	}
	select {
	case <-h.signals:
		fmt.Fprintln(loud, "second signal: exiting now")
		os.Exit(int(Interrupted))
	case <-h.done:
	}
}

// stop uninstalls the handler and says whether a signal came while it was installed. Once it
// returns no signal can reach this handler any more, and one handed to it before is in its
// buffer: a signal that came while a run wrote its report is never missed.
func (h *interrupt) stop() bool {
	h.stopOnce.Do(func() {
		h.unsubscribe()
		close(h.done)
		<-h.finished
		h.cancel()
	})
	return h.signalled
}
