package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
)

// buildKino builds the kino binary once for the package, into packageDir,
// and returns its path.
func buildKino(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		bin := filepath.Join(packageDir, "kino")
		if out, err := exec.Command("go", "build", "-ldflags=-w", "-o", bin, ".").CombinedOutput(); err != nil { // -w: no DWARF, less to link
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
		built.bin = bin
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// built is the kino binary the package's tests run, built once.
var built struct {
	once sync.Once
	bin  string
	err  error
}

// TestBinaryServeBusyPortFailsAtOnce runs the real binary with its HTTP or
// its NATS address taken by another listener: it must exit with an error
// naming the flag to change, well within the embedded server's 30 s
// readiness wait, and --dev must not have printed a key nobody can use.
func TestBinaryServeBusyPortFailsAtOnce(t *testing.T) {
	t.Parallel()
	bin := buildKino(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	taken := busy.Addr().String()
	for _, tt := range []struct {
		name       string
		addr, nats string
		wantFlag   string
	}{
		{"http", taken, "127.0.0.1:0", "--addr"},
		{"nats", "127.0.0.1:0", taken, "--nats-listen"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Shorter than the 30 s the embedded server would wait.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			data := filepath.Join(t.TempDir(), "data")
			cmd := exec.CommandContext(ctx, bin, "serve", "--dev", "--workers", "0", "--data", data,
				"--addr", tt.addr, "--nats-listen", tt.nats)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("kino serve still running after 20 s with %s busy; stderr:\n%s", tt.name, stderr.String())
			}
			if err == nil {
				t.Fatal("kino serve exited 0 with its address in use")
			}
			for _, line := range strings.Split(stdout.String(), "\n") {
				if domain.WellFormedKey(line) || strings.Contains(line, "shown once") {
					t.Fatalf("--dev printed a key although kino could not start:\n%s", stdout.String())
				}
			}
			msg := stderr.String()
			if !strings.Contains(msg, taken) || !strings.Contains(msg, tt.wantFlag) || !strings.Contains(msg, "in use") {
				t.Fatalf("stderr %q: want the address %s, %q and the flag %s", msg, taken, "in use", tt.wantFlag)
			}
		})
	}
}

// kino serve --dev checks what transcoding needs before it creates and
// prints its one-time key: a first start without ffmpeg (on PATH, or in
// --ffmpeg-dir) fails, says which tool is missing, and prints nothing a
// later start could not print again.
func TestBinaryServeChecksFFmpegBeforeTheDevKey(t *testing.T) {
	t.Parallel()
	bin := buildKino(t)
	// A --ffmpeg-dir holding an ffmpeg but no ffprobe.
	tools := t.TempDir()
	if err := os.WriteFile(filepath.Join(tools, "ffmpeg"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, path, want string
		flags            []string
	}{
		{"none on PATH", t.TempDir(), "ffmpeg on PATH", nil},
		{"no ffprobe in --ffmpeg-dir", os.Getenv("PATH"), "--ffmpeg-dir " + tools + ": ffprobe", []string{"--ffmpeg-dir", tools}},
		// Relative to where kino starts, not to a job's work directory.
		{"no ffprobe in a relative --ffmpeg-dir", os.Getenv("PATH"), "--ffmpeg-dir " + tools + ": ffprobe", []string{"--ffmpeg-dir", filepath.Base(tools)}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--dev", "--data", filepath.Join(t.TempDir(), "data"),
			"--addr", "127.0.0.1:0", "--nats-listen", "127.0.0.1:0"}, tt.flags...)...)
		cmd.Env = append(os.Environ(), "PATH="+tt.path)
		cmd.Dir = filepath.Dir(tools)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err == nil || ctx.Err() != nil {
			t.Fatalf("%s: kino serve: %v (ctx %v)\n%s", tt.name, err, ctx.Err(), stderr.String())
		}
		if strings.Contains(stdout.String(), "shown once") || strings.Contains(stdout.String(), "svc_live_") {
			t.Fatalf("%s: --dev printed its key although it could not start:\n%s", tt.name, stdout.String())
		}
		if !strings.Contains(stderr.String(), tt.want) {
			t.Fatalf("%s: stderr does not say %q:\n%s", tt.name, tt.want, stderr.String())
		}
	}
}
