package httpapi

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/tus"
)

// A tus upload whose last byte is in is accepted as a video here. When
// the acceptance fails for want of a store (the event store, the media
// store, the disk), the upload stays, complete: pending. Its bytes are
// never given to the media store itself, only a second name of them
// (tusStore.commitFile), so they outlive any failure, and it is tried
// again until it is a video or expires: by its client, whom HEAD tells
// one byte short of the length (tus clients take an offset equal to the
// length for a finished upload: told that before the video exists, they
// would stop for good), and by kino itself, every few seconds while the
// event store takes writes. The video's id is the upload's, and every try
// first looks for the video: however the tries meet, one video is made.

// finishUpload accepts the complete upload u (whose lock the caller
// holds) as a video, as a multipart upload is accepted, and replaces it
// by its completion record. A refusal that stands however often it is
// tried (the plan's size, the collection gone) removes the upload. Any
// other failure (the event or media store not taking it, the disk full,
// the request gone) leaves it pending, every byte kept: a PATCH of its
// last byte tries again, and so does kino itself (finishPending) while
// the event store takes writes. Tries never make a second video: the
// video's id is the upload's, and a try first looks for the video.
func (s *Server) finishUpload(ctx context.Context, u tus.Upload) error {
	log := loggerFrom(ctx, s.cfg.Log).With("video_id", u.ID)
	switch ok, err := s.uploadAccepted(ctx, u); {
	case err != nil:
		return s.keepPending(log, err)
	case ok:
		s.completeUpload(log, u)
		return nil
	}
	// The plan's size limit is the account's plan now, not at creation:
	// an upload begun before a downgrade does not keep the old limit.
	acct, ok, err := s.cfg.DB.Account(u.Account)
	if err == nil && !ok {
		err = errNotFound("upload")
	}
	if err != nil {
		return s.keepPending(log, err)
	}
	u.MaxSize = s.cfg.Plans.Limits(acct.Plan).MaxUploadBytes
	if u.Length > u.MaxSize {
		_ = s.tus.Remove(u.ID)
		log.Info("resumable upload refused: larger than the plan allows now", "bytes", u.Length)
		return domain.E("upload video", domain.TooLarge, "upload is %d bytes; your plan allows files of at most %d bytes (the plan changed since the upload began); the upload was removed", u.Length, u.MaxSize)
	}
	// What an earlier try stored of the original, which no event owns,
	// goes first (a directory store commits only into a new directory).
	if err := s.cfg.Media.Remove(ctx, u.ID); err != nil {
		return s.keepPending(log, errStore{err})
	}
	if s.tusAccepting != nil {
		s.tusAccepting(u.ID)
	}
	src, err := s.tus.CommitFile(u.ID)
	if errors.Is(err, fs.ErrNotExist) { // its bytes are gone: nothing to try again with
		_ = s.tus.Remove(u.ID)
		return domain.Wrap("upload video", domain.Internal, err, "")
	}
	if err != nil {
		return s.keepPending(log, errStore{err})
	}
	err = s.acceptUpload(ctx, upload{ID: u.ID, Account: u.Account, Collection: u.Collection, Filename: u.Filename,
		Ext: u.Ext, Size: u.Length, MaxSize: u.MaxSize, Path: src, Settings: u.Settings})
	_ = os.Remove(src) // what a failed commit left; once committed, it is gone already
	var se errStore
	switch {
	case err == nil:
		s.completeUpload(log, u)
		return nil
	case refused(err) && !errors.As(err, &se):
		_ = s.tus.Remove(u.ID)
		log.Info("resumable upload refused at its last byte", "err", err)
		return err
	case domain.IsKind(err, domain.Conflict):
		// The video exists: an earlier try whose outcome was unknown
		// stored its event after all.
		if ok, _ := s.uploadAccepted(ctx, u); ok {
			s.completeUpload(log, u)
			return nil
		}
	}
	return s.keepPending(log, err)
}

// keepPending logs the failed acceptance of a pending upload, kept for
// another try, and returns err.
func (s *Server) keepPending(log *slog.Logger, err error) error {
	log.Warn("resumable upload complete but not accepted; it is kept and tried again", "err", err)
	return err
}

// uploadAccepted reports whether upload u is a video already: a try
// stored its event (the read models may not show it yet).
func (s *Server) uploadAccepted(ctx context.Context, u tus.Upload) (bool, error) {
	if v, ok, err := s.cfg.DB.Video(u.ID); err == nil && ok && v.Account == u.Account {
		return true, nil
	}
	events, _, err := s.cfg.Store.Load(ctx, videoStream(u.ID))
	if err != nil && !domain.IsKind(err, domain.Unavailable) && eventstore.IsUnavailable(err) {
		err = domain.Wrap("upload video", domain.Unavailable, err, "The event store is not answering; retry in a few seconds")
	}
	if err != nil {
		return false, err
	}
	return domain.Fold[domain.Video](events).Created, nil
}

// completeUpload replaces upload u, a video now, by its completion
// record, which answers for it from now on, for as long as an unfinished
// upload would (tusd keeps a finished upload's info likewise): a client
// that lost the last answer learns from HEAD that it is complete, instead
// of uploading the file again.
func (s *Server) completeUpload(log *slog.Logger, u tus.Upload) {
	if err := s.tus.Complete(u, s.cfg.Now().Add(s.cfg.Uploads.TusExpiry).UTC()); err != nil {
		log.Warn("record a finished upload", "err", err)
	}
}

// finishPending tries again to accept the pending uploads no request
// holds, while the stores can take them, so that they become videos once
// the stores are back whether or not their clients come back. It stops at
// the first try that fails for want of a store.
func (s *Server) finishPending(ctx context.Context) (finished int) {
	ids := s.tus.PendingIDs()
	if len(ids) == 0 || !s.storesReady(ctx) {
		return 0
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			return finished
		}
		if !s.tus.Lock(id) {
			continue
		}
		var err error
		if u, ok := s.tus.Get(id); ok && u.Pending() && s.cfg.Now().Before(u.Expires) {
			if err = s.finishUpload(eventstore.FailFast(ctx), u); err == nil {
				finished++
				s.cfg.Log.Info("pending resumable upload accepted", "video_id", id)
			}
		}
		s.tus.Unlock(id)
		if err != nil && !refused(err) {
			return finished
		}
	}
	return finished
}

// storesReady reports whether an acceptance may succeed now: the event
// store takes writes, and the media store answers.
func (s *Server) storesReady(ctx context.Context) bool {
	if s.writableNow() != nil {
		return false
	}
	m, ok := s.cfg.Media.(Readier)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(eventstore.FailFast(ctx), readyTimeout)
	defer cancel()
	return m.Ready(ctx) == nil
}
