package httpapi

import (
	"cmp"
	"net/http"
	"slices"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/wire"
)

// unfinished lists account's unfinished uploads on this node that have
// not expired at now, newest first. Completion records are not uploads
// (they live in t.done): a finished upload is a video, listed there.
// Read-only: an expired upload is left for findUpload or the sweeper.
func (t *tusStore) unfinished(account string, now time.Time) []tusUpload {
	t.mu.Lock()
	var out []tusUpload
	for _, u := range t.uploads {
		if u.Account == account && now.Before(u.Expires) {
			out = append(out, u)
		}
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b tusUpload) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out
}

// listUploads answers GET /v1/uploads: the caller's unfinished tus
// uploads held by this node, so that an account at its cap of unfinished
// uploads (maxUnfinished) can find them, and resume or DELETE them at
// /v1/uploads/tus/{id} (direct ones too: the account owns them).
func (s *Server) listUploads(w http.ResponseWriter, r *http.Request) error {
	out := []wire.UnfinishedUpload{}
	if s.tus != nil {
		for _, u := range s.tus.unfinished(callerOf(r).Account, s.cfg.Now()) {
			out = append(out, wire.UnfinishedUpload{ID: u.ID, Filename: u.Filename, Collection: u.Collection,
				Length: u.Length, Offset: u.resumeOffset(), CreatedAt: domain.FormatTime(u.Created),
				ExpiresAt: domain.FormatTime(u.Expires), Direct: u.Direct != ""})
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"data": out})
	return nil
}
