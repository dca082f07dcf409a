package asr_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/transport/asr"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
)

// TestCancelStopsFFmpeg: cancelling the context of a running Transcribe
// kills ffmpeg's whole process group, and the run leaves no scratch
// directory behind.
func TestCancelStopsFFmpeg(t *testing.T) {
	scratch := t.TempDir()
	e := pocketsphinx(t, asr.PocketsphinxConfig{ScratchDir: scratch})
	// Ten minutes of noise: the recognizer works on it for many seconds.
	in := filepath.Join(t.TempDir(), "noise.mkv")
	ffmpegtest.Run(t, "-f", "lavfi", "-i", "color=s=64x64:r=1", "-f", "lavfi", "-i", "anoisesrc=r=16000:a=0.1",
		"-t", "600", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "pcm_s16le", in)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := e.Transcribe(ctx, in, "en")
		done <- err
	}()
	pid := 0
	for deadline := time.Now().Add(30 * time.Second); pid == 0; {
		select {
		case err := <-done:
			t.Fatalf("Transcribe returned before it was cancelled: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no ffmpeg with the asr filter started")
		}
		pid = findProcess(t, "asr=", in)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if alive := inGroup(t, pid); len(alive) > 0 {
		t.Errorf("processes %v of ffmpeg's group %d outlived the cancel", alive, pid)
	}
	if left, _ := os.ReadDir(scratch); len(left) > 0 {
		t.Errorf("scratch directory holds %v after the run", left)
	}
}

// findProcess is the pid of a child of this process whose command line
// holds every one of parts, or 0.
func findProcess(t *testing.T, parts ...string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("needs /proc to find ffmpeg")
	}
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		ppid, _ := stat(pid)
		if ppid != os.Getpid() {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && bytes.Contains(cmdline, []byte(p))
		}
		if all {
			return pid
		}
	}
	return 0
}

// inGroup lists the live processes of process group pgid.
func inGroup(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if _, pg := stat(pid); pg == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stat reads the parent and the process group of pid from /proc/pid/stat
// (0, 0 when it is gone).
func stat(pid int) (ppid, pgrp int) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 3 {
		return 0, 0
	}
	ppid, _ = strconv.Atoi(f[1])
	pgrp, _ = strconv.Atoi(f[2])
	return ppid, pgrp
}
