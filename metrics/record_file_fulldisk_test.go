//go:build linux || darwin

package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fileSizeLimitEnv, set in a child process of this test binary, names the records file the child
// writes under a file size limit (RLIMIT_FSIZE): the kernel then refuses writes past the limit
// with EFBIG, the same way a full disk refuses them with ENOSPC, and no fake writer is involved.
const fileSizeLimitEnv = "PLLOAD_TEST_WRITER_FSIZE_PATH"

// The child's limit and how many records it is handed: far more than fit.
const (
	childFileLimit = 64 << 10
	childRecords   = 2000
)

// writerChildReport is what the child prints: what the writer said of itself.
type writerChildReport struct {
	CloseErr     string
	Written      int
	Lost         int
	FailedClosed bool
}

// TestWriterChildUnderFileSizeLimit is the child's body; it runs only in the child.
func TestWriterChildUnderFileSizeLimit(t *testing.T) {
	path := os.Getenv(fileSizeLimitEnv)
	if path == "" {
		t.Skip("the child of TestWriterKeepsWhatTheDiskTook")
	}
	signal.Ignore(syscall.SIGXFSZ) // without it the kernel kills the process instead of failing the write
	lim := syscall.Rlimit{Cur: childFileLimit, Max: childFileLimit}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter[*Record](path, 16)
	if err != nil {
		t.Fatal(err)
	}
	for range childRecords {
		w.Write(sampleRecord())
	}
	rep := writerChildReport{Written: -1}
	if err := w.Close(); err != nil {
		rep.CloseErr = err.Error()
	}
	rep.Written, rep.Lost = w.Written(), w.Lost()
	select {
	case <-w.Failed():
		rep.FailedClosed = true
	default:
	}
	out, _ := json.Marshal(rep)
	fmt.Printf("CHILD %s\n", out)
}

// TestWriterKeepsWhatTheDiskTook: when the kernel refuses a write, the writer says so (the cause,
// the path, the lines lost), counts as written only the whole lines in the file, and still puts
// that file under its final name, cut back to its last whole line, so it can be read.
func TestWriterKeepsWhatTheDiskTook(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile_export.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriterChildUnderFileSizeLimit$", "-test.count=1")
	cmd.Env = append(os.Environ(), fileSizeLimitEnv+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	_, line, ok := strings.Cut(string(out), "CHILD ")
	if !ok {
		t.Fatalf("child printed no report:\n%s", out)
	}
	line, _, _ = strings.Cut(line, "\n")
	var rep writerChildReport
	if err := json.Unmarshal([]byte(line), &rep); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	t.Logf("child: %+v", rep)
	if !strings.Contains(rep.CloseErr, "file too large") || !strings.Contains(rep.CloseErr, path) {
		t.Errorf("Close said %q; want the kernel's cause (file too large) and the path", rep.CloseErr)
	}
	if !rep.FailedClosed {
		t.Error("Failed() was not closed after a write error: the feeder would keep sending")
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("%s.tmp is still there (%v): the records stayed where no reader looks", path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the records that were written are not under the final name: %v", err)
	}
	if len(data) > childFileLimit {
		t.Fatalf("file is %d bytes, over the limit %d: no write was refused", len(data), childFileLimit)
	}
	if len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatalf("file of %d bytes does not end with a whole line", len(data))
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	for i, l := range lines {
		if !json.Valid(l) {
			t.Fatalf("line %d is not JSON: %.80s", i+1, l)
		}
	}
	if rep.Written != len(lines) || rep.Written+rep.Lost != childRecords || rep.Lost == 0 {
		t.Errorf("written %d + lost %d, want the file's %d lines + the rest of %d", rep.Written, rep.Lost, len(lines), childRecords)
	}
	if want := fmt.Sprintf("%d line(s) lost", rep.Lost); !strings.Contains(rep.CloseErr, want) {
		t.Errorf("Close said %q; want %q", rep.CloseErr, want)
	}
}
