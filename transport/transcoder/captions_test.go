package transcoder_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/asr"
	"github.com/kino-video/kino/transport/transcoder"
)

// script is a speech engine whose answers the test decides by the input's
// video: what the transcoder's job does with each answer is under test
// here; recognizing speech is transport/asr's (asrtest.Run on Festival's
// speech, and the browser test through kino serve).
type script struct {
	answer  func(input string) ([]asr.Segment, error)
	started chan string // each call's input
}

var errBlock = errors.New("block until cancelled")

func (s *script) Languages() []string { return []string{"en"} }

func (s *script) Transcribe(ctx context.Context, input, language string) ([]asr.Segment, error) {
	select {
	case s.started <- input:
	default:
	}
	segs, err := s.answer(input)
	if errors.Is(err, errBlock) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return segs, err
}

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
func (e *env) captionsEnd(id, track string) (domain.CaptionStatus, string) {
	e.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		v, err := eventstore.Current[domain.Video](context.Background(), e.store, stream(id))
		if err != nil {
			e.t.Fatal(err)
		}
		if c, ok := v.Caption(track); ok && c.Status != domain.CaptionPending {
			events, _, _ := e.store.Load(context.Background(), stream(id))
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
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("track %s of %s still pending", track, id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A generation job: READY with the engine's cues as normalized WebVTT;
// a permanent refusal (no audio) FAILED at once with its reason; a
// transient failure retried, and FAILED after the attempts; a job whose
// video is deleted or whose track is removed stops its engine; no work
// directory is left behind.
func TestCaptionsJobs(t *testing.T) {
	t.Parallel()
	s := &script{started: make(chan string, 16)}
	e := newEnv(t, func(c *transcoder.Config) {
		c.Speech = s
		c.Workers = 4
		c.MaxAttempts = 2
		c.AckWait = 3 * time.Second
	})
	acct := e.account("acme", domain.PlanBusiness)
	// Originals the engine never reads: not videos at all, so their
	// transcodes end FAILED at once without ffmpeg (a FAILED video's
	// captions are still made).
	ids := map[string]string{} // role -> video
	for _, role := range []string{"speech", "mute", "flaky", "broken", "deleted", "removed"} {
		ids[role] = e.upload(acct, role+".mp4", []byte("not a video at all"))
	}
	// The job's input lies in a work directory named after its video.
	roleOf := func(input string) string {
		for r, id := range ids {
			if strings.Contains(input, id) {
				return r
			}
		}
		return ""
	}
	var flaky atomic.Int32 // calls for the flaky video (each attempt has a work directory of its own)
	s.answer = func(input string) ([]asr.Segment, error) {
		switch roleOf(input) {
		case "speech":
			return []asr.Segment{{Start: 100 * time.Millisecond, End: 900 * time.Millisecond, Text: "hello <there> & you"},
				{Start: 1200 * time.Millisecond, End: 2 * time.Second, Text: "two\nlines"}}, nil
		case "mute":
			return nil, domain.Wrap("generate captions", domain.Unsupported, asr.ErrNoAudio, "the video has no audio")
		case "flaky":
			if flaky.Add(1) == 1 {
				return nil, errors.New("ffmpeg exited 1")
			}
			return []asr.Segment{{Start: 0, End: time.Second, Text: "second try"}}, nil
		case "broken":
			return nil, errors.New("ffmpeg exited 1")
		}
		return nil, errBlock
	}
	tracks := map[string]string{}
	for r, id := range ids {
		tracks[r] = e.requestCaptions(acct, id)
	}

	status, vtt := e.captionsEnd(ids["speech"], tracks["speech"])
	if want := "WEBVTT\n\n00:00:00.100 --> 00:00:00.900\nhello &lt;there&gt; &amp; you\n\n00:00:01.200 --> 00:00:02.000\ntwo\nlines\n\n"; status != domain.CaptionReady || vtt != want {
		t.Errorf("speech: %s %q; want READY %q", status, vtt, want)
	}
	if status, reason := e.captionsEnd(ids["mute"], tracks["mute"]); status != domain.CaptionFailed || reason != "The video has no audio." {
		t.Errorf("mute: %s %q", status, reason)
	}
	if status, vtt := e.captionsEnd(ids["flaky"], tracks["flaky"]); status != domain.CaptionReady || !strings.Contains(vtt, "second try") {
		t.Errorf("flaky: %s %q; want READY after a retry", status, vtt)
	}
	if status, reason := e.captionsEnd(ids["broken"], tracks["broken"]); status != domain.CaptionFailed ||
		!strings.HasPrefix(reason, "Generating captions failed after 2 attempts") {
		t.Errorf("broken: %s %q", status, reason)
	}

	// The two blocked jobs run; a deletion and a removal stop them.
	running := map[string]bool{}
	for len(running) < 2 {
		select {
		case in := <-s.started:
			if r := roleOf(in); r == "deleted" || r == "removed" {
				running[r] = true
			}
		case <-time.After(time.Minute):
			t.Fatalf("blocked jobs did not start: %v", running)
		}
	}
	ctx := context.Background()
	if _, err := eventstore.Execute[domain.Video](ctx, e.store, stream(ids["deleted"]), domain.DeleteVideo{Account: acct}); err != nil {
		t.Fatal(err)
	}
	if _, err := eventstore.Execute[domain.Video](ctx, e.store, stream(ids["removed"]), domain.RemoveCaptionTrack{Account: acct, Track: tracks["removed"]}); err != nil {
		t.Fatal(err)
	}
	// Stopped: their work directories go, and no result is recorded.
	deadline := time.Now().Add(time.Minute)
	for len(e.workDirs()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("work directories left: %v", e.workDirs())
		}
		time.Sleep(20 * time.Millisecond)
	}
	v, err := eventstore.Current[domain.Video](ctx, e.store, stream(ids["removed"]))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Captions) != 0 {
		t.Errorf("removed track came back: %+v", v.Captions)
	}
}
