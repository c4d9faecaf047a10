package metrics

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// JSONAppender is anything written one compact JSON object per line.
type JSONAppender interface {
	AppendJSON([]byte) []byte
}

// Writer writes JSON lines from a single goroutine, fed through a buffered channel, so no request
// path ever waits on the disk. It writes to PATH.tmp and renames to PATH on Close: a reader never
// sees a half-written file under the final name.
//
// A write error (a full disk, a file size limit) is not a line written: the writer stops writing,
// cuts the file back to its last whole line, closes Failed so that whoever feeds it can stop, and
// counts every line it is handed from then on as lost. Close still renames the file into place, so
// the lines that did reach the disk stay readable under PATH, and returns the first error.
type Writer[T JSONAppender] struct {
	path    string
	ch      chan T
	done    chan error
	failed  chan struct{}
	written int
	lost    int
	after   func(T)
}

// flushBytes is how much the writer gathers before one write(2): few system calls, and at most
// this much in memory.
const flushBytes = 256 << 10

// flushEvery bounds how long a written line waits in memory (and a full disk goes unseen).
const flushEvery = time.Second

// WritingSuffix is added to a Writer's path until Close renames the file: a process killed during
// a stage leaves its whole lines under PATH+WritingSuffix (plload merge reads them there).
const WritingSuffix = ".tmp"

// NewWriter starts the writer goroutine for path with a channel of the given capacity.
func NewWriter[T JSONAppender](path string, capacity int) (*Writer[T], error) {
	return NewWriterThen[T](path, capacity, nil)
}

// NewWriterThen is NewWriter that also hands each value to after, on the writer goroutine, once it
// is written (the live display reads records there, off the request path).
func NewWriterThen[T JSONAppender](path string, capacity int, after func(T)) (*Writer[T], error) {
	f, err := os.OpenFile(path+WritingSuffix, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	w := &Writer[T]{path: path, ch: make(chan T, capacity), done: make(chan error, 1), failed: make(chan struct{}), after: after}
	go w.loop(f)
	return w, nil
}

// lineFile is the file being written, with the lines gathered for its next write.
type lineFile struct {
	f        *os.File
	size     int64 // bytes of whole lines on disk
	pending  []byte
	ends     []int // where each pending line ends in pending
	onDisk   int   // whole lines on disk
	firstErr error
}

// flush writes the pending lines. On an error it keeps the whole lines that reached the disk,
// truncates a line cut by the error (a file that ends mid-line would not parse), and returns how
// many pending lines were lost.
func (lf *lineFile) flush() (lost int) {
	if len(lf.pending) == 0 || lf.firstErr != nil {
		return 0
	}
	n, err := lf.f.Write(lf.pending)
	if err == nil {
		lf.size += int64(n)
		lf.onDisk += len(lf.ends)
		lf.pending, lf.ends = lf.pending[:0], lf.ends[:0]
		return 0
	}
	whole := 0
	for whole < len(lf.ends) && lf.ends[whole] <= n {
		whole++
	}
	if whole > 0 {
		lf.size += int64(lf.ends[whole-1])
	}
	lf.onDisk += whole
	lost = len(lf.ends) - whole
	// Shrinking a file needs no free space; it only fails where the file is gone.
	if terr := lf.f.Truncate(lf.size); terr != nil {
		err = errors.Join(err, terr)
	}
	lf.firstErr = err
	lf.pending, lf.ends = lf.pending[:0], lf.ends[:0]
	return lost
}

func (w *Writer[T]) loop(f *os.File) {
	lf := &lineFile{f: f, pending: make([]byte, 0, flushBytes+4096)}
	// Written at flushBytes, and at least every flushEvery: a slow stage (a record every few
	// seconds) learns of a full disk within a second, not after minutes of requests, or at its end.
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	flush := func() {
		w.lost += lf.flush()
		if lf.firstErr != nil {
			close(w.failed)
		}
	}
	for open := true; open; {
		select {
		case rec, ok := <-w.ch:
			if !ok {
				open = false
				break
			}
			if lf.firstErr != nil {
				w.lost++
				continue
			}
			lf.pending = rec.AppendJSON(lf.pending)
			lf.pending = append(lf.pending, '\n')
			lf.ends = append(lf.ends, len(lf.pending))
			if w.after != nil {
				w.after(rec)
			}
			if len(lf.pending) >= flushBytes {
				flush()
			}
		case <-tick.C:
			if lf.firstErr == nil && len(lf.pending) > 0 {
				flush()
			}
		}
	}
	failedBefore := lf.firstErr != nil
	w.lost += lf.flush()
	if lf.firstErr != nil && !failedBefore {
		close(w.failed)
	}
	w.written = lf.onDisk
	err := lf.firstErr
	if serr := f.Sync(); serr != nil && err == nil {
		err = serr
	}
	if cerr := f.Close(); cerr != nil && err == nil {
		err = cerr
	}
	// Renamed even after a write error: the lines on disk are whole, and under the final name
	// plload report can read them.
	if rerr := os.Rename(f.Name(), w.path); rerr != nil && err == nil {
		err = rerr
	}
	w.done <- err
}

// Write queues one line; it blocks only when the channel is full.
func (w *Writer[T]) Write(v T) { w.ch <- v }

// Failed is closed when a write failed: every line from then on is lost, so the feeder should stop.
func (w *Writer[T]) Failed() <-chan struct{} { return w.failed }

// Close writes what is queued, syncs, renames the file into place and returns the first error.
// Written and Lost may be read after Close.
func (w *Writer[T]) Close() error {
	close(w.ch)
	if err := <-w.done; err != nil {
		// The user knows the file by its final name, not the temporary one the error names.
		var pe *os.PathError
		if errors.As(err, &pe) && pe.Path == w.path+WritingSuffix {
			err = pe.Err
		}
		switch {
		case w.lost > 0 && w.written == 0:
			return fmt.Errorf("writing %s: %w (%d line(s) lost, none written)", w.path, err, w.lost)
		case w.lost > 0:
			return fmt.Errorf("writing %s: %w (%d line(s) lost, the %d before the error kept)", w.path, err, w.lost, w.written)
		}
		return fmt.Errorf("writing %s: %w", w.path, err)
	}
	return nil
}

// Written is the number of whole lines in the file; valid after Close.
func (w *Writer[T]) Written() int { return w.written }

// Lost is the number of lines handed to Write that a write error kept off the disk; valid after Close.
func (w *Writer[T]) Lost() int { return w.lost }

// WriteFileAtomic writes data to path through a temporary file in the same folder and a rename, so
// the file is either complete or absent.
func WriteFileAtomic(path string, data []byte) error {
	return WriteFileAtomicFrom(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFileAtomicFrom is WriteFileAtomic for content that write produces as it goes (a file too
// large to hold in memory first).
func WriteFileAtomicFrom(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		// The user named path, not the temporary file beside it.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("writing %s: %w", path, err)
	}
	werr := write(tmp)
	if err := tmp.Chmod(0o644); werr == nil {
		werr = err
	}
	if err := tmp.Sync(); werr == nil {
		werr = err
	}
	if err := tmp.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		var pe *os.PathError // the temporary file's name is noise: the user knows path
		if errors.As(werr, &pe) && pe.Path == tmp.Name() {
			werr = pe.Err
		}
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	return nil
}
