package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// packageDir holds what the package's tests share (the kino binary they
// run), removed when they end.
var packageDir string

func TestMain(m *testing.M) {
	// Most of this package's long tests wait (on video played in real
	// time, cluster elections, restarts) rather than compute.
	eventstoretest.SetParallel(8)
	dir, err := os.MkdirTemp("", "kino-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// As root, ffmpeg runs as nobody and must pass through it.
	if err := os.Chmod(dir, 0o711); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	packageDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
