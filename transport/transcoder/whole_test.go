package transcoder_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
)

// TestTruncatedIndexFirstFails: an mp4 with its index (moov) first, cut
// to 45% of its bytes, probes as the whole 3 s and decodes to the cut.
// It must end FAILED as truncated whether its top rung is copied (the
// fast path) or encoded (a size no rung has), while the same file uncut
// takes the fast path and completes. ffmpeg's -progress out_time cannot
// tell: the storyboard sprite, another output of the same pass, ends a
// tile step past the last picture.
func TestTruncatedIndexFirstFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := e.account("bob", domain.PlanFree)
	dir := t.TempDir()
	fast := indexFirst(t, ffmpegtest.Encode(t, dir, "fast.mp4", 640, 360, 3, true, ffmpegtest.H264Options()...))
	scaled := indexFirst(t, ffmpegtest.Encode(t, dir, "scaled.mp4", 704, 396, 3, true, ffmpegtest.H264Options()...))
	tests := []struct {
		name, path string
		cut        bool
		fastPath   bool
		want       domain.Status
	}{
		{"fast path, cut", fast, true, true, domain.StatusFailed},
		{"encoded (scaled), cut", scaled, true, false, domain.StatusFailed},
		{"fast path, whole", fast, false, true, domain.StatusCompleted},
	}
	ids := make([]string, len(tests))
	for i, tt := range tests {
		data, err := os.ReadFile(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if tt.cut {
			data = data[:len(data)*45/100]
			cut := filepath.Join(t.TempDir(), "cut.mp4")
			if err := os.WriteFile(cut, data, 0o644); err != nil {
				t.Fatal(err)
			}
			tt.path = cut
		}
		if got := takesFastPath(t, tt.path); got != tt.fastPath {
			t.Fatalf("%s: fast path %t, want %t (the test's premise)", tt.name, got, tt.fastPath)
		}
		ids[i] = e.upload(acct, "clip.mp4", data)
	}
	for i, tt := range tests {
		got := e.wait(ids[i], 60*time.Second)
		if got.status != tt.want {
			t.Errorf("%s: %+v, want %s", tt.name, got, tt.want)
			continue
		}
		if tt.want == domain.StatusFailed && !strings.Contains(got.reason, "truncated or corrupt") {
			t.Errorf("%s: reason %q, want it to say the file is truncated", tt.name, got.reason)
		}
	}
}

// A file cut by less than the 10% checkWhole forgives completes, and
// reports the duration its ladder holds, not the one it announces (red
// team: a 12 s file holding 10.6 s said 12, its playlist, storyboard and
// download 10.6); a whole file keeps its announced duration.
func TestCutFileReportsTheDurationItHolds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := e.account("bob", domain.PlanFree)
	// 160x90: the lengths are the point, not the picture.
	whole := indexFirst(t, ffmpegtest.Encode(t, t.TempDir(), "long.mp4", 160, 90, 12, true))
	data, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	cut := e.upload(acct, "cut.mp4", data[:len(data)*93/100])
	full := e.upload(acct, "whole.mp4", data)
	if got := e.wait(full, 2*time.Minute); got.status != domain.StatusCompleted || got.duration < 11.9 {
		t.Fatalf("whole: %+v", got)
	}
	got := e.wait(cut, 2*time.Minute)
	if got.status != domain.StatusCompleted {
		t.Fatalf("cut: %+v (cut by under 10%% of its length, it should complete)", got)
	}
	if got.duration > 11.5 || got.duration < 9 {
		t.Fatalf("cut: duration %.2f, want what it holds (under 11.5 s of the 12 it announces)", got.duration)
	}
}

// indexFirst remuxes the mp4 at path with its moov before its media data.
func indexFirst(t *testing.T, path string) string {
	t.Helper()
	out := strings.TrimSuffix(path, ".mp4") + "-faststart.mp4"
	ffmpegtest.Run(t, "-i", path, "-c", "copy", "-movflags", "+faststart", out)
	return out
}

// takesFastPath says whether the transcoder's ladder copies the top rung
// of the file at path: its probe, ladder and the fast path's decision.
func takesFastPath(t *testing.T, path string) bool {
	t.Helper()
	in, err := ffmpeg.OpenInput(path, "")
	if err != nil {
		t.Fatal(err)
	}
	info, err := ffmpeg.Probe(context.Background(), in, ffmpeg.ProbeOptions{Bounds: ffmpeg.DefaultBounds()})
	if err != nil {
		t.Fatal(err)
	}
	rungs := ffmpeg.Ladder(info)
	if len(rungs) == 0 {
		return false
	}
	fast, err := ffmpeg.DecideFastPath(context.Background(), in, info, rungs[0], ffmpeg.Jail{})
	if err != nil {
		t.Fatal(err)
	}
	return fast.Video
}
