package runner

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestQuietInterrupt: a SIGINT while a longer job (plload matrix) is between runs cancels its context instead of
// killing the process (the test process would die here without the handler).
func TestQuietInterrupt(t *testing.T) {
	ctx, stop := QuietInterrupt(context.Background())
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
