//go:build linux

package ffmpeg

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestJailAppliesLimitsBeforeTheCommandRuns: the command itself reads its
// limits, as the first thing it does; prlimit set them before exec.
func TestJailAppliesLimitsBeforeTheCommandRuns(t *testing.T) {
	t.Parallel()
	j := Jail{Dir: t.TempDir(), Limits: RLimits{AddressSpace: 3 << 30, CPU: 90 * time.Second, OpenFiles: 77}}
	cmd := j.command(context.Background(), "sh", []string{"-c", "ulimit -v; ulimit -t; ulimit -n; pwd"})
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	want := strconv.Itoa(3<<30/1024) + "\n90\n77\n" + j.Dir + "\n"
	if out.String() != want {
		t.Errorf("limits and directory seen by the command:\n%s\nwant\n%s", out.String(), want)
	}
}

// TestJailNice: the command runs with its niceness raised by Nice (on top
// of kino's own), its limits still applied.
func TestJailNice(t *testing.T) {
	t.Parallel()
	run := func(j Jail) string {
		t.Helper()
		out, err := j.command(context.Background(), "sh", []string{"-c", "nice; ulimit -n"}).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return string(out)
	}
	base, err := strconv.Atoi(strings.Fields(run(Jail{}))[0])
	if err != nil {
		t.Fatal(err)
	}
	got := run(Jail{Nice: 7, Limits: RLimits{OpenFiles: 77}})
	if want := strconv.Itoa(min(base+7, 19)) + "\n77\n"; got != want {
		t.Errorf("niceness and open files seen by the command: %q, want %q", got, want)
	}
}

// TestJailKillsTheWholeGroup: ending the context kills ffmpeg's children
// too (the group), not just the process kino started.
func TestJailKillsTheWholeGroup(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := Jail{}.command(ctx, "sh", []string{"-c", "sleep 300 & echo $!; wait"})
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 32)
	n, err := stdout.Read(line)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(line[:n])))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	_ = cmd.Wait()
	// The killed child is reparented and reaped by init; poll until it is
	// gone (a zombie counts as gone).
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		if errors.Is(err, os.ErrNotExist) || (err == nil && strings.Contains(string(stat), ") Z ")) {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("child %d of the killed group still runs", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestJailKeepsKinosEnvironmentOut: ffmpeg gets PATH (and the malloc
// setting that goes with the memory limit), none of kino's secrets.
func TestJailKeepsKinosEnvironmentOut(t *testing.T) {
	t.Setenv("KINO_SECRET_KEY", "do-not-leak")
	t.Setenv("KINO_ADMIN_TOKEN", "do-not-leak")
	j := Jail{Limits: RLimits{AddressSpace: 8 << 30}}
	out, err := j.command(context.Background(), "env", nil).Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "PATH=" + os.Getenv("PATH") + "\nMALLOC_ARENA_MAX=2\n"; string(out) != want {
		t.Errorf("environment:\n%s\nwant\n%s", out, want)
	}
}

// TestFFmpegDiesWithTheThreadThatStartedIt: ffmpeg's parent-death signal
// survives prlimit and the switch to another user (as root: nobody), so an
// ffmpeg whose starting thread ends is killed, as when kino dies; and Run
// keeps its thread while ffmpeg runs (the check passes on any thread, the
// main one included, which never ends).
func TestFFmpegDiesWithTheThreadThatStartedIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jails := map[string]Jail{
		"plain":       {Dir: dir},
		"with limits": {Dir: dir, Limits: DefaultRLimits()},
	}
	if os.Geteuid() == 0 {
		u, err := LookupUser("nobody")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o711); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dirOf(dir), 0o711); err != nil {
			t.Fatal(err)
		}
		jails["as nobody with limits"] = Jail{Dir: dir, User: u, Limits: DefaultRLimits()}
	}
	for name, j := range jails {
		if err := CheckDiesWithParent(context.Background(), j); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}
