package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
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
)

// kinoProc is a running kino binary.
type kinoProc struct {
	cmd       *exec.Cmd
	key, addr string
}

// startKino runs `kino serve --dev` on data and waits until it serves.
func startKino(t *testing.T, ctx context.Context, bin, data string) *kinoProc {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, "serve", "--dev", "--data", data,
		"--addr", "127.0.0.1:0", "--nats-listen", "127.0.0.1:0")
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
	keyc, listen := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if domain.WellFormedKey(sc.Text()) {
				keyc <- sc.Text()
			}
		}
	}()
	go func() {
		re := regexp.MustCompile(`msg="kino serving".* listen=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				listen <- m[1]
			}
		}
	}()
	p := &kinoProc{cmd: cmd}
	for p.addr == "" {
		select {
		case p.key = <-keyc:
		case p.addr = <-listen:
		case <-ctx.Done():
			t.Fatal("kino serve did not start")
		}
	}
	select { // the dev key is printed before it serves, on a first start only
	case p.key = <-keyc:
	default:
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

// TestKill9KillsFFmpegAndTheNextStartSweeps: kill -9 of kino serve while
// ffmpeg encodes kills ffmpeg too (its parent-death signal survives the
// prlimit wrapper and the switch to --ffmpeg-user), and the next start
// removes the dead attempt's work directory at once (not an hour later).
func TestKill9KillsFFmpegAndTheNextStartSweeps(t *testing.T) {
	if _, err := os.Stat("/proc/self/cwd"); err != nil {
		t.Skip("needs /proc to find ffmpeg")
	}
	dir := t.TempDir()
	passable(t, dir)
	bin := filepath.Join(dir, "kino")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := filepath.Join(dir, "data")
	work := filepath.Join(data, "media", ".work")
	k := startKino(t, ctx, bin, data)

	// Five minutes of video: its ladder runs for many seconds.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("collection", "default")
	fw, _ := mw.CreateFormFile("file", "long.mp4")
	_, _ = fw.Write(makeClip(t, "long.mp4", 320, 180, 300, false))
	_ = mw.Close()
	req, _ := http.NewRequest("POST", "http://"+k.addr+"/v1/videos", &body)
	req.Header.Set("Authorization", "Bearer "+k.key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("upload: %d", resp.StatusCode)
	}

	var running map[int]string
	for len(running) == 0 {
		if running = ffmpegsUnder(t, work); len(running) == 0 {
			if ctx.Err() != nil {
				t.Fatal("ffmpeg never started")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Cleanup(func() { // should the test fail: no ffmpeg left behind
		for pid := range running {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if err := k.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = k.cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for pid, cwd := range running {
		for processAlive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("ffmpeg %d (in %s) outlived kino killed with SIGKILL", pid, cwd)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	var dead []string // the dead attempts' work directories
	for _, cwd := range running {
		d := cwd
		for filepath.Dir(d) != work {
			d = filepath.Dir(d)
		}
		dead = append(dead, d)
	}
	startKino(t, ctx, bin, data)
	for _, d := range dead {
		for {
			_, err := os.Stat(d)
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("the dead attempt's work directory %s is still there after the restart (%v)", d, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
