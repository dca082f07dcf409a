//go:build linux

package ffmpeg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// CheckDiesWithParent checks that an ffmpeg started under j as every run
// starts it (through prlimit when j has limits, as j.User when set) is
// killed when the thread that started it exits, as it is when kino dies:
// it starts an ffmpeg that waits on its input, from a goroutine that
// locks its thread and ends without unlocking it (the runtime then ends
// the thread), and waits for the kernel's SIGKILL. An error means that
// ffmpeg would outlive a kino killed with kill -9 (a parent-death signal
// lost on the way, e.g. by a set-uid wrapper).
func CheckDiesWithParent(ctx context.Context, j Jail) error {
	const op = "check that ffmpeg dies with kino"
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer w.Close() // ffmpeg's input stays open, and empty, until then
	type started struct {
		cmd *exec.Cmd
		err error
	}
	startc := make(chan started, 1)
	onThrowawayThread(func() {
		// Reads raw samples from the pipe, which never brings any.
		cmd := j.command(context.Background(), "ffmpeg", []string{"-nostats", "-hide_banner", "-loglevel", "quiet",
			"-f", "s16le", "-i", "pipe:0", "-f", "null", "-"})
		cmd.Stdin = r
		startc <- started{cmd, cmd.Start()}
	})
	st := <-startc
	r.Close()
	if st.err != nil {
		return fmt.Errorf("%s: start ffmpeg: %w", op, st.err)
	}
	waited := make(chan error, 1)
	go func() { waited <- st.cmd.Wait() }()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case err := <-waited:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				return nil
			}
		}
		return fmt.Errorf("%s: ffmpeg ended with %v, not killed with its parent", op, err)
	case <-ctx.Done():
		_ = killGroup(st.cmd)
		<-waited
		return fmt.Errorf("%s: %w", op, ctx.Err())
	case <-timer.C:
		_ = killGroup(st.cmd)
		<-waited
		return fmt.Errorf("%s: ffmpeg outlived the thread that started it: it would outlive kino too (no parent-death signal)", op)
	}
}

// onThrowawayThread runs f on an OS thread that ends right after it. A
// goroutine that ends while locked to its thread ends the thread, except
// the process's main thread, which the runtime keeps (parked): on that
// one, f runs in another goroutine, which cannot get the main thread
// while this one holds it.
func onThrowawayThread(f func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked but on the main thread
		if syscall.Gettid() == syscall.Getpid() {
			onThrowawayThread(f)
			runtime.UnlockOSThread()
			close(done)
			return
		}
		f()
		close(done)
	}()
	<-done
}
