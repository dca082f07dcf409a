package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
)

// TestBinaryServeDevAndGracefulShutdown runs the real kino binary as a user
// would: `kino serve --dev`, a request with the printed key, then SIGTERM,
// which must end the process cleanly (exit 0).
func TestBinaryServeDevAndGracefulShutdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	passable(t, dir)
	bin := buildKino(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--dev", "--data", filepath.Join(dir, "data"),
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
	defer cmd.Process.Kill()

	keyc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if domain.WellFormedKey(sc.Text()) {
				keyc <- sc.Text()
			}
		}
	}()
	// The log line "kino serving ... listen=ADDR" says where it listens.
	listen := make(chan string, 1)
	stopped := make(chan bool, 1)
	go func() {
		re := regexp.MustCompile(`msg="kino serving".* listen=(\S+)`)
		shutdown := regexp.MustCompile(`msg="shutting down"`)
		sc := bufio.NewScanner(stderr)
		sawShutdown := false
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				listen <- m[1]
			}
			if shutdown.MatchString(sc.Text()) {
				sawShutdown = true
			}
		}
		stopped <- sawShutdown
	}()
	var key, addr string
	for key == "" || addr == "" {
		select {
		case key = <-keyc:
		case addr = <-listen:
		case <-ctx.Done():
			t.Fatal("kino serve --dev did not start and print a key")
		}
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/collections/default", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET default collection with the dev key: %d %s", resp.StatusCode, body)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kino serve after SIGTERM: %v", err)
	}
	if !<-stopped {
		t.Fatal("no shutdown logged")
	}
}
