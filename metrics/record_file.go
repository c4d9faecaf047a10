package metrics

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// JSONAppender is anything written one compact JSON object per line.
type JSONAppender interface {
	AppendJSON([]byte) []byte
}

// Writer writes JSON lines from a single goroutine, fed through a buffered channel, so no request
// path ever waits on the disk. It writes to PATH.tmp and renames to PATH on Close: a reader never
// sees a half-written file under the final name.
type Writer[T JSONAppender] struct {
	path    string
	ch      chan T
	done    chan error
	written int
	after   func(T)
}

// NewWriter starts the writer goroutine for path with a channel of the given capacity.
func NewWriter[T JSONAppender](path string, capacity int) (*Writer[T], error) {
	return NewWriterThen[T](path, capacity, nil)
}

// NewWriterThen is NewWriter that also hands each value to after, on the writer goroutine, once it
// is written (the live display reads records there, off the request path).
func NewWriterThen[T JSONAppender](path string, capacity int, after func(T)) (*Writer[T], error) {
	f, err := os.OpenFile(path+".tmp", os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	w := &Writer[T]{path: path, ch: make(chan T, capacity), done: make(chan error, 1), after: after}
	go w.loop(f)
	return w, nil
}

func (w *Writer[T]) loop(f *os.File) {
	bw := bufio.NewWriterSize(f, 256<<10)
	buf := make([]byte, 0, 4096)
	var firstErr error
	for rec := range w.ch {
		buf = rec.AppendJSON(buf[:0])
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil && firstErr == nil {
			firstErr = err
		}
		w.written++
		if w.after != nil {
			w.after(rec)
		}
	}
	if err := bw.Flush(); err != nil && firstErr == nil {
		firstErr = err
	}
	if err := f.Sync(); err != nil && firstErr == nil {
		firstErr = err
	}
	if err := f.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	if firstErr == nil {
		firstErr = os.Rename(f.Name(), w.path)
	}
	w.done <- firstErr
}

// Write queues one line; it blocks only when the channel is full.
func (w *Writer[T]) Write(v T) { w.ch <- v }

// Close writes what is queued, syncs, renames the file into place and returns the first error.
// Written may be read after Close.
func (w *Writer[T]) Close() error {
	close(w.ch)
	if err := <-w.done; err != nil {
		return fmt.Errorf("writing %s: %w", w.path, err)
	}
	return nil
}

// Written is the number of lines written; valid after Close.
func (w *Writer[T]) Written() int { return w.written }

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
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	return nil
}
