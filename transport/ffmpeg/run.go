// Package ffmpeg adapts the ffmpeg and ffprobe binaries: Probe learns what
// an input is, Ladder picks its HLS renditions, the *Args functions build
// argument lists (pure, golden-tested) and Run executes one of them under a
// watchdog, reporting progress.
//
// The binaries are found on PATH as "ffmpeg" and "ffprobe".
package ffmpeg

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Errors returned (wrapped) by Run when its watchdog kills ffmpeg.
var (
	// ErrStalled: no progress line arrived for RunOptions.StallTimeout.
	ErrStalled = errors.New("ffmpeg stalled")
	// ErrTooSlow: ffmpeg ran longer than RunOptions.MaxRuntime.
	ErrTooSlow = errors.New("ffmpeg too slow")
)

// ExitError is ffmpeg exiting with a non-zero status (or killed by a signal
// Run did not send, Code -1). Stderr is the tail of what it printed there.
type ExitError struct {
	Code   int
	Stderr string
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("ffmpeg exited with status %d", e.Code)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

// RunOptions configures Run.
type RunOptions struct {
	Duration     float64            // input duration in seconds, for progress and the time limit
	OnProgress   func(frac float64) // called with 0..1 as -progress reports out_time_us (may be nil)
	OnOutTime    func(sec float64)  // called with each out_time reported, in seconds (may be nil)
	StallTimeout time.Duration      // kill ffmpeg when no progress line arrives for this long (0: 2 minutes)
	MaxRuntime   time.Duration      // kill ffmpeg after this long (0: 60s + 20×Duration seconds)
	Jail         Jail               // where, as whom and under which limits ffmpeg runs
}

const (
	defaultStallTimeout = 2 * time.Minute
	stderrTail          = 4 << 10
	// waitDelay bounds how long Wait waits for the pipes after ffmpeg is
	// killed, should something else hold them open.
	waitDelay = 5 * time.Second
)

func (o RunOptions) withDefaults() RunOptions {
	if o.StallTimeout <= 0 {
		o.StallTimeout = defaultStallTimeout
	}
	if o.MaxRuntime <= 0 {
		d := max(o.Duration, 0)
		o.MaxRuntime = time.Minute + time.Duration(20*d*float64(time.Second))
	}
	return o
}

// Run executes ffmpeg with args (which should include "-progress pipe:1";
// without it no progress is reported and only the stall timeout, counted
// from the start, applies). OnProgress is called from another goroutine,
// never concurrently, never after Run returns; it receives non-decreasing
// fractions of opt.Duration and 1 when ffmpeg reports progress=end.
//
// Errors: a cancelled ctx gives ctx.Err() wrapped; the watchdog gives an
// error wrapping ErrStalled or ErrTooSlow; a non-zero exit gives
// *ExitError. All of them are transient as far as Run can tell.
func Run(ctx context.Context, args []string, opt RunOptions) error {
	return run(ctx, args, opt, reportProgress(opt))
}

// reportProgress turns out_time_us values into fractions of opt.Duration
// for opt.OnProgress: clamped to 0..1, never decreasing, 1 at the end.
// Without a duration only the end is reported.
func reportProgress(opt RunOptions) func(us int64, end bool) {
	var last float64
	return func(us int64, end bool) {
		if opt.OnOutTime != nil && !end {
			opt.OnOutTime(float64(us) / 1e6)
		}
		if opt.OnProgress == nil {
			return
		}
		var frac float64
		switch {
		case end:
			frac = 1
		case opt.Duration > 0:
			frac = min(max(float64(us)/1e6/opt.Duration, last), 1)
		default:
			return
		}
		last = frac
		opt.OnProgress(frac)
	}
}

// run is Run with the raw progress: onTime gets every out_time_us value in
// microseconds and, with end set, the progress=end line.
func run(ctx context.Context, args []string, opt RunOptions, onTime func(us int64, end bool)) error {
	opt = opt.withDefaults()
	if opt.Jail.Limits.any() {
		opt.Jail.Limits = opt.Jail.Limits.WithCPUFor(opt.MaxRuntime)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ffmpeg: %w", err)
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	cmd := opt.Jail.command(runCtx, "ffmpeg", args)
	stderr := &tailWriter{max: stderrTail}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("ffmpeg: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start ffmpeg: %w", err)
	}

	lines := make(chan struct{}, 1)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		readProgress(stdout, lines, onTime)
	}()
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		watch(runCtx, cancel, lines, opt)
	}()

	<-readDone // all reads finish before Wait, as StdoutPipe requires
	waitErr := cmd.Wait()
	cancel(nil) // stops the watchdog, which guarded Wait too
	<-watchDone

	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ffmpeg: %w", err)
	}
	if waitErr == nil {
		return nil // finished, even if the watchdog fired just after
	}
	if cause := context.Cause(runCtx); errors.Is(cause, ErrStalled) || errors.Is(cause, ErrTooSlow) {
		if tail := strings.TrimSpace(stderr.String()); tail != "" {
			return fmt.Errorf("ffmpeg killed: %w (stderr: %s)", cause, tail)
		}
		return fmt.Errorf("ffmpeg killed: %w", cause)
	}
	var exitErr *exec.ExitError
	if errors.As(waitErr, &exitErr) {
		return &ExitError{Code: exitErr.ExitCode(), Stderr: stderr.String()}
	}
	return fmt.Errorf("ffmpeg: %w", waitErr)
}

// watch cancels ctx with ErrStalled when no line arrives on lines for
// opt.StallTimeout, or with ErrTooSlow after opt.MaxRuntime. It returns when
// ctx is done.
func watch(ctx context.Context, cancel context.CancelCauseFunc, lines <-chan struct{}, opt RunOptions) {
	stall := time.NewTimer(opt.StallTimeout)
	defer stall.Stop()
	limit := time.NewTimer(opt.MaxRuntime)
	defer limit.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-lines:
			stall.Reset(opt.StallTimeout)
		case <-stall.C:
			cancel(fmt.Errorf("no progress for %s: %w", opt.StallTimeout, ErrStalled))
			return
		case <-limit.C:
			cancel(fmt.Errorf("still running after %s: %w", opt.MaxRuntime, ErrTooSlow))
			return
		}
	}
}

// readProgress reads -progress key=value lines until r ends, signalling
// each line on lines (without blocking) and passing out_time_us values and
// progress=end to onTime.
func readProgress(r io.Reader, lines chan<- struct{}, onTime func(us int64, end bool)) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		select {
		case lines <- struct{}{}:
		default:
		}
		key, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok {
			continue
		}
		switch key {
		case "out_time_us":
			if us, err := strconv.ParseInt(value, 10, 64); err == nil && us >= 0 {
				onTime(us, false)
			}
		case "progress":
			if value == "end" {
				onTime(0, true)
			}
		}
	}
	// A line too long for the scanner ends the loop: keep draining so
	// ffmpeg never blocks on a full pipe.
	_, _ = io.Copy(io.Discard, r)
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
