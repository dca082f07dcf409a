package ffmpeg

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path/filepath"
	"runtime"
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
	// ErrPictureTooLarge: a decoder refused a frame over the input's
	// -max_pixels cap (Info.MaxPixels). ffmpeg drops such frames and may
	// well exit 0; Run reports it all the same, so that a stream which
	// grows after the headers Probe read is refused, not published cut.
	// Bounds.FrameTooLarge words it for a client.
	ErrPictureTooLarge = errors.New("a decoded picture is over the pixel cap")
)

// pixelCapMessage is what libavutil prints when -max_pixels refuses a frame.
const pixelCapMessage = "exceeds specified max pixel count"

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
	StallTimeout time.Duration      // kill ffmpeg when neither a progress line arrives nor OutputDir grows for this long (0: 2 minutes)
	OutputDir    string             // where ffmpeg writes (a directory or one file); its growth counts as progress ("": Jail.Dir; both "": only progress lines count)
	MaxRuntime   time.Duration      // kill ffmpeg after this long (0: 60s + 20×Duration seconds)
	Jail         Jail               // where, as whom and under which limits ffmpeg runs
}

const (
	defaultStallTimeout = 2 * time.Minute
	stderrTail          = 4 << 10
	// maxGrowthPoll is how often, at most, Run measures OutputDir: ffmpeg
	// prints no progress line while its filters repeat one input frame
	// across a gap (a slide shown for a minute), yet it writes segments.
	maxGrowthPoll = 5 * time.Second
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
	stderr := &tailWriter{max: stderrTail, marker: pixelCapMessage}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("ffmpeg: %w", err)
	}
	if opt.OutputDir == "" {
		opt.OutputDir = opt.Jail.Dir
	}
	// ffmpeg's parent-death signal fires when the thread that started it
	// exits (golang.org/issue/27505): this goroutine keeps its thread
	// until ffmpeg has been waited for, so only kino's death ends it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
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
	if stderr.seen() {
		return fmt.Errorf("ffmpeg: %w (stderr: %s)", ErrPictureTooLarge, strings.TrimSpace(stderr.String()))
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

// watch cancels ctx with ErrStalled when for opt.StallTimeout no line
// arrives on lines and the bytes under opt.OutputDir do not grow, or with
// ErrTooSlow after opt.MaxRuntime. It returns when ctx is done.
func watch(ctx context.Context, cancel context.CancelCauseFunc, lines <-chan struct{}, opt RunOptions) {
	stall := time.NewTimer(opt.StallTimeout)
	defer stall.Stop()
	limit := time.NewTimer(opt.MaxRuntime)
	defer limit.Stop()
	var poll <-chan time.Time
	var written int64
	if opt.OutputDir != "" {
		t := time.NewTicker(min(maxGrowthPoll, max(opt.StallTimeout/4, time.Millisecond)))
		defer t.Stop()
		poll, written = t.C, dirBytes(opt.OutputDir)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-lines:
			stall.Reset(opt.StallTimeout)
		case <-poll:
			if n := dirBytes(opt.OutputDir); n > written {
				written = n
				stall.Reset(opt.StallTimeout)
			}
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

// dirBytes is the size of the regular files under dir (what could be
// read of it: a file removed meanwhile or unreadable counts nothing).
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// tailWriter keeps the last max bytes written to it, and notes whether
// marker (when set) ever appeared in what was written.
type tailWriter struct {
	mu     sync.Mutex
	max    int
	buf    []byte
	marker string
	found  bool
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	from := max(len(w.buf)-len(w.marker), 0) // a marker split across writes
	w.buf = append(w.buf, p...)
	if w.marker != "" && !w.found && bytes.Contains(w.buf[from:], []byte(w.marker)) {
		w.found = true
	}
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

func (w *tailWriter) seen() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.found
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
