package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
)

// kinoProc is a running kino binary.
type kinoProc struct {
	cmd        *exec.Cmd
	addr, nats string      // of a kino serve
	keys       chan string // what it prints that looks like a key
}

// devKey is the key kino serve --dev prints on its first start (on
// stdout, before it logs that it serves on stderr: the two pipes are read
// apart, so the key may come second).
func (p *kinoProc) devKey(t *testing.T, ctx context.Context) string {
	t.Helper()
	select {
	case k := <-p.keys:
		return k
	case <-ctx.Done():
		t.Fatal("kino serve --dev printed no key")
		return ""
	}
}

// startKino runs the kino binary with args and waits until it logs that it
// runs (`kino serving`, whose API and NATS addresses it keeps, or `kino
// worker running`).
func startKino(t *testing.T, ctx context.Context, bin string, args ...string) *kinoProc {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	keyc, ready := make(chan string, 1), make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if domain.WellFormedKey(sc.Text()) {
				keyc <- sc.Text()
			}
		}
	}()
	go func() {
		serving := regexp.MustCompile(`msg="kino serving".* listen=(\S+) nats=(\S+)`)
		working := regexp.MustCompile(`msg="kino worker running"`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				ready <- m[1:]
			} else if working.MatchString(sc.Text()) {
				ready <- nil
			}
		}
	}()
	p := &kinoProc{cmd: cmd, keys: keyc}
	select {
	case m := <-ready:
		if m != nil {
			p.addr, p.nats = m[0], m[1]
		}
	case <-ctx.Done():
		t.Fatalf("kino %v did not start", args)
	}
	return p
}

// ffmpegsUnder lists the ffmpeg processes whose working directory is under
// dir, with those directories.
func ffmpegsUnder(t *testing.T, dir string) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile("/proc/" + en.Name() + "/comm")
		cwd, err := os.Readlink("/proc/" + en.Name() + "/cwd")
		if err == nil && strings.TrimSpace(string(comm)) == "ffmpeg" && strings.HasPrefix(cwd, dir+"/") && processAlive(pid) {
			out[pid] = cwd
		}
	}
	return out
}

func processAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(stat), ") Z ")
}

// TestKill9KillsFFmpegAndTheNextStartSweeps: kill -9 of kino serve, or
// of a kino worker, while ffmpeg encodes kills ffmpeg too (its
// parent-death signal survives the prlimit wrapper and the switch to
// --ffmpeg-user), and the next start of that process removes the dead
// attempt's work directory at once (not an hour later, and by a kino
// worker too).
func TestKill9KillsFFmpegAndTheNextStartSweeps(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/cwd"); err != nil {
		t.Skip("needs /proc to find ffmpeg")
	}
	dir := t.TempDir()
	passable(t, dir)
	bin := buildKino(t)
	clip, err := os.ReadFile(ffmpegtest.LongClip(t, t.TempDir(), "long.mp4", 300)) // its ladder runs for many seconds
	if err != nil {
		t.Fatal(err)
	}
	for _, victim := range []string{"serve", "worker"} {
		t.Run("kill -9 kino "+victim, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			data := filepath.Join(dir, victim)
			work := filepath.Join(data, "media", ".work")
			serveArgs := []string{"serve", "--dev", "--data", data, "--addr", "127.0.0.1:0", "--nats-listen", "127.0.0.1:0"}
			if victim == "worker" {
				serveArgs = append(serveArgs, "--workers", "0")
			}
			serve := startKino(t, ctx, bin, serveArgs...)
			startVictim := func() *kinoProc {
				if victim == "serve" {
					return startKino(t, ctx, bin, serveArgs...)
				}
				return startKino(t, ctx, bin, "worker", "--data", data, "--nats", serve.nats, "--webhook-workers", "0")
			}
			k := serve
			if victim == "worker" {
				k = startVictim()
			}
			upload(t, serve, serve.devKey(t, ctx), clip)
			running := waitFFmpeg(t, work)
			if err := k.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = k.cmd.Wait()
			for pid, cwd := range running {
				eventstoretest.Eventually(t, fmt.Sprintf("ffmpeg %d (in %s) to die with kino %s killed with SIGKILL", pid, cwd, victim),
					func() bool { return !processAlive(pid) })
			}
			var dead []string // the dead attempts' work directories
			for _, cwd := range running {
				d := cwd
				for filepath.Dir(d) != work {
					d = filepath.Dir(d)
				}
				dead = append(dead, d)
			}
			startVictim()
			for _, d := range dead {
				eventstoretest.Eventually(t, fmt.Sprintf("kino %s, restarted, to sweep the dead attempt's work directory %s", victim, d), func() bool {
					_, err := os.Stat(d)
					return errors.Is(err, fs.ErrNotExist)
				})
			}
		})
	}
}

// upload posts data as a video to the dev account's default collection.
func upload(t *testing.T, k *kinoProc, key string, data []byte) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("collection", "default")
	fw, _ := mw.CreateFormFile("file", "long.mp4")
	_, _ = fw.Write(data)
	_ = mw.Close()
	req, _ := http.NewRequest("POST", "http://"+k.addr+"/v1/videos", &body)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
}

// waitFFmpeg waits until ffmpeg runs in a work directory under work, and
// makes sure (should the test fail) that none is left behind.
func waitFFmpeg(t *testing.T, work string) map[int]string {
	t.Helper()
	var running map[int]string
	eventstoretest.Eventually(t, "ffmpeg to start", func() bool {
		running = ffmpegsUnder(t, work)
		return len(running) > 0
	})
	t.Cleanup(func() {
		for pid := range running {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return running
}
