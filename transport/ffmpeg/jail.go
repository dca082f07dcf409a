package ffmpeg

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"time"
)

// Jail is how an ffmpeg or ffprobe process is confined. The zero Jail runs
// it in kino's working directory, as kino's user, without resource limits
// (but still in its own process group, killed with kino).
type Jail struct {
	// Dir is the process's working directory; relative Input and output
	// paths are relative to it.
	Dir string
	// User, when set, is the unprivileged user the process runs as (kino
	// must be root to switch).
	User *User
	// Limits are applied before ffmpeg starts.
	Limits RLimits
	// Tools is the directory ffmpeg and ffprobe are run from ("": found on
	// PATH).
	Tools string
	// Nice, when above 0, lowers the process's scheduling priority by as
	// much (nice -n, so that every thread ffmpeg starts has it): the high
	// lane of a ladder in lanes leaves the cores to the low lane, which
	// decides when the video plays.
	Nice int
}

// User is a system user ffmpeg runs as.
type User struct {
	Name     string
	UID, GID uint32
}

// LookupUser finds a user by name (or numeric uid) in the system's user
// database.
func LookupUser(name string) (*User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if u, err = user.LookupId(name); err != nil {
			return nil, fmt.Errorf("ffmpeg user %q: %w", name, err)
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("ffmpeg user %q: uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("ffmpeg user %q: gid %q: %w", name, u.Gid, err)
	}
	return &User{Name: u.Username, UID: uint32(uid), GID: uint32(gid)}, nil
}

// RLimits are resource limits of one process; a zero field is no limit.
type RLimits struct {
	AddressSpace int64         // bytes of virtual memory (RLIMIT_AS)
	CPU          time.Duration // CPU time over all threads (RLIMIT_CPU), whole seconds
	OpenFiles    int           // file descriptors (RLIMIT_NOFILE)
}

// DefaultRLimits are limits a 4K ladder fits under with room to spare:
// 16 GiB of address space (x264's lookahead and threads reserve far more
// than they touch), 512 descriptors. CPU time is set per run from its
// wall-clock cap.
func DefaultRLimits() RLimits {
	return RLimits{AddressSpace: 16 << 30, OpenFiles: 512}
}

// WithCPUFor returns l with the CPU limit of a run that may last wall: all
// cores busy for all of it. A CPU limit already set is kept.
func (l RLimits) WithCPUFor(wall time.Duration) RLimits {
	if l.CPU == 0 && wall > 0 {
		l.CPU = wall * time.Duration(runtime.NumCPU())
	}
	return l
}

func (l RLimits) any() bool { return l.AddressSpace > 0 || l.CPU > 0 || l.OpenFiles > 0 }

// prlimitArgs are the arguments of util-linux prlimit that apply l and then
// exec the command. prlimit sets the limits on itself and then execs: the
// command never runs a single instruction without them. (Setting them from
// kino with prlimit(2) on the child's pid after Start would leave it
// running unlimited until the call lands.)
func (l RLimits) prlimitArgs() []string {
	var args []string
	if l.AddressSpace > 0 {
		args = append(args, "--as="+strconv.FormatInt(l.AddressSpace, 10))
	}
	if l.CPU > 0 {
		args = append(args, "--cpu="+strconv.FormatInt(int64(max(l.CPU.Round(time.Second), time.Second)/time.Second), 10))
	}
	if l.OpenFiles > 0 {
		args = append(args, "--nofile="+strconv.Itoa(l.OpenFiles))
	}
	return append(args, "--")
}

// command builds the exec.Cmd of bin with args under j: through prlimit
// when there are limits, in j.Dir, as j.User, in a process group of its own
// that is killed as a whole when ctx ends, and (on Linux) killed when kino
// dies.
func (j Jail) command(ctx context.Context, bin string, args []string) *exec.Cmd {
	if j.Tools != "" {
		bin = filepath.Join(j.Tools, bin)
	}
	name := bin
	if j.Nice > 0 && limitsSupported {
		args = append([]string{"-n", strconv.Itoa(j.Nice), bin}, args...)
		name, bin = "nice", "nice"
	}
	if j.Limits.any() && limitsSupported {
		args = append(append(j.Limits.prlimitArgs(), bin), args...)
		name = "prlimit"
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = j.Dir
	cmd.WaitDelay = waitDelay
	confine(cmd, j.User)
	// Only PATH (prlimit finds ffmpeg by it) of kino's environment: it may
	// hold secrets (KINO_SECRET_KEY, KINO_ADMIN_TOKEN...), and ffmpeg needs
	// none of it.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	// glibc reserves up to 64 MiB of address space per thread arena: with
	// many threads that alone would meet the address-space limit.
	if j.Limits.AddressSpace > 0 {
		cmd.Env = append(cmd.Env, "MALLOC_ARENA_MAX=2")
	}
	return cmd
}
