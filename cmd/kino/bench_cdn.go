package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/media"
)

// benchCDN measures /cdn serving one 1.5 MiB segment to 8 clients from a
// kino with --media nats, with its local copies (the default) and without,
// against the same from a kino with --media dir (goal >= 0.70), in MB/s.
func benchCDN(ctx context.Context, o benchOptions, say func(string, ...any)) ([]result, error) {
	const size = 1536 << 10
	variants := []struct {
		name    string
		kind    string
		cacheMB int
	}{{"cached", mediaNATS, 1024}, {"uncached", mediaNATS, 0}, {"dir", mediaDir, 0}}
	urls := map[string]string{}
	for _, v := range variants {
		dir, err := os.MkdirTemp("", "kino-bench-cdn-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		m := &Main{Config: Config{Addr: "127.0.0.1:0", Data: dir, NATSListen: "127.0.0.1:0", Plans: domain.DefaultPlans(),
			Media: v.kind, MediaCache: v.cacheMB, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
		if err := m.Run(ctx); err != nil {
			m.Close()
			return nil, err
		}
		defer m.Close()
		id, err := benchSegment(ctx, m.media, m.store.NewID(), size)
		if err != nil {
			return nil, err
		}
		urls[v.name] = m.URL() + "/cdn/" + id + "/hls/720p/seg_00000.ts"
	}
	client := loadClient(8)
	say("cdn (%d runs of %s each, object store with and without local copies, and directory)", o.runs, o.duration)
	runs := map[string][]float64{}
	for i := 0; i < o.runs; i++ {
		for _, v := range variants {
			rps, _, _, err := load(ctx, client, 8, o.duration, func(int) (*http.Request, error) { return http.NewRequest("GET", urls[v.name], nil) })
			if err != nil {
				return nil, err
			}
			runs[v.name] = append(runs[v.name], math.Round(rps*size/1e6*10)/10)
		}
	}
	var out []result
	for _, v := range variants[:2] {
		r := result{Measure: "/cdn 1.5 MiB segment, object store (" + v.name + ") vs directory (8 clients)", Unit: "MB/s", Goal: ">= 0.70", HigherWin: true,
			KinoRuns: runs[v.name], BaseRuns: runs["dir"]}
		r.finish(0.70)
		out = append(out, r)
	}
	out[0].Notes = "--media nats with --media-cache-mb 1024 (the default): the segment is read from NATS once, then from the local copy"
	out[1].Notes = "--media nats with --media-cache-mb 0: every read goes through NATS; see docs/performance.md"
	return out, nil
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
	work, err := ms.WorkDir(ctx, id, ".mp4", nil)
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
	if err := os.Remove(filepath.Join(work, media.InputName(".mp4"))); err != nil {
		return "", fmt.Errorf("bench segment: %w", err)
	}
	return id, ms.Publish(ctx, id, work)
}
