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
// kino with --media nats against the same from a kino with --media dir
// (goal >= 0.70), in MB/s.
func benchCDN(ctx context.Context, o benchOptions, say func(string, ...any)) (result, error) {
	const size = 1536 << 10
	r := result{Measure: "/cdn 1.5 MiB segment, object store vs directory (8 clients)", Unit: "MB/s", Goal: ">= 0.70", HigherWin: true}
	urls := map[string]string{}
	for _, kind := range []string{mediaNATS, mediaDir} {
		dir, err := os.MkdirTemp("", "kino-bench-cdn-")
		if err != nil {
			return r, err
		}
		defer os.RemoveAll(dir)
		plans := domain.DefaultPlans()
		m := &Main{Config: Config{Addr: "127.0.0.1:0", Data: dir, NATSListen: "127.0.0.1:0", Plans: plans, Media: kind,
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
		if err := m.Run(ctx); err != nil {
			m.Close()
			return r, err
		}
		defer m.Close()
		id, err := benchSegment(ctx, m.media, m.store.NewID(), size)
		if err != nil {
			return r, err
		}
		urls[kind] = m.URL() + "/cdn/" + id + "/hls/720p/seg_00000.ts"
	}
	client := loadClient(8)
	say("cdn (%d runs of %s each, object store and directory)", o.runs, o.duration)
	for i := 0; i < o.runs; i++ {
		for _, kind := range []string{mediaNATS, mediaDir} {
			rps, _, _, err := load(ctx, client, 8, o.duration, func(int) (*http.Request, error) { return http.NewRequest("GET", urls[kind], nil) })
			if err != nil {
				return r, err
			}
			mbs := math.Round(rps*size/1e6*10) / 10
			if kind == mediaNATS {
				r.KinoRuns = append(r.KinoRuns, mbs)
			} else {
				r.BaseRuns = append(r.BaseRuns, mbs)
			}
		}
	}
	r.finish(0.70)
	r.Notes = "kino is --media nats, the baseline --media dir (sendfile); see docs/performance.md"
	return r, nil
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
