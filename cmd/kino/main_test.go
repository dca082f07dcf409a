package main

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// packageDir holds what the package's tests share (the kino binary they
// run), removed when they end.
var packageDir string

// parallel is how many tests marked t.Parallel run at once here unless
// -test.parallel says otherwise: most of this package's long tests wait
// (on video played in real time, cluster elections, restarts) rather than
// compute, so more of them than the machine's cores overlap their waits.
const parallel = 6

func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", fmt.Sprint(parallel))
	}
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
