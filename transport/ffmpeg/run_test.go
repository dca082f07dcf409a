package ffmpeg

import (
	"context"
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRunExitError(t *testing.T) {
	t.Parallel()
	err := Run(context.Background(), []string{"-nostdin", "-hide_banner", "-no_such_option_here", "-progress", "pipe:1"}, RunOptions{})
	var exitErr *ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("Run with a bad option = %v, want *ExitError", err)
	}
	if exitErr.Code == 0 || !strings.Contains(exitErr.Stderr, "no_such_option_here") {
		t.Errorf("ExitError = %+v, want a non-zero code and ffmpeg's complaint", exitErr)
	}
	if !strings.Contains(err.Error(), "no_such_option_here") {
		t.Errorf("Error() = %q, want the stderr tail in it", err)
	}
}

func TestRunCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Run(ctx, []string{"-version"}, RunOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run(cancelled ctx) = %v, want context.Canceled", err)
	}
}

// TestRunCancelledWhileRunning cancels an endless encode from its first
// progress report, so ffmpeg is known to be running.
func TestRunCancelledWhileRunning(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := append(start(), "-f", "lavfi", "-i", "testsrc2=size=64x64:rate=25", "-f", "null", "-")
	calls := 0
	err := Run(ctx, args, RunOptions{
		Duration:   3600,
		OnProgress: func(float64) { calls++; cancel() },
		MaxRuntime: time.Minute, // a safety net: it would fail the test as ErrTooSlow
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	if errors.Is(err, ErrTooSlow) || errors.Is(err, ErrStalled) {
		t.Errorf("Run = %v: the watchdog, not the cancel, stopped ffmpeg", err)
	}
	if calls == 0 {
		t.Error("OnProgress never called")
	}
}

func TestRunMissingBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := Run(context.Background(), []string{"-version"}, RunOptions{})
	var exitErr *ExitError
	if !errors.Is(err, exec.ErrNotFound) || errors.As(err, &exitErr) {
		t.Errorf("Run without ffmpeg = %v, want exec.ErrNotFound", err)
	}
}

func TestReadProgress(t *testing.T) {
	out := strings.Join([]string{
		"frame=0", "out_time_us=N/A", "out_time=N/A", "progress=continue",
		"frame=25", "out_time_us=1000000", "progress=continue",
		"frame=50", "out_time_us=2040000", "progress=end", "",
	}, "\n")
	type call struct {
		us  int64
		end bool
	}
	var got []call
	lines := make(chan struct{}, 1)
	readProgress(strings.NewReader(out), lines, func(us int64, end bool) { got = append(got, call{us, end}) })
	want := []call{{1000000, false}, {2040000, false}, {0, true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("onTime calls %v, want %v", got, want)
	}
	if len(lines) != 1 {
		t.Error("no line signalled to the watchdog")
	}
}

func TestTailWriter(t *testing.T) {
	w := &tailWriter{max: 8}
	for _, s := range []string{"abc", "defgh", "ijklmnopqrstuvwxyz", "0"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := w.String(); got != "tuvwxyz0" {
		t.Errorf("tail = %q, want %q", got, "tuvwxyz0")
	}
}

func TestRunOptionsDefaults(t *testing.T) {
	got := RunOptions{Duration: 30}.withDefaults()
	if got.StallTimeout != 2*time.Minute || got.MaxRuntime != 11*time.Minute {
		t.Errorf("defaults for 30 s: stall %v, max %v; want 2m, 11m", got.StallTimeout, got.MaxRuntime)
	}
	set := RunOptions{Duration: 30, StallTimeout: time.Second, MaxRuntime: time.Hour}.withDefaults()
	if set.StallTimeout != time.Second || set.MaxRuntime != time.Hour {
		t.Errorf("withDefaults changed set values: %+v", set)
	}
}

func TestReportProgress(t *testing.T) {
	var got []float64
	record := func(f float64) { got = append(got, f) }

	report := reportProgress(RunOptions{Duration: 2, OnProgress: record})
	report(0, false)
	report(1_000_000, false)
	report(500_000, false) // never goes back
	report(2_100_000, false)
	report(0, true)
	if want := []float64{0, 0.5, 0.5, 1, 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("with a duration: %v, want %v", got, want)
	}

	got = nil
	report = reportProgress(RunOptions{OnProgress: record})
	report(1_000_000, false)
	report(0, true)
	if want := []float64{1}; !reflect.DeepEqual(got, want) {
		t.Errorf("without a duration: %v, want %v", got, want)
	}

	reportProgress(RunOptions{Duration: 2})(1_000_000, false) // nil OnProgress is fine
}
