package transcoder_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/asr"
	"github.com/kino-video/kino/transport/asr/asrtest"
	"github.com/kino-video/kino/transport/captions"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/transcoder"
)

// requestCaptions asks for generated captions of video id in English and
// returns the track's id.
func (e *env) requestCaptions(account, id string) string {
	e.t.Helper()
	track := e.store.NewID()
	if _, err := eventstore.Execute[domain.Video](context.Background(), e.store, stream(id), domain.AddCaptionTrack{
		Account: account, Track: track, Language: "en", Label: "English (auto-generated)", Generate: true}); err != nil {
		e.t.Fatal(err)
	}
	return track
}

// captionsEnd polls the video's events until the track is READY or
// FAILED, and returns its WebVTT or its reason.
func (e *env) captionsEnd(id, track string, within time.Duration) (domain.CaptionStatus, string) {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for {
		events, _, err := e.store.Load(context.Background(), stream(id))
		if err != nil {
			e.t.Fatal(err)
		}
		for _, ev := range events {
			switch d := ev.Data.(type) {
			case domain.CaptionTrackReady:
				if d.Track == track {
					return domain.CaptionReady, d.VTT
				}
			case domain.CaptionTrackFailed:
				if d.Track == track {
					return domain.CaptionFailed, d.Reason
				}
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("track %s of %s still pending after %s", track, id, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A generated track, from Festival's speech: READY with cues holding at
// least half of the words said, each near where it was said; a video
// without audio and one of silence each FAILED with a reason for people;
// no work directory left behind.
func TestGeneratedCaptions(t *testing.T) {
	t.Parallel()
	engine, err := asr.NewPocketsphinx(asr.PocketsphinxConfig{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *transcoder.Config) { c.Speech = engine; c.Workers = 2 })
	acct := e.account("acme", domain.PlanPro)
	dir := t.TempDir()
	corpus := asrtest.Speech(t, dir, "talk.mp4", asrtest.Sentences[:2], time.Second, time.Second)
	speech := e.uploadFile(acct, "talk.mp4", corpus.Path)
	silent := e.uploadFile(acct, "quiet.mp4", asrtest.Silence(t, dir, 3))
	mute := e.uploadFile(acct, "mute.mp4", ffmpegtest.Clip(t, dir, "mute.mp4", 160, 90, 1, false))

	tracks := map[string]string{}
	for _, id := range []string{speech, silent, mute} {
		tracks[id] = e.requestCaptions(acct, id)
	}
	status, vtt := e.captionsEnd(speech, tracks[speech], 3*time.Minute)
	if status != domain.CaptionReady {
		t.Fatalf("speech: %s %q", status, vtt)
	}
	parsed, _, err := captions.Parse([]byte(vtt))
	if err != nil {
		t.Fatalf("stored WebVTT does not parse: %v\n%s", err, vtt)
	}
	segs := make([]asr.Segment, len(parsed.Cues))
	for i, c := range parsed.Cues {
		segs[i] = asr.Segment{Start: c.Start, End: c.End, Text: c.Text}
	}
	score := asrtest.Grade(corpus, segs)
	t.Logf("generated captions: %s\n%s", score, vtt)
	if score.Recognized*2 < score.Words || len(score.Misplaced)*2 > score.Recognized {
		t.Fatalf("generated captions hold too little of the speech: %s\n%s", score, vtt)
	}
	for id, want := range map[string]string{silent: "speech", mute: "audio"} {
		status, reason := e.captionsEnd(id, tracks[id], 2*time.Minute)
		if status != domain.CaptionFailed || !strings.Contains(strings.ToLower(reason), want) {
			t.Errorf("%s: %s %q; want FAILED naming the %s", id, status, reason, want)
		}
	}
	if dirs := e.workDirs(); len(dirs) != 0 {
		t.Errorf("work directories left: %v", dirs)
	}
}
