package live

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Display shows a run as it happens: on a terminal a status line redrawn 4 times a second; otherwise
// one plain line every 10 s (CI logs, pipes). Lines printed through it (stage summaries) clear the
// status line first so the two never mix.
type Display struct {
	mu       sync.Mutex
	out      io.Writer
	live     *Progress
	terminal bool
	drawn    bool
	stop     chan struct{}
	done     chan struct{}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// StartDisplay starts the display of live on stdout when it is a terminal, else on stderr; quiet
// turns it off (lines still print).
func StartDisplay(stdout, stderr io.Writer, live *Progress, quiet bool) *Display {
	p := &Display{out: stdout, live: live, terminal: isTerminal(stdout), stop: make(chan struct{}), done: make(chan struct{})}
	if quiet {
		close(p.done)
		return p
	}
	every := 10 * time.Second
	if p.terminal {
		every = 250 * time.Millisecond
	} else {
		p.out = stderr // plain lines are log lines
	}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
				if s, ok := live.Snapshot(); ok {
					p.draw(Line(s, p.terminal))
				}
			}
		}
	}()
	return p
}

func (p *Display) draw(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal {
		fmt.Fprint(p.out, "\r\033[K"+line)
		p.drawn = true
		return
	}
	fmt.Fprintln(p.out, line)
}

// Println prints a line above the status line.
func (p *Display) Println(w io.Writer, line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.out, "\r\033[K")
		p.drawn = false
	}
	fmt.Fprintln(w, line)
}

// Stop ends the display and clears the status line.
func (p *Display) Stop() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.out, "\r\033[K")
		p.drawn = false
	}
}

// Line is one status line: stage, phase, a bar of elapsed vs planned time (when bar is set: a
// terminal's line, not a log's), counts, open sessions, and out tok/s, TTFT p95 and ITL p95 over the
// last 10 s.
func Line(s Snapshot, bar bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "stage %d/%d %-9s ", s.Stage, s.Stages, s.Phase)
	if bar && s.Duration > 0 {
		const width = 20
		done := int(float64(width) * min(1, s.Elapsed.Seconds()/s.Duration.Seconds()))
		b.WriteString("[" + strings.Repeat("#", done) + strings.Repeat(".", width-done) + "] ")
	}
	if s.Duration > 0 {
		fmt.Fprintf(&b, "%.0fs/%.0fs ", s.Elapsed.Seconds(), s.Duration.Seconds())
	} else {
		fmt.Fprintf(&b, "%.0fs ", s.Elapsed.Seconds())
	}
	fmt.Fprintf(&b, "| ok %d, errors %d, 429 %d | sessions %d | last 10 s: %.1f out tok/s, TTFT p95 %s, ITL p95 %s",
		s.OK, s.Errors+s.Cancel, s.RateLimited, s.Active, s.OutTokPerSec10s, msText(s.TTFTP95Ms10s), msText(s.ITLP95Ms10s))
	if len(s.Failures) > 0 { // the cause, not only the count: a dead port reads "refused", a wrong path "HTTP 404"
		k := s.Failures[0]
		fmt.Fprintf(&b, " | errors: %s × %d (first: %s)", k.Kind, k.Count, clip(k.First, 100))
	}
	return b.String()
}

// clip shortens text to at most n runes, marking the cut.
func clip(text string, n int) string {
	r := []rune(text)
	if len(r) <= n {
		return text
	}
	return string(r[:n-1]) + "…"
}

func msText(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f ms", v)
}
