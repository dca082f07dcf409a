package tus

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"os"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
)

// A tus upload whose last byte is in is accepted as a video here. When
// the acceptance fails for want of a store (the event store, the media
// store, the disk), the upload stays, complete: pending. Its bytes are
// never given to the media store itself, only a second name of them
// (FileStore.CommitFile), so they outlive any failure, and it is tried
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
// last byte tries again, and so does kino itself (FinishPending) while
// the event store takes writes. Tries never make a second video: the
// video's id is the upload's, and a try first looks for the video.
func (h *Handler) finishUpload(ctx context.Context, u Upload) error {
	log := h.host.LoggerFrom(ctx).With("video_id", u.ID)
	switch ok, err := h.uploadAccepted(ctx, u); {
	case err != nil:
		return h.keepPending(log, err)
	case ok:
		h.completeUpload(log, u)
		return nil
	}
	// The plan's size limit is the account's plan now, not at creation:
	// an upload begun before a downgrade does not keep the old limit.
	limits, err := h.host.Limits(u.Account)
	if err != nil {
		return h.keepPending(log, err)
	}
	u.MaxSize = limits.MaxUploadBytes
	if u.Length > u.MaxSize {
		_ = h.store.Remove(u.ID)
		log.Info("resumable upload refused: larger than the plan allows now", "bytes", u.Length)
		return domain.E("upload video", domain.TooLarge, "upload is %d bytes; your plan allows files of at most %d bytes (the plan changed since the upload began); the upload was removed", u.Length, u.MaxSize)
	}
	// What an earlier try stored of the original, which no event owns,
	// goes first (a directory store commits only into a new directory).
	if err := h.cfg.Media.Remove(ctx, u.ID); err != nil {
		return h.keepPending(log, StoreError{Err: err})
	}
	if h.cfg.Accepting != nil {
		h.cfg.Accepting(u.ID)
	}
	src, err := h.store.CommitFile(u.ID)
	if errors.Is(err, fs.ErrNotExist) { // its bytes are gone: nothing to try again with
		_ = h.store.Remove(u.ID)
		return domain.Wrap("upload video", domain.Internal, err, "")
	}
	if err != nil {
		return h.keepPending(log, StoreError{Err: err})
	}
	err = h.host.Accept(ctx, File{ID: u.ID, Account: u.Account, Collection: u.Collection, Filename: u.Filename,
		Ext: u.Ext, Size: u.Length, MaxSize: u.MaxSize, Path: src, Settings: u.Settings})
	_ = os.Remove(src) // what a failed commit left; once committed, it is gone already
	var se StoreError
	switch {
	case err == nil:
		h.completeUpload(log, u)
		return nil
	case h.host.Refused(err) && !errors.As(err, &se):
		_ = h.store.Remove(u.ID)
		log.Info("resumable upload refused at its last byte", "err", err)
		return err
	case domain.IsKind(err, domain.Conflict):
		// The video exists: an earlier try whose outcome was unknown
		// stored its event after all.
		if ok, _ := h.uploadAccepted(ctx, u); ok {
			h.completeUpload(log, u)
			return nil
		}
	}
	return h.keepPending(log, err)
}

// keepPending logs the failed acceptance of a pending upload, kept for
// another try, and returns err.
func (h *Handler) keepPending(log *slog.Logger, err error) error {
	log.Warn("resumable upload complete but not accepted; it is kept and tried again", "err", err)
	return err
}

// uploadAccepted reports whether upload u is a video already: a try
// stored its event (the read models may not show it yet).
func (h *Handler) uploadAccepted(ctx context.Context, u Upload) (bool, error) {
	return h.host.Accepted(ctx, u.ID, u.Account)
}

// storeFailureOr answers an error of finishUpload: a StoreError through
// Host.StoreFailure, any other as it is.
func (h *Handler) storeFailureOr(w http.ResponseWriter, err error) error {
	var se StoreError
	if errors.As(err, &se) {
		return h.host.StoreFailure(w, se.Err)
	}
	return err
}

// completeUpload replaces upload u, a video now, by its completion
// record, which answers for it from now on, for as long as an unfinished
// upload would (tusd keeps a finished upload's info likewise): a client
// that lost the last answer learns from HEAD that it is complete, instead
// of uploading the file again.
func (h *Handler) completeUpload(log *slog.Logger, u Upload) {
	if err := h.store.Complete(u, h.cfg.Now().Add(h.cfg.Expiry).UTC()); err != nil {
		log.Warn("record a finished upload", "err", err)
	}
}

// FinishPending tries again to accept the pending uploads no request
// holds, while the stores can take them, so that they become videos once
// the stores are back whether or not their clients come back. It stops at
// the first try that fails for want of a store.
func (h *Handler) FinishPending(ctx context.Context) (finished int) {
	ids := h.store.PendingIDs()
	if len(ids) == 0 || !h.host.StoresReady(ctx) {
		return 0
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			return finished
		}
		if !h.store.Lock(id) {
			continue
		}
		var err error
		if u, ok := h.store.Get(id); ok && u.Pending() && h.cfg.Now().Before(u.Expires) {
			if err = h.finishUpload(eventstore.FailFast(ctx), u); err == nil {
				finished++
				h.cfg.Log.Info("pending resumable upload accepted", "video_id", id)
			}
		}
		h.store.Unlock(id)
		if err != nil && !h.host.Refused(err) {
			return finished
		}
	}
	return finished
}
