// Package s3test starts a real S3 server for tests: versitygw, a single
// Go binary serving a directory over the S3 API, on a free loopback port.
// `just test` installs it when it is missing (go install
// github.com/versity/versitygw/cmd/versitygw@v1.8.0).
package s3test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/kino-video/kino/transport/s3"
)

// The test server's root account.
const (
	AccessKey = "kinotest"
	SecretKey = "kinotest-secret-key"
)

// Server is a running versitygw.
type Server struct {
	// Endpoint is its URL, http://127.0.0.1:<port>.
	Endpoint string
	// CredentialsFile holds its root keys as an AWS shared credentials file.
	CredentialsFile string
	// Dir is the directory it serves: one subdirectory per bucket.
	Dir string
}

// Binary is the versitygw to run: $VERSITYGW, else versitygw on the PATH,
// else in $GOBIN, else in $GOPATH/bin (~/go/bin), where go install puts it.
func Binary() (string, error) {
	if p := os.Getenv("VERSITYGW"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	dir := os.Getenv("GOBIN")
	if dir == "" {
		gopath, _, _ := strings.Cut(os.Getenv("GOPATH"), string(os.PathListSeparator))
		if gopath == "" {
			home, _ := os.UserHomeDir()
			gopath = filepath.Join(home, "go")
		}
		dir = filepath.Join(gopath, "bin")
	}
	p := filepath.Join(dir, "versitygw")
	if _, err := os.Stat(p); err != nil {
		return "", errors.New("versitygw not found: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0 (just test does)")
	}
	return p, nil
}

// Start runs a versitygw for t, stopped at its end. A machine without
// versitygw fails the test (CI installs it), unless it is skipped with
// -short.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if testing.Short() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := &Server{Dir: filepath.Join(dir, "root"), CredentialsFile: filepath.Join(dir, "credentials")}
	if err := os.Mkdir(s.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	creds := fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", AccessKey, SecretKey)
	if err := os.WriteFile(s.CredentialsFile, []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	// A free port: taken by the OS, released, then given to versitygw; if
	// another process takes it between, the next try picks another.
	for try := 0; ; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		// Any origin may read (CORS), as a bucket that players on other
		// sites read by kino's redirects is set up.
		cmd := exec.Command(bin, "--port", addr, "--quiet", "--cors-allow-origin", "*", "posix", "--sidecar", filepath.Join(dir, "meta"), s.Dir)
		cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+AccessKey, "ROOT_SECRET_ACCESS_KEY="+SecretKey)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := os.MkdirAll(filepath.Join(dir, "meta"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if up(addr, exited) {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
			})
			s.Endpoint = "http://" + addr
			return s
		}
		_ = cmd.Process.Kill()
		<-exited
		if try == 4 {
			t.Fatalf("versitygw did not start on %s: %s", addr, out.String())
		}
	}
}

// up waits until addr answers HTTP, or the process exits.
func up(addr string, exited <-chan struct{}) bool {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if resp, err := client.Get("http://" + addr + "/"); err == nil {
			resp.Body.Close()
			return true
		}
		select {
		case <-exited:
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return false
}

// Bucket creates a bucket of a name made from t's and returns the Config
// that reaches it.
func (s *Server) Bucket(t testing.TB) s3.Config {
	t.Helper()
	name := bucketName(t.Name())
	c, err := minio.New(strings.TrimPrefix(s.Endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.MakeBucket(context.Background(), name, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	return s3.Config{Endpoint: s.Endpoint, Bucket: name, PathStyle: true, Region: "us-east-1", CredentialsFile: s.CredentialsFile}
}

// bucketName is a valid bucket name (3-63 lower-case letters, digits and
// hyphens) made from a test's name.
func bucketName(test string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(test) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return strings.Trim("kino-"+name+fmt.Sprintf("-%d", time.Now().UnixNano()%1e9), "-")
}
