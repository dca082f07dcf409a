package main

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/kino-video/kino/cmd/kino/bench"
	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/s3"
)

// startCDNKino starts a private, quiet kino serve with the media store s
// (s3c: the bucket of an s3 store) holding one segment of
// bench.SegmentSize bytes, for kino bench's cdn measure.
func startCDNKino(ctx context.Context, s bench.CDNStore, s3c s3.Config) (string, func(), error) {
	dir, err := os.MkdirTemp("", "kino-bench-cdn-")
	if err != nil {
		return "", nil, err
	}
	m := &Main{Config: Config{Addr: "127.0.0.1:0", Data: dir, NATSListen: "127.0.0.1:0", Plans: domain.DefaultPlans(),
		Media: s.Kind, S3: s3c, MediaCache: s.CacheMB, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	stop := func() {
		m.Close()
		os.RemoveAll(dir)
	}
	if err := m.Run(ctx); err != nil {
		stop()
		return "", nil, err
	}
	id, err := benchSegment(ctx, m.media, m.store.NewID(), bench.SegmentSize)
	if err != nil {
		stop()
		return "", nil, err
	}
	// /cdn serves the files of a video the read models know.
	res, err := eventstore.Execute[domain.Video](ctx, m.store, domain.VideoStream(id), domain.AcceptUpload{Account: "bench",
		Collection: "bench", CollectionName: "bench", Filename: "bench.mp4", Size: 1, MaxSize: 1 << 30})
	if err == nil {
		err = m.projector.WaitFor(ctx, res.LastSeq())
	}
	if err != nil {
		stop()
		return "", nil, err
	}
	return m.URL() + "/cdn/" + id + "/hls/720p/seg_00000.ts", stop, nil
}

// benchSegment publishes a video holding one random segment of size bytes
// as video id in ms and returns id.
func benchSegment(ctx context.Context, ms mediaStore, id string, size int) (string, error) {
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
	seg := make([]byte, size)
	_, _ = rand.Read(seg)
	for rel, data := range map[string][]byte{"hls/720p/seg_00000.ts": seg, media.ThumbnailName: {1}, media.PreviewName: {1}} {
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
