package transcoder_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/transcoder"
)

// TestHostileInputsFailFast: files made to starve a worker (frames hours
// apart, a length claimed and not held, a huge picture) each end
// FAILED on their first attempt, in seconds (the bound is well under one
// 2-minute stall kill, the default here), with a message naming the
// problem, and another account's clip still completes on the one worker.
func TestHostileInputsFailFast(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // one worker, the default 2-minute stall timeout
	mallory, bob := e.account("mallory", domain.PlanFree), e.account("bob", domain.PlanFree)
	business := e.account("bigcorp", domain.PlanBusiness)
	dir := t.TempDir()
	gap := ffmpegtest.GapMKV(t, dir, 36000)
	tests := []struct {
		name    string
		account string
		path    string
		want    string // in the reason
	}{
		{"10 KB with two frames 36 000 s apart", mallory, gap,
			"The video claims to run 10h0m1s; the free plan allows at most 1h0m0s."},
		{"the same gap on a 12-hour plan", business, gap,
			"The video has a gap of 10h0m0s between two frames; at most 1m0s is accepted."},
		{"two frames an hour apart: within the free plan, not the gap", mallory, ffmpegtest.GapMKV(t, t.TempDir(), 3600),
			"The video has a gap of 1h0m0s between two frames; at most 1m0s is accepted."},
		{"2 s claiming one hour", mallory, ffmpegtest.ClaimMKV(t, t.TempDir(), 2, 3600),
			"s of the 3600.0 s it announces."},
		{"16000x16000 still", mallory, ffmpegtest.HugeMJPEG(t, t.TempDir(), 16000, 16000, 1),
			"The video is 16000×16000; the largest picture accepted is 7680×4320 (either way round)."},
		{"8192x8192 clip", mallory, ffmpegtest.HugeMJPEG(t, t.TempDir(), 8192, 8192, 5),
			"The video is 8192×8192; the largest picture accepted is 7680×4320 (either way round)."},
	}
	ids := make([]string, len(tests))
	for i, tt := range tests {
		ids[i] = e.uploadFile(tt.account, "attack.mkv", tt.path)
	}
	clip := e.uploadFile(bob, "holiday.mp4", ffmpegtest.Clip(t, dir, "holiday.mp4", 320, 180, 2, true))

	for i, tt := range tests {
		got := e.wait(ids[i], 60*time.Second)
		if got.status != domain.StatusFailed || !strings.Contains(got.reason, tt.want) || got.attempts != 1 {
			t.Errorf("%s: %+v, want FAILED on the first attempt with %q", tt.name, got, tt.want)
		}
		if out := e.outputsLeft(ids[i]); len(out) > 0 {
			t.Errorf("%s: outputs left: %v", tt.name, out)
		}
	}
	if got := e.wait(clip, 60*time.Second); got.status != domain.StatusCompleted {
		t.Errorf("another account's clip: %+v, want COMPLETED", got)
	}
}

// TestPlaylistUploadsFail: an upload named innocent.mp4 whose bytes are an
// HLS playlist never gets ffmpeg to read its segments: not a file beside
// the media directory (file:// and every media extension), not another
// account's original (../<id>/original.mkv). Each ends FAILED and nothing
// is published.
func TestPlaylistUploadsFail(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	victim, mallory := e.account("victim", domain.PlanFree), e.account("mallory", domain.PlanFree)
	dir := t.TempDir()
	secret := e.uploadFile(victim, "secret.mkv", ffmpegtest.Clip(t, dir, "secret.mkv", 320, 180, 2, true))
	if got := e.wait(secret, 60*time.Second); got.status != domain.StatusCompleted {
		t.Fatalf("victim's video: %+v", got)
	}
	// Secrets beside the media directory, one per media extension.
	segments := map[string]string{}
	for _, ext := range []string{".ts", ".mp4", ".mkv", ".mov"} {
		p := filepath.Join(e.base, "secret"+ext)
		ffmpegtest.Run(t, "-i", filepath.Join(dir, "secret.mkv"), "-c", "copy", p)
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
		segments["absolute file:// "+ext] = "file://" + p
		segments["absolute path "+ext] = p
	}
	segments["relative: another account's original"] = "../" + secret + "/original.mkv"
	segments["relative: another account's segment"] = "../" + secret + "/hls/180p/seg_00000.ts"

	ids := map[string]string{}
	for name, seg := range segments {
		playlist := "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:2.0,\n" + seg + "\n#EXT-X-ENDLIST\n"
		ids[name] = e.upload(mallory, "innocent.mp4", []byte(playlist))
	}
	for name, id := range ids {
		got := e.wait(id, 60*time.Second)
		if got.status != domain.StatusFailed || got.reason != "Not a video file kino can read." {
			t.Errorf("%s: %+v, want FAILED: Not a video file kino can read.", name, got)
		}
		if out := e.outputsLeft(id); len(out) > 0 {
			t.Errorf("%s: published %v", name, out)
		}
	}
	if left := e.workDirs(); len(left) > 0 {
		t.Errorf("work directories left: %v", left)
	}
}

// TestDeleteStopsFFmpeg: deleting a video while ffmpeg encodes it kills
// ffmpeg (the whole process group) at once, removes the work directory and
// acks the job; nothing is published and no success recorded.
func TestDeleteStopsFFmpeg(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/cwd"); err != nil {
		t.Skip("needs /proc to find ffmpeg by its working directory")
	}
	e := newEnv(t)
	acc := e.account("acme", domain.PlanFree)
	// Five minutes of video: its ladder takes many times the bound below
	// (about 15 s on two idle cores), so only a kill meets that bound.
	long := longClip(t, "long.mkv", 300)
	id := e.uploadFile(acc, "long.mkv", long)

	var pids []int
	deadline := time.Now().Add(60 * time.Second)
	for len(pids) == 0 {
		pids = processesIn(t, filepath.Join(e.media.Root(), ".work"), id)
		if time.Now().After(deadline) {
			t.Fatal("ffmpeg never started on the video")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := eventstore.Execute[domain.Video](context.Background(), e.store, stream(id), domain.DeleteVideo{Account: acc}); err != nil {
		t.Fatal(err)
	}
	if err := e.media.Remove(context.Background(), id); err != nil { // as the API does
		t.Fatal(err)
	}

	// "Within a second or two": 5 s leaves room for a loaded machine.
	deadline = time.Now().Add(5 * time.Second)
	for {
		running := processesIn(t, filepath.Join(e.media.Root(), ".work"), id)
		n, err := queue.New(e.store).Unfinished(context.Background(), "", transcoder.Durable)
		if err != nil {
			t.Fatal(err)
		}
		if len(running) == 0 && len(e.workDirs()) == 0 && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the delete: ffmpeg %v still running, work dirs %v, %d jobs unfinished", running, e.workDirs(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("ffmpeg %d outlived the delete", pid)
		}
	}
	events, _, err := e.store.Load(context.Background(), stream(id))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if ev.Type == domain.TypeTranscodeSucceeded {
			t.Error("TranscodeSucceeded after Deleted")
		}
	}
	if _, err := os.Stat(filepath.Join(e.media.Root(), id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("video directory: %v, want removed", err)
	}
}

// TestFFmpegUserCannotReadAnotherVideo: with kino as root, ffmpeg runs as
// nobody in its work directory, and even told to read another video's
// original by path (with the demuxer forced, as the transcoder does), it
// cannot: the video directories are 0700 and not its own.
func TestFFmpegUserCannotReadAnotherVideo(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("switching ffmpeg's user needs root")
	}
	e := newEnv(t)
	acc := e.account("victim", domain.PlanFree)
	secret := e.uploadFile(acc, "secret.mkv", ffmpegtest.Clip(t, t.TempDir(), "secret.mkv", 160, 90, 1, false))
	if got := e.wait(secret, 60*time.Second); got.status != domain.StatusCompleted {
		t.Fatalf("victim's video: %+v", got)
	}
	for path, want := range map[string]os.FileMode{e.media.Root(): 0o711, filepath.Join(e.media.Root(), secret): 0o700} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode().Perm(), err, want)
		}
	}

	clip := ffmpegtest.Clip(t, t.TempDir(), "own.mkv", 160, 90, 1, false)
	data, err := os.ReadFile(clip)
	if err != nil {
		t.Fatal(err)
	}
	own := e.upload(e.account("mallory", domain.PlanFree), "own.mkv", data)
	e.wait(own, 60*time.Second)
	// The attempt directory, as the transcoder makes it (the finished
	// video's files are still there to link).
	work, err := e.media.WorkDir(context.Background(), own, ".mkv", &media.Owner{UID: int(e.user.UID), GID: int(e.user.GID)})
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(work)
	jail := ffmpeg.Jail{Dir: work, User: e.user, Limits: ffmpeg.DefaultRLimits()}
	read := func(path string) error {
		args := []string{"-nostdin", "-loglevel", "error", "-f", "matroska", "-protocol_whitelist", "file",
			"-i", "file:" + path, "-f", "null", "-"}
		return ffmpeg.Run(context.Background(), args, ffmpeg.RunOptions{Duration: 1, Jail: jail})
	}
	if err := read(media.InputName(".mkv")); err != nil {
		t.Fatalf("ffmpeg as %s cannot read its own input: %v", e.user.Name, err)
	}
	for _, path := range []string{
		"../../" + secret + "/original.mkv",
		filepath.Join(e.media.Root(), secret, "original.mkv"),
	} {
		var exit *ffmpeg.ExitError
		if err := read(path); !errors.As(err, &exit) || !strings.Contains(exit.Stderr, "Permission denied") {
			t.Errorf("ffmpeg as %s reading %s: %v, want Permission denied", e.user.Name, path, err)
		}
	}
}

// processesIn lists the pids whose working directory is a work directory
// of video id under workRoot.
func processesIn(t *testing.T, workRoot, id string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink("/proc/" + en.Name() + "/cwd")
		if err == nil && strings.HasPrefix(cwd, filepath.Join(workRoot, id)+"-") && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(stat), ") Z ")
}

// TestPictureTricks: a cover picture as stream 0 (400x300, within the
// limit and larger than the video) is not what gets
// published, and a stream that grows past the picture limit (lowered here
// to 480x360, so that its "huge" frames stay cheap) after the headers
// Probe reads ends FAILED on its first attempt with the limit named.
func TestPictureTricks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *transcoder.Config) {
		b := ffmpeg.DefaultBounds()
		b.MaxWidth, b.MaxHeight = 480, 360
		c.Bounds = &b
	})
	mallory := e.account("mallory", domain.PlanFree)
	growing := e.uploadFile(mallory, "growing.mkv", ffmpegtest.GrowingStream(t, t.TempDir(), "mkv", 640, 480))
	cover := e.uploadFile(mallory, "cover.mp4", ffmpegtest.CoverFirstMP4(t, t.TempDir(), 400, 300))

	got := e.wait(growing, 60*time.Second)
	if want := "changes to a picture larger than 480×360"; got.status != domain.StatusFailed || !strings.Contains(got.reason, want) || got.attempts != 1 {
		t.Errorf("growing stream: %+v, want FAILED on the first attempt with %q", got, want)
	}
	if out := e.outputsLeft(growing); len(out) > 0 {
		t.Errorf("growing stream: outputs left: %v", out)
	}

	if got := e.wait(cover, 60*time.Second); got.status != domain.StatusCompleted {
		t.Fatalf("cover first: %+v, want COMPLETED", got)
	}
	dir, err := e.media.Dir(cover)
	if err != nil {
		t.Fatal(err)
	}
	seg := ffmpegtest.Segment(t, filepath.Join(dir, "hls", "240p"), "seg_00000.m4s")
	in, err := ffmpeg.OpenInput(seg, "")
	if err != nil {
		t.Fatal(err)
	}
	info, err := ffmpeg.Probe(context.Background(), in, ffmpeg.ProbeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Width != 320 || info.Height != 240 || info.Frames < 40 {
		t.Errorf("published 240p: %dx%d, %d frames; want the 320x240 video's 50 frames, not the cover", info.Width, info.Height, info.Frames)
	}
}
