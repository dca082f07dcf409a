package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/ffmpeg"
)

// BenchmarkProcessing measures upload -> COMPLETED for a 30 s 1080p clip
// with audio through the real service (one in-process transcoder), beside
// (a) the bare ffmpeg HLS command with identical arguments, and (b) one
// ffmpeg process per rendition, one after another. Run it alone:
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
	b.Run("baseline-bare-ffmpeg-same-args", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := ffmpeg.Run(ctx, ffmpeg.HLSArgs(path, filepath.Join(b.TempDir(), "hls"), info, rungs), ffmpeg.RunOptions{Duration: info.Duration}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline-one-ffmpeg-per-rendition", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			dir := b.TempDir()
			for _, r := range rungs {
				if err := ffmpeg.Run(ctx, ffmpeg.HLSArgs(path, filepath.Join(dir, r.Name), info, []ffmpeg.Rung{r}), ffmpeg.RunOptions{Duration: info.Duration}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
