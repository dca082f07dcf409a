package transcoder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/transport/asr"
	"github.com/kino-video/kino/transport/captions"
)

// Generated captions. A CaptionTrackRequested joins its account's queue
// beside the transcodes (the intake takes it like an upload), so the
// generation is fair between accounts and runs within the plan's
// TranscodeConcurrency: it is as heavy as a transcode of a low rung. A
// job puts the original into a work directory, runs Config.Speech over
// it and records CaptionTrackReady (its cues as normalized WebVTT) or
// CaptionTrackFailed. The video's deletion (watched, and checked at every
// heartbeat) and the track's removal (checked at every heartbeat) cancel
// it; a track that is no longer PENDING (a redelivery) is acked at once.
// A file without audio or speech fails at once; any other failure comes
// back after the backoff, and the MaxAttempts-th delivery fails the track.

// Speech recognizes speech (asr.Engine).
type Speech interface {
	Transcribe(ctx context.Context, input, language string) ([]asr.Segment, error)
	Languages() []string
}

// errTrackGone is the cause of a job's context ended by its track's
// removal.
var errTrackGone = errors.New("caption track removed")

// generateCaptions runs the job of a requested track.
func (t *Transcoder) generateCaptions(ctx context.Context, job *queue.Job, req domain.CaptionTrackRequested) {
	id := job.Event.AggregateID
	log := t.cfg.Log.With("video_id", id, "track", req.Track, "delivery", job.Delivered)
	ack := func() {
		if err := job.Ack(context.WithoutCancel(ctx)); err != nil {
			log.Warn("ack captions job", "err", err)
		}
	}
	deleted, stopWatch, err := t.cfg.Store.Watch(videoStream(id), domain.TypeVideoDeleted)
	if err != nil {
		t.handBack(ctx, log, job, 1, err)
		return
	}
	defer stopWatch()
	v, pending, err := t.trackPending(ctx, id, req.Track)
	if err != nil {
		t.handBack(ctx, log, job, 1, err)
		return
	}
	if !pending {
		ack() // removed, deleted or already finished
		return
	}
	if t.cfg.Speech == nil {
		t.finishCaptions(ctx, log, job, id, domain.FailCaptionTrack{Track: req.Track,
			Reason: "This kino's workers cannot generate captions (no speech recognition engine)."})
		return
	}
	log.Info("captions generation started", "language", req.Language)
	began := time.Now()
	jobCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-deleted:
			cancel(errDeleted)
		case <-jobCtx.Done():
		}
	}()
	stopBeat := t.captionsHeartbeat(jobCtx, job, id, req.Track, cancel)
	vtt, cues, err := t.recognize(jobCtx, id, v.Ext, req.Language)
	stopBeat()
	if cause := context.Cause(jobCtx); err != nil && ctx.Err() == nil && (errors.Is(cause, errDeleted) || errors.Is(cause, errTrackGone)) {
		log.Info("captions generation cancelled", "why", cause)
		ack()
		return
	}
	switch {
	case err == nil:
		log.Info("captions generated", "cues", cues, "took_ms", time.Since(began).Milliseconds())
		t.finishCaptions(ctx, log, job, id, domain.FinishCaptionTrack{Track: req.Track, VTT: vtt, Cues: cues})
	case ctx.Err() != nil:
		log.Info("captions generation interrupted by shutdown; handing the job back")
		if rerr := job.Release(); rerr != nil {
			log.Warn("release captions job", "err", rerr)
		}
	case domain.IsKind(err, domain.Unsupported) || domain.IsKind(err, domain.Invalid) || domain.IsKind(err, domain.TooLarge):
		log.Info("captions cannot be generated", "err", err)
		t.finishCaptions(ctx, log, job, id, domain.FailCaptionTrack{Track: req.Track, Reason: userMessage(err)})
	case job.Delivered >= t.cfg.MaxAttempts:
		log.Warn("captions generation failed; giving up", "err", err)
		t.finishCaptions(ctx, log, job, id, domain.FailCaptionTrack{Track: req.Track,
			Reason: fmt.Sprintf("Generating captions failed after %s: %s.", attempts(job.Delivered), transientReason(err))})
	default:
		t.handBack(ctx, log, job, job.Delivered, err)
	}
}

// trackPending loads video id and reports whether its track is PENDING.
func (t *Transcoder) trackPending(ctx context.Context, id, track string) (domain.Video, bool, error) {
	events, _, err := t.cfg.Store.Load(ctx, videoStream(id))
	if err != nil {
		return domain.Video{}, false, err
	}
	v := domain.Fold[domain.Video](events)
	c, ok := v.Caption(track)
	return v, ok && !v.Deleted && c.Status == domain.CaptionPending, nil
}

// recognize runs Config.Speech over the original of video id and returns
// its cues as normalized WebVTT.
func (t *Transcoder) recognize(ctx context.Context, id, ext, language string) (string, int, error) {
	dir, src, err := t.scratch.make(ctx, id, ext)
	if err != nil {
		return "", 0, t.checkDeleted(ctx, id, err)
	}
	defer func() {
		if err := dir.Remove(); err != nil {
			t.cfg.Log.Warn("remove work directory", "video_id", id, "err", err)
		}
	}()
	segs, err := t.cfg.Speech.Transcribe(ctx, src, language)
	if err != nil {
		return "", 0, err
	}
	track := captions.Track{Cues: make([]captions.Cue, 0, len(segs))}
	for _, s := range segs {
		track.Cues = append(track.Cues, captions.Cue{Start: s.Start.Truncate(time.Millisecond), End: s.End.Truncate(time.Millisecond),
			Text: plainText.Replace(s.Text)})
	}
	// Through the parser: what is stored is what an upload would store.
	parsed, _, err := captions.Parse(track.WebVTT())
	if err != nil {
		return "", 0, fmt.Errorf("generated cues: %w", err)
	}
	return string(parsed.WebVTT()), len(parsed.Cues), nil
}

// plainText escapes an engine's plain text as WebVTT cue text.
var plainText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// finishCaptions records the job's end and acks it.
func (t *Transcoder) finishCaptions(ctx context.Context, log *slog.Logger, job *queue.Job, id string, cmd any) {
	_, err := eventstore.Execute[domain.Video](ctx, t.cfg.Store, videoStream(id), cmd)
	if err != nil && !domain.IsKind(err, domain.NotFound) {
		if f, ok := cmd.(domain.FinishCaptionTrack); ok && (domain.IsKind(err, domain.TooLarge) || domain.IsKind(err, domain.Invalid)) {
			// Cues the track cannot hold (too many for one event): a
			// failure of the track, not of the job.
			t.finishCaptions(ctx, log, job, id, domain.FailCaptionTrack{Track: f.Track, Reason: userMessage(err)})
			return
		}
		t.handBack(ctx, log, job, 1, err)
		return
	}
	if err := job.Ack(context.WithoutCancel(ctx)); err != nil {
		log.Warn("ack captions job", "err", err)
	}
}

// captionsHeartbeat keeps the job alive and cancels it when its video is
// deleted or its track removed (read at every beat).
func (t *Transcoder) captionsHeartbeat(ctx context.Context, job *queue.Job, id, track string, cancel context.CancelCauseFunc) (stop func()) {
	ticker := time.NewTicker(t.cfg.AckWait / 3)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer ticker.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ticker.C:
				_ = job.InProgress()
				if v, pending, err := t.trackPending(ctx, id, track); err == nil && !pending {
					if v.Deleted {
						cancel(errDeleted)
					} else {
						cancel(errTrackGone)
					}
				}
			}
		}
	}()
	return func() { close(quit); <-done }
}

// autoCaptions requests generated captions for a video that completed
// with audio, when its account's plan is one of Config.AutoCaptions. A
// failure is logged: the video is done either way, and its owner can ask
// again.
func (t *Transcoder) autoCaptions(ctx context.Context, log *slog.Logger, id, account string) {
	if t.cfg.Speech == nil || len(t.cfg.AutoCaptions) == 0 || len(t.cfg.Speech.Languages()) == 0 {
		return
	}
	plan, err := t.plan(ctx, account)
	if err != nil || !slices.Contains(t.cfg.AutoCaptions, plan) {
		return
	}
	lang := t.cfg.Speech.Languages()[0]
	_, err = eventstore.Execute[domain.Video](ctx, t.cfg.Store, videoStream(id), domain.AddCaptionTrack{
		Account: account, Track: t.cfg.Store.NewID(), Language: lang, Label: autoLabel(lang), Generate: true})
	if err != nil {
		log.Warn("request generated captions", "err", err)
	}
}

// autoLabel is the label of a track generated on its own.
func autoLabel(lang string) string {
	if lang == "en" || strings.HasPrefix(lang, "en-") {
		return "English (auto-generated)"
	}
	return lang + " (auto-generated)"
}
