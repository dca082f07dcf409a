package transcoder

import (
	"context"
	"errors"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/media"
)

// Thumbnails chosen after the transcode. A ThumbnailRequested of a
// COMPLETED video joins its account's queue like an upload; its job takes
// the frame at the asked moment from the original into thumbnail.jpg
// (and, for a video transcoded before kino made them, preview.webp), and
// publishes them in place of the old ones, without encoding the ladder
// again; then it records ThumbnailChanged. A request of a video not yet
// COMPLETED needs no job: its transcode takes the moment asked last (and
// CompleteTranscode asks again when the request came after its stills).
// A request superseded by a later one, or of a deleted video, is acked.

// remakeThumbnail runs the job of a ThumbnailRequested.
func (t *Transcoder) remakeThumbnail(ctx context.Context, job *queue.Job, req domain.ThumbnailRequested) {
	id := job.Event.AggregateID
	log := t.cfg.Log.With("video_id", id, "at", req.At, "delivery", job.Delivered)
	ack := func() {
		if err := job.Ack(context.WithoutCancel(ctx)); err != nil {
			log.Warn("ack thumbnail job", "err", err)
		}
	}
	v, err := eventstore.Current[domain.Video](ctx, t.cfg.Store, videoStream(id))
	if err != nil {
		t.handBack(ctx, log, job, 1, err)
		return
	}
	if !v.Created || v.Deleted || v.Status != domain.StatusCompleted || v.ThumbnailTime == nil || *v.ThumbnailTime != req.At {
		ack() // the transcode takes it, or a later request has its own job
		return
	}
	jobCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopBeat := t.heartbeat(jobCtx, job, id, cancel)
	animated, err := t.stillsAgain(jobCtx, id, v, req.At)
	stopBeat()
	if err == nil {
		_, err = eventstore.Execute[domain.Video](ctx, t.cfg.Store, videoStream(id), domain.ChangeThumbnail{At: req.At, Animated: animated})
	}
	switch {
	case err == nil:
		log.Info("thumbnail remade", "animated", animated)
		ack()
	case ctx.Err() != nil:
		if rerr := job.Release(); rerr != nil {
			log.Warn("release thumbnail job", "err", rerr)
		}
	case domain.IsKind(err, domain.NotFound) || errors.Is(context.Cause(jobCtx), errDeleted):
		ack()
	case domain.IsKind(err, domain.Unsupported) || job.Delivered >= t.cfg.MaxAttempts:
		// The video keeps the thumbnail it has; its owner may ask again.
		log.Warn("thumbnail not remade; giving up", "err", err)
		ack()
	default:
		t.handBack(ctx, log, job, job.Delivered, err)
	}
}

// stillsAgain makes thumbnail.jpg of video v at at seconds, and its
// preview.webp when it has none, from the original, and publishes them.
func (t *Transcoder) stillsAgain(ctx context.Context, id string, v domain.Video, at float64) (animated bool, err error) {
	dir, src, err := t.scratch.make(ctx, id, v.Ext)
	if err != nil {
		return false, t.checkDeleted(ctx, id, err)
	}
	defer func() {
		if rerr := dir.Remove(); rerr != nil {
			t.cfg.Log.Warn("remove work directory", "video_id", id, "err", rerr)
		}
	}()
	in, err := ffmpeg.OpenInput(src, media.InputName(v.Ext))
	if err != nil {
		return false, err
	}
	bounds, err := t.bounds(ctx, v.Account)
	if err != nil {
		return false, err
	}
	jail := ffmpeg.Jail{Dir: dir.Dir, User: t.cfg.User, Limits: t.cfg.Limits, Tools: t.cfg.Tools}
	info, err := ffmpeg.Probe(ctx, in, ffmpeg.ProbeOptions{Jail: jail, Bounds: bounds})
	if err != nil {
		return false, err
	}
	at = ffmpeg.ThumbnailAt(info, &at)
	opts := ffmpeg.RunOptions{Duration: min(info.Length(), 10), StallTimeout: t.cfg.Stall, Jail: jail}
	if err := thumbnail(ctx, in, dir.Dir, info, at, opts); err != nil {
		return false, err
	}
	rels := []string{media.ThumbnailName}
	if !v.Animated && animatedPreview(ctx, t.cfg.Log.With("video_id", id), in, dir.Dir, info, at, opts) {
		rels, animated = append(rels, media.AnimatedName), true
	}
	if err := t.cfg.Media.PublishFiles(ctx, id, dir.Dir, rels); err != nil {
		if eventstore.IsUnavailable(err) {
			return false, outage{err}
		}
		return false, t.checkDeleted(ctx, id, err)
	}
	return animated, nil
}
