package s3_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/kino-video/kino/transport/s3"
	"github.com/kino-video/kino/transport/s3/s3test"
)

func open(t *testing.T, cfg s3.Config) *s3.Store {
	t.Helper()
	s, err := s3.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// raw is a plain client of the test server, to look at the bucket from
// outside the store.
func raw(t *testing.T, cfg s3.Config) minio.Core {
	t.Helper()
	c, err := minio.New(strings.TrimPrefix(cfg.Endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(s3test.AccessKey, s3test.SecretKey, ""), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return minio.Core{Client: c}
}

func incomplete(t *testing.T, cfg s3.Config) []string {
	t.Helper()
	var keys []string
	for u := range raw(t, cfg).ListIncompleteUploads(context.Background(), cfg.Bucket, "", true) {
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		keys = append(keys, u.Key)
	}
	return keys
}

// proxy puts a reverse proxy in front of the server, in which fault may
// answer a request itself (true) instead of passing it on.
func proxy(t *testing.T, cfg s3.Config, fault func(w http.ResponseWriter, r *http.Request) bool) s3.Config {
	t.Helper()
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fault(w, r) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg.Endpoint = srv.URL
	return cfg
}

func slowDown(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
}

func TestStore(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	ctx := context.Background()

	t.Run("a large object goes up in parts and reads back by ranges", func(t *testing.T) {
		t.Parallel()
		cfg := srv.Bucket(t)
		cfg.Prefix = "kino/"
		s := open(t, cfg)
		data := make([]byte, 20<<20+123) // two parts of 16 MiB at most
		_, _ = rand.Read(data)
		path := filepath.Join(t.TempDir(), "original.mp4")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		put, err := s.Put(ctx, "V/original.mp4", f)
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Stat(ctx, "V/original.mp4")
		if err != nil || st.Size != int64(len(data)) || st.Digest == "" || st.Digest != put.Digest {
			t.Fatalf("stat %+v (put %+v): %v", st, put, err)
		}
		rc, info, err := s.Get(ctx, "V/original.mp4", 17<<20)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(got, data[17<<20:]) || info.Size != int64(len(data)) || info.Digest != st.Digest {
			t.Fatalf("ranged get: %d bytes, info %+v", len(got), info)
		}
		// At the end: nothing, but the object described.
		rc, info, err = s.Get(ctx, "V/original.mp4", int64(len(data)))
		if err != nil || info.Size != int64(len(data)) {
			t.Fatalf("get at the end: %+v %v", info, err)
		}
		if n, _ := io.Copy(io.Discard, rc); n != 0 {
			t.Fatalf("read %d bytes past the end", n)
		}
		// The prefix is kino's: objects lie under it, and List strips it.
		if _, err := raw(t, cfg).StatObject(ctx, cfg.Bucket, "kino/V/original.mp4", minio.StatObjectOptions{}); err != nil {
			t.Fatalf("not under the prefix: %v", err)
		}
		all, err := s.List(ctx)
		if err != nil || len(all) != 1 || all[0].Name != "V/original.mp4" || all[0].Size != int64(len(data)) {
			t.Fatalf("list %+v: %v", all, err)
		}
		if len(incomplete(t, cfg)) != 0 {
			t.Fatal("a finished upload left parts behind")
		}
	})

	t.Run("a missing object is fs.ErrNotExist; deleting it is fine", func(t *testing.T) {
		t.Parallel()
		s := open(t, srv.Bucket(t))
		if _, _, err := s.Get(ctx, "V/none", 0); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("get: %v", err)
		}
		if _, _, err := s.Get(ctx, "V/none", 10); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("ranged get: %v", err)
		}
		if _, err := s.Stat(ctx, "V/none"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("stat: %v", err)
		}
		if err := s.Delete(ctx, "V/none"); err != nil {
			t.Fatalf("delete: %v", err)
		}
	})

	t.Run("throttling and 5xx answers are tried again", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		cfg := proxy(t, srv.Bucket(t), func(w http.ResponseWriter, r *http.Request) bool {
			if n.Add(1)%2 == 0 { // every other request
				slowDown(w)
				return true
			}
			return false
		})
		s := open(t, cfg)
		if _, err := s.Put(ctx, "V/a", bytes.NewReader([]byte("hello"))); err != nil {
			t.Fatal(err)
		}
		rc, _, err := s.Get(ctx, "V/a", 1)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if string(got) != "ello" || n.Load() < 4 {
			t.Fatalf("got %q after %d requests", got, n.Load())
		}
	})

	t.Run("a service that keeps failing is an error, after a bounded number of tries", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		cfg := srv.Bucket(t)
		s := open(t, cfg)
		cfg = proxy(t, cfg, func(w http.ResponseWriter, r *http.Request) bool {
			n.Add(1)
			slowDown(w)
			return true
		})
		cfg.MaxRetries = 3
		if _, err := s3.Open(ctx, cfg); err == nil {
			t.Fatal("opened a bucket that answers 503")
		}
		_ = s
		if got := n.Load(); got != 3 {
			t.Fatalf("%d tries, want 3", got)
		}
	})

	t.Run("a failed multipart upload is aborted", func(t *testing.T) {
		t.Parallel()
		cfg := srv.Bucket(t)
		failing := proxy(t, cfg, func(w http.ResponseWriter, r *http.Request) bool {
			// Completing the upload is refused, for good.
			if r.Method == http.MethodPost && r.URL.Query().Has("uploadId") {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidPart</Code><Message>no</Message></Error>`)
				return true
			}
			return false
		})
		s := open(t, failing)
		data := make([]byte, 17<<20)
		if _, err := s.Put(ctx, "V/original.mp4", bytes.NewReader(data)); err == nil {
			t.Fatal("the upload succeeded")
		}
		if left := incomplete(t, cfg); len(left) != 0 {
			t.Fatalf("parts left behind: %v", left)
		}
		if _, err := open(t, cfg).Stat(ctx, "V/original.mp4"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("stat after a failed put: %v", err)
		}
	})

	t.Run("AbortIncomplete removes the uploads a crash left behind", func(t *testing.T) {
		t.Parallel()
		cfg := srv.Bucket(t)
		cfg.Prefix = "kino/"
		c := raw(t, cfg)
		for _, key := range []string{"kino/01ARZ3NDEKTSV4RRFFQ69G5FAV/original.mp4", "kino/notkinos", "other/file"} {
			if _, err := c.NewMultipartUpload(ctx, cfg.Bucket, key, minio.PutObjectOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		s := open(t, cfg)
		if got, err := s.AbortIncomplete(ctx, time.Hour); err != nil || len(got) != 0 {
			t.Fatalf("aborted young uploads: %v %v", got, err)
		}
		got, err := s.AbortIncomplete(ctx, 0)
		if err != nil || len(got) != 1 || got[0] != "01ARZ3NDEKTSV4RRFFQ69G5FAV/original.mp4" {
			t.Fatalf("aborted %v: %v", got, err)
		}
		if left := incomplete(t, cfg); len(left) != 2 {
			t.Fatalf("left %v: those outside the prefix, or not named by a video, are not kino's", left)
		}
	})

	t.Run("a presigned URL reads the object without credentials", func(t *testing.T) {
		t.Parallel()
		s := open(t, srv.Bucket(t))
		if _, err := s.Put(ctx, "V/hls/index.m3u8", strings.NewReader("#EXTM3U\n")); err != nil {
			t.Fatal(err)
		}
		u, err := s.Presign(ctx, "V/hls/index.m3u8", time.Minute, "application/vnd.apple.mpegurl", "private, max-age=60")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(u.String())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "#EXTM3U\n" || resp.Header.Get("Content-Type") != "application/vnd.apple.mpegurl" ||
			resp.Header.Get("Cache-Control") != "private, max-age=60" {
			t.Fatalf("%d %q %v", resp.StatusCode, body, resp.Header)
		}
		u.RawQuery = strings.Replace(u.RawQuery, "X-Amz-Signature=", "X-Amz-Signature=0", 1)
		if resp, err := http.Get(u.String()); err != nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("a tampered URL: %v %v", resp, err)
		}
	})

	t.Run("open refuses a missing bucket, wrong keys and a bad endpoint", func(t *testing.T) {
		t.Parallel()
		cfg := srv.Bucket(t)
		missing := cfg
		missing.Bucket = "no-such-bucket"
		if _, err := s3.Open(ctx, missing); err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("missing bucket: %v", err)
		}
		wrong := cfg
		wrong.CredentialsFile = filepath.Join(t.TempDir(), "credentials")
		_ = os.WriteFile(wrong.CredentialsFile, []byte("[default]\naws_access_key_id = kinotest\naws_secret_access_key = not-the-secret-3141\n"), 0o600)
		if _, err := s3.Open(ctx, wrong); err == nil {
			t.Fatal("opened with a wrong secret")
		} else if strings.Contains(err.Error(), "3141") || strings.Contains(err.Error(), s3test.SecretKey) {
			t.Fatalf("the error shows a secret: %v", err)
		}
		for _, ep := range []string{"s3.example.com", "ftp://x", "http://user:pw@host", "http://host/path"} {
			bad := cfg
			bad.Endpoint = ep
			if _, err := s3.Open(ctx, bad); err == nil || strings.Contains(err.Error(), "pw") {
				t.Fatalf("endpoint %q: %v", ep, err)
			}
		}
	})
}
