package main

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kino-video/kino/cmd/kino/bench"
	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/s3"
)

// startCDNKino starts a private, quiet kino serve with the media store s
// (s3c: the bucket of an s3 store) holding the segments of kino bench's
// cdn measure.
func startCDNKino(ctx context.Context, s bench.CDNStore, s3c s3.Config) (bench.CDNKino, error) {
	m, dir, id, err := prepareCDN(ctx, s, s3c)
	if err != nil {
		return bench.CDNKino{}, err
	}
	k := cdnKino(m.URL(), dir, m.media, id)
	k.Stop = func() {
		m.Close()
		os.RemoveAll(dir)
	}
	return k, nil
}

// startCDNProcess is startCDNKino's data served by a kino serve process
// of its own (binary; "": this executable), as a deployment runs it: the
// data directory is prepared in this process, which then lets it go.
func startCDNProcess(ctx context.Context, s bench.CDNStore, s3c s3.Config, binary string) (bench.CDNKino, error) {
	m, dir, id, err := prepareCDN(ctx, s, s3c)
	if err != nil {
		return bench.CDNKino{}, err
	}
	ms := m.media
	m.Close()
	fail := func(err error) (bench.CDNKino, error) {
		os.RemoveAll(dir)
		return bench.CDNKino{}, err
	}
	if binary, err = kinoBinary(binary); err != nil {
		return fail(err)
	}
	addr, err := bench.FreeAddr()
	if err != nil {
		return fail(err)
	}
	args := []string{"serve", "--addr", addr, "--data", dir, "--nats-listen", "127.0.0.1:0", "--log-level", "error", "--workers", "0",
		"--media", s.Kind, "--media-cache-mb", strconv.Itoa(s.CacheMB)}
	if s.Kind == mediaS3 {
		args = append(args, "--s3-endpoint", s3c.Endpoint, "--s3-bucket", s3c.Bucket, "--s3-region", s3c.Region,
			"--s3-prefix", s3c.Prefix, "--s3-credentials-file", s3c.CredentialsFile, "--s3-path-style="+strconv.FormatBool(s3c.PathStyle))
	}
	stop, err := bench.StartServer(ctx, "kino serve", exec.Command(binary, args...), addr)
	if err != nil {
		return fail(err)
	}
	k := cdnKino("http://"+addr, dir, ms, id)
	k.Stop = func() {
		stop()
		os.RemoveAll(dir)
	}
	// Listening comes before ready (the read models catching up).
	probe := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		resp, err := probe.Get(k.Base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return k, nil
			}
		}
		select {
		case <-ctx.Done():
			k.Stop()
			return bench.CDNKino{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	k.Stop()
	return bench.CDNKino{}, errors.New("kino serve not ready within 30 s")
}

// kinoBinary is binary, or this executable when "".
func kinoBinary(binary string) (string, error) {
	if binary != "" {
		return binary, nil
	}
	return os.Executable()
}

// prepareCDN starts a private, quiet kino on a new data directory with the
// media store s, holding one video with the cdn measure's segments.
func prepareCDN(ctx context.Context, s bench.CDNStore, s3c s3.Config) (*Main, string, string, error) {
	dir, err := os.MkdirTemp("", "kino-bench-cdn-")
	if err != nil {
		return nil, "", "", err
	}
	m := &Main{Config: Config{Addr: "127.0.0.1:0", Data: dir, NATSListen: "127.0.0.1:0", Plans: domain.DefaultPlans(),
		Media: s.Kind, S3: s3c, MediaCache: s.CacheMB, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	fail := func(err error) (*Main, string, string, error) {
		m.Close()
		os.RemoveAll(dir)
		return nil, "", "", err
	}
	if err := m.Run(ctx); err != nil {
		return fail(err)
	}
	id, err := benchSegments(ctx, m.media, m.store.NewID())
	if err != nil {
		return fail(err)
	}
	// /cdn serves the files of a video the read models know.
	res, err := eventstore.Execute[domain.Video](ctx, m.store, domain.VideoStream(id), domain.AcceptUpload{Account: "bench",
		Collection: "bench", CollectionName: "bench", Filename: "bench.mp4", Size: 1, MaxSize: 1 << 30})
	if err == nil {
		err = m.projector.WaitFor(ctx, res.LastSeq())
	}
	if err != nil {
		return fail(err)
	}
	return m, dir, id, nil
}

// cdnKino names the segments of video id on the kino at base.
func cdnKino(base, dir string, ms mediaStore, id string) bench.CDNKino {
	k := bench.CDNKino{Base: base, Segment: base + "/cdn/" + id + "/" + segmentPath, Large: base + "/cdn/" + id + "/" + largePath,
		LargeFile: id + "/" + largePath}
	if d, ok := ms.(*media.Dir); ok {
		k.Root = d.Root()
	}
	return k
}

// The cdn measure's segments, in one video.
const (
	segmentPath = "hls/720p/seg_00000.ts"
	largePath   = "hls/1080p/seg_00000.m4s"
)

// benchSegments publishes a video holding two random segments, of
// bench.SegmentSize and bench.LargeSegmentSize bytes, as video id in ms
// and returns id.
func benchSegments(ctx context.Context, ms mediaStore, id string) (string, error) {
	f, err := ms.Incoming()
	if err != nil {
		return "", err
	}
	f.Close()
	if err := ms.Commit(ctx, f.Name(), id, ".mp4"); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(ms.WorkRoot(), id+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	random := func(n int) []byte {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return b
	}
	files := map[string][]byte{segmentPath: random(bench.SegmentSize), largePath: random(bench.LargeSegmentSize),
		media.ThumbnailName: {1}, media.PreviewName: {1}}
	for rel, data := range files {
		p := filepath.Join(work, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return "", err
		}
	}
	return id, ms.Publish(ctx, id, work)
}
