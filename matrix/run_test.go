package matrix

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestQuietInterrupt: a SIGINT while the matrix is between parts cancels its context instead of
// killing the process (the test process would die here without the handler).
func TestQuietInterrupt(t *testing.T) {
	ctx, stop := quietInterrupt(context.Background())
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGINT did not cancel the context within 10 s")
	}
}
