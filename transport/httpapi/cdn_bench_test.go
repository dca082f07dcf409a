package httpapi

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oklog/ulid/v2"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/objects"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/playback"
)

// BenchmarkCDNSegment measures /cdn serving one HLS segment over loopback
// HTTP, from the media directory and from the JetStream object store
// (embedded server), whole and as a Range from its middle, from every
// core at once. docs/performance.md records the numbers.
//
//	go test -run '^$' -bench CDNSegment -benchtime 3s ./transport/httpapi/
func BenchmarkCDNSegment(b *testing.B) {
	for _, size := range []int{256 << 10, 1536 << 10} {
		for _, backend := range []string{"dir", "dir+signed", "nats", "nats+cache"} {
			b.Run(fmt.Sprintf("%s/%dKiB", backend, size>>10), func(b *testing.B) {
				url := cdnBench(b, backend, size)
				for _, rng := range []string{"", fmt.Sprintf("bytes=%d-", size/2)} {
					name := "whole"
					if rng != "" {
						name = "range"
					}
					b.Run(name, func(b *testing.B) {
						want := int64(size)
						if rng != "" {
							want = int64(size - size/2)
						}
						b.SetBytes(want)
						b.RunParallel(func(pb *testing.PB) {
							for pb.Next() {
								req, _ := http.NewRequest(http.MethodGet, url, nil)
								if rng != "" {
									req.Header.Set("Range", rng)
								}
								resp, err := http.DefaultClient.Do(req)
								if err != nil {
									b.Error(err)
									return
								}
								n, _ := io.Copy(io.Discard, resp.Body)
								resp.Body.Close()
								if n != want {
									b.Errorf("%d bytes, want %d (status %d)", n, want, resp.StatusCode)
									return
								}
							}
						})
					})
				}
			})
		}
	}
}

// cdnBench serves a video with one segment of size bytes from backend and
// returns the segment's URL.
func cdnBench(b *testing.B, backend string, size int) string {
	var cache int64
	if backend == "nats+cache" {
		cache = 64 << 20
	}
	b.Helper()
	ctx := context.Background()
	store := eventstoretest.Run(b)
	db, err := projections.OpenDB(filepath.Join(b.TempDir(), "projections.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	proj, err := projections.NewProjector(db, store, quiet)
	if err != nil {
		b.Fatal(err)
	}
	type benchMedia interface {
		Media
		WorkDir(ctx context.Context, id, ext string, owner *media.Owner) (string, error)
		Publish(ctx context.Context, id, workDir string) error
	}
	var ms benchMedia
	if strings.HasPrefix(backend, "dir") {
		ms, err = media.OpenDir(b.TempDir())
	} else {
		obj, oerr := objects.Open(ctx, store)
		if oerr != nil {
			b.Fatal(oerr)
		}
		ms, err = media.OpenBucket(obj, b.TempDir(), cache)
	}
	if err != nil {
		b.Fatal(err)
	}
	f, err := ms.Incoming()
	if err != nil {
		b.Fatal(err)
	}
	f.Close()
	id := ulid.Make().String()
	if err := ms.Commit(ctx, f.Name(), id, ".mp4"); err != nil {
		b.Fatal(err)
	}
	work, err := ms.WorkDir(ctx, id, ".mp4", nil)
	if err != nil {
		b.Fatal(err)
	}
	seg := make([]byte, size)
	rand.Read(seg)
	for rel, data := range map[string][]byte{"hls/720p/seg_00000.ts": seg, "thumbnail.jpg": {1}, "preview.mp4": {1}} {
		p := filepath.Join(work, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	os.Remove(filepath.Join(work, media.InputName(".mp4")))
	if err := ms.Publish(ctx, id, work); err != nil {
		b.Fatal(err)
	}
	// The video's record: /cdn serves only the files of a known video,
	// and checks a signed one's token.
	run, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- proj.Run(run) }()
	b.Cleanup(func() { stop(); <-done })
	policy := domain.PlaybackPublic
	if backend == "dir+signed" {
		policy = domain.PlaybackSigned
	}
	res, err := eventstore.Execute[domain.Video](ctx, store, videoStream(id), domain.AcceptUpload{Account: "bench",
		Collection: "main", CollectionName: "Main", Filename: "b.mp4", Size: 1, MaxSize: 1 << 30, PlaybackPolicy: policy})
	if err != nil {
		b.Fatal(err)
	}
	if err := proj.WaitFor(ctx, res.LastSeq()); err != nil {
		b.Fatal(err)
	}
	key := bytes.Repeat([]byte{1}, 32)
	s, err := New(Config{Store: store, Queues: queue.New(store), DB: db, Projector: proj, Media: ms, Log: quiet,
		Origin: Origin{CDNURL: "http://cdn.example.test/cdn"}, Playback: Playback{Keys: fixedRing(key)}})
	if err != nil {
		b.Fatal(err)
	}
	srv := serveHTTP(s)
	benchServers[srv.URL] = s
	b.Cleanup(srv.Close)
	u := srv.URL + "/cdn/" + id + "/hls/720p/seg_00000.ts"
	if policy == domain.PlaybackSigned {
		tok, _, err := playback.Tokens{Ring: fixedRing(key), Now: time.Now}.Mint(ctx, id, "", time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		u += "?token=" + tok
	}
	return u
}

// benchServers are the servers cdnBench started, by their URL.
var benchServers = map[string]*Server{}

// BenchmarkCDNAccess measures what signed playback adds to every /cdn
// request, without the network or the file: the video's record read from
// the read models (every video), and a token checked (signed videos:
// kino's HS256, a customer's EdDSA with its key read from the read
// models). docs/performance.md records the numbers.
//
//	go test -run '^$' -bench CDNAccess ./transport/httpapi/
func BenchmarkCDNAccess(b *testing.B) {
	for _, kind := range []string{"public", "signed/kino", "signed/customer"} {
		b.Run(kind, func(b *testing.B) {
			backend := "dir"
			if kind != "public" {
				backend = "dir+signed"
			}
			u := cdnBench(b, backend, 1024)
			s := benchServers[u[:strings.Index(u, "/cdn/")]]
			id := u[strings.Index(u, "/cdn/")+5:][:26]
			if kind == "signed/customer" {
				ctx := context.Background()
				pub, priv, _ := ed25519.GenerateKey(nil)
				kid := s.cfg.Store.NewID()
				if _, err := eventstore.Execute[domain.Account](ctx, s.cfg.Store, domain.AccountStream("bench"), domain.CreateAccount{Slug: "bench", Plan: domain.PlanPro}); err != nil {
					b.Fatal(err)
				}
				res, err := eventstore.Execute[domain.Account](ctx, s.cfg.Store, domain.AccountStream("bench"),
					domain.CreateSigningKey{KeyID: kid, PublicKey: base64.RawURLEncoding.EncodeToString(pub)})
				if err != nil {
					b.Fatal(err)
				}
				if err := s.cfg.Projector.WaitFor(ctx, res.LastSeq()); err != nil {
					b.Fatal(err)
				}
				t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.RegisteredClaims{Subject: id, ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))})
				t.Header["kid"] = kid
				tok, err := t.SignedString(priv)
				if err != nil {
					b.Fatal(err)
				}
				u = u[:strings.Index(u, "?")] + "?token=" + tok
			}
			req := httptest.NewRequest(http.MethodGet, u, nil)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.cdn.Access(req, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fixedRing is a key ring of one key that never rotates: what /cdn's
// check of a token costs, without the ring's store.
type fixedRing []byte

func (k fixedRing) Current(context.Context) (string, []byte, error) { return "bench", k, nil }
func (k fixedRing) Lookup(_ context.Context, id string) ([]byte, bool, error) {
	return k, id == "bench", nil
}

// BenchmarkCDNHandler measures what serving a public segment costs the
// process per request, without the network: the whole handler chain
// (logging, metrics, routing, access, headers) with the file's bytes sent
// to a writer that drops them.
//
//	go test -run '^$' -bench CDNHandler ./transport/httpapi/
func BenchmarkCDNHandler(b *testing.B) {
	u := cdnBench(b, "dir", 1024)
	s := benchServers[u[:strings.Index(u, "/cdn/")]]
	h := s.Handler()
	b.ReportAllocs()
	for b.Loop() {
		w := &discardWriter{h: http.Header{}}
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, u, nil))
		if w.status != http.StatusOK || w.n != 1024 {
			b.Fatalf("status %d, %d bytes", w.status, w.n)
		}
	}
}

// discardWriter is a ResponseWriter that counts the body and drops it.
type discardWriter struct {
	h      http.Header
	status int
	n      int64
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += int64(len(p))
	return len(p), nil
}
