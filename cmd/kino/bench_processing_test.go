package main

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/ffmpeg"
)

// BenchmarkProcessing measures upload -> COMPLETED for a 30 s 1080p clip
// with audio through the real service (one in-process transcoder), beside
// (a) the same ffmpeg commands with identical arguments run bare, and (b)
// one ffmpeg process per rendition, one after another, then the thumbnail
// and the preview. Run it alone:
//
//	go test -run '^$' -bench Processing -benchtime 1x ./cmd/kino
func BenchmarkProcessing(b *testing.B) {
	src := makeClip(b, "source.mp4", 1920, 1080, 30, true)
	path := filepath.Join(b.TempDir(), "source.mp4")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	info, err := ffmpeg.Probe(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	rungs := ffmpeg.Ladder(info)

	b.Run("kino-upload-to-completed", func(b *testing.B) {
		h := start(b, b.TempDir(), benchPlans, func(c *Config) {
			withTranscoder(c)
			c.Workers.Attempts = 1
		})
		key := h.account("bench", domain.PlanBusiness)
		if r := h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}); r.status != 201 {
			b.Fatal(r.status)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			id := h.uploadID(key, "main", "source.mp4", src)
			h.waitStatus(key, id, domain.StatusCompleted)
		}
	})
	hls := func(dir string, rungs []ffmpeg.Rung) {
		if err := ffmpeg.Run(ctx, ffmpeg.HLSArgs(path, dir, info, rungs), ffmpeg.RunOptions{Duration: info.Duration}); err != nil {
			b.Error(err)
		}
	}
	stills := func(dir string) {
		for _, args := range [][]string{ffmpeg.ThumbnailArgs(path, filepath.Join(dir, "thumbnail.jpg"), info), ffmpeg.PreviewArgs(path, filepath.Join(dir, "preview.mp4"), info)} {
			if err := ffmpeg.Run(ctx, args, ffmpeg.RunOptions{Duration: info.Duration}); err != nil {
				b.Error(err)
			}
		}
	}
	// The same three ffmpeg commands kino runs, scheduled as kino runs
	// them (the ladder beside thumbnail-then-preview), with nothing else.
	b.Run("baseline-bare-ffmpeg-same-commands", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			dir := b.TempDir()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); stills(dir) }()
			hls(filepath.Join(dir, "hls"), rungs)
			wg.Wait()
		}
	})
	b.Run("reference-bare-hls-ladder-only", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			hls(filepath.Join(b.TempDir(), "hls"), rungs)
		}
	})
	// The naive pipeline: one ffmpeg per rendition, then thumbnail and
	// preview, one after another.
	b.Run("baseline-one-ffmpeg-per-rendition", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			dir := b.TempDir()
			for _, r := range rungs {
				hls(filepath.Join(dir, r.Name), []ffmpeg.Rung{r})
			}
			stills(dir)
		}
	})
}
