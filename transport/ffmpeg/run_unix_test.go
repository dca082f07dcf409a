//go:build unix

package ffmpeg

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRunWatchdog makes ffmpeg hang deterministically: its input is a FIFO
// nobody writes to, so it blocks opening it and never prints progress.
func TestRunWatchdog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opt  RunOptions
		want error
	}{
		{"no progress", RunOptions{Duration: 1, StallTimeout: 300 * time.Millisecond, MaxRuntime: time.Hour}, ErrStalled},
		{"too long", RunOptions{Duration: 1, StallTimeout: time.Hour, MaxRuntime: 300 * time.Millisecond}, ErrTooSlow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fifo := filepath.Join(t.TempDir(), "never-written")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			args := append(start(), "-i", fifo, "-f", "null", "-")
			err := Run(context.Background(), args, tt.opt)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Run = %v, want %v", err, tt.want)
			}
			var exitErr *ExitError
			if errors.As(err, &exitErr) || errors.Is(err, context.Canceled) {
				t.Errorf("Run = %v: a watchdog kill must not look like an exit or a cancel", err)
			}
		})
	}
}

// TestRunWatchdogWatchesAnIdleOutputDir: an output directory that does
// not grow does not keep a hung ffmpeg alive.
func TestRunWatchdogWatchesAnIdleOutputDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "never-written")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(start(), "-i", fifo, "-f", "null", "-")
	err := Run(context.Background(), args, RunOptions{Duration: 1, StallTimeout: 300 * time.Millisecond, MaxRuntime: time.Hour, OutputDir: dir})
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("Run = %v, want %v", err, ErrStalled)
	}
}
