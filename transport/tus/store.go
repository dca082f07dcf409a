package tus

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/media"
)

// Upload is what the server knows of an unfinished tus upload. It is
// kept in <dir>/<id>.json beside the bytes received, <dir>/<id>.bin, so
// that an upload outlives a restart of kino.
type Upload struct {
	ID         string    `json:"id"` // the id of the video it becomes
	Account    string    `json:"account"`
	Collection string    `json:"collection"`
	Filename   string    `json:"filename"`
	Ext        string    `json:"ext"`
	Length     int64     `json:"length"`           // Upload-Length
	Offset     int64     `json:"offset"`           // bytes received and recorded
	MaxSize    int64     `json:"maxSize"`          // the plan's limit at creation (checked again, with the plan of the moment, at the last byte)
	Metadata   string    `json:"metadata"`         // Upload-Metadata as sent, for HEAD
	Direct     string    `json:"direct,omitempty"` // hex SHA-256 of the direct upload token that created it
	Sniffed    bool      `json:"sniffed"`          // its first bytes were found to be a video
	Created    time.Time `json:"created"`
	Expires    time.Time `json:"expires"`

	Settings Settings `json:"settings"` // playbackPolicy and download asked for

	Finished bool `json:"-"` // a completion record (Done), not an upload
}

// Settings are an upload's optional playbackPolicy and download,
// overriding its collection's defaults, and its details (title,
// description, tags, metadata; normalized when the upload is created).
type Settings struct {
	Policy   domain.PlaybackPolicy `json:"playbackPolicy,omitempty"` // "": the collection's
	Download *bool                 `json:"download,omitempty"`       // nil: the collection's
	Details  domain.Details        `json:"details,omitzero"`
	// ThumbnailTime is the moment the thumbnail is taken at (seconds);
	// nil: kino's choice.
	ThumbnailTime *float64 `json:"thumbnailTime,omitempty"`
}

// Pending reports whether every byte of u is in but u is not a video yet:
// its acceptance failed (the event or media store did not take it, or
// kino stopped during it) and is tried again.
func (u Upload) Pending() bool { return !u.Finished && u.Length > 0 && u.Offset == u.Length }

// ResumeOffset is the offset a client is told (HEAD's Upload-Offset) and
// resumes from. A pending upload's is one byte short of its length: a tus
// client takes an offset equal to the length for a finished upload, and
// sends no more (tus-js-client ends there); told this, it sends the last
// byte again, and that PATCH tries the acceptance again.
func (u Upload) ResumeOffset() int64 {
	if u.Pending() {
		return u.Length - 1
	}
	return u.Offset
}

// Done is what is kept of a finished upload, in <dir>/<id>.done, until
// Expires: enough for its owner's HEAD to learn that it is complete, and
// for a PATCH at its last offset to be a no-op, so a client that lost the
// last answer does not upload the file again (a second video).
type Done struct {
	ID       string    `json:"id"`
	Account  string    `json:"account"`
	Direct   string    `json:"direct,omitempty"`
	Length   int64     `json:"length"`
	Metadata string    `json:"metadata"`
	Expires  time.Time `json:"expires"`
}

// FileStore keeps this node's unfinished tus uploads in one directory, on
// the file system of the media store (so the last byte commits with a
// rename), and an index of them in memory. The index is the directory's
// content as read at start plus this process's changes: a node serves the
// uploads it holds on its disk.
//
// The .json file is rewritten (atomically) at the end of each PATCH; the
// .bin may hold more bytes than the .json records after a crash in the
// middle of one: those are cut off before the next PATCH writes. A
// Complete upload's bytes are committed as the video's original under a
// second name, <dir>/<id>.commit, which the media store takes: the .bin
// stays until the video exists, whatever becomes of the acceptance.
type FileStore struct {
	dir string

	mu      sync.Mutex
	uploads map[string]Upload
	done    map[string]Done
	busy    map[string]*hold // a PATCH or DELETE is at work on it
}

// OpenFileStore opens the store in dir (made if need be), reading the
// uploads a previous run left and removing what cannot be resumed.
func OpenFileStore(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("tus store: %w", err)
	}
	t := &FileStore{dir: dir, uploads: make(map[string]Upload), done: make(map[string]Done), busy: make(map[string]*hold)}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("tus store: %w", err)
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".done")
		if !ok || !domain.ValidID(id) {
			continue
		}
		var d Done
		if b, err := os.ReadFile(t.finished(id)); err == nil && json.Unmarshal(b, &d) == nil && d.ID == id {
			t.done[id] = d
		} else {
			_ = os.Remove(t.finished(id))
		}
	}
	for _, e := range entries {
		name := e.Name()
		id, ok := strings.CutSuffix(name, ".json")
		if !ok || !domain.ValidID(id) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		var u Upload
		if err == nil {
			err = json.Unmarshal(b, &u)
		}
		if _, serr := os.Stat(t.DataPath(id)); err != nil || serr != nil || u.ID != id || u.Offset > u.Length {
			_ = t.removeFiles(id) // unreadable: nothing can resume it
			continue
		}
		// A complete one is pending (its acceptance failed, or was cut
		// short by a crash): it is tried again, and finishUpload finds a
		// video accepted meanwhile.
		t.uploads[id] = u
	}
	// Files that are not an upload's record and bytes, nor a completion
	// record: a crash between creating the .bin and its .json, a .json.tmp
	// never renamed, a .commit an acceptance left.
	for _, e := range entries {
		name := e.Name()
		id, ext, _ := strings.Cut(name, ".")
		_, upload := t.uploads[id]
		_, done := t.done[id]
		if upload && (ext == "bin" || ext == "json") || done && ext == "done" {
			continue
		}
		_ = os.Remove(filepath.Join(dir, name))
	}
	return t, nil
}

// DataPath is the file of the bytes of upload id received so far.
func (t *FileStore) DataPath(id string) string { return filepath.Join(t.dir, id+".bin") }
func (t *FileStore) info(id string) string     { return filepath.Join(t.dir, id+".json") }
func (t *FileStore) finished(id string) string { return filepath.Join(t.dir, id+".done") }
func (t *FileStore) commit(id string) string   { return filepath.Join(t.dir, id+".commit") }

// CommitFile gives the bytes of the complete upload id their second name,
// for the media store's Commit to take: a hard link (or a copy, where the
// file system has none).
func (t *FileStore) CommitFile(id string) (string, error) {
	p := t.commit(id)
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("tus store: commit %s: %w", id, err)
	}
	if err := media.LinkOrCopy(t.DataPath(id), p); err != nil {
		_ = os.Remove(p)
		return "", fmt.Errorf("tus store: commit %s: %w", id, err)
	}
	return p, nil
}

// Reopen makes the pending upload u unfinished again, one byte short of
// its length (what HEAD told the client), on disk and in its record, for
// a PATCH of that byte: whatever becomes of the PATCH, the record and the
// bytes agree.
func (t *FileStore) Reopen(u Upload) (Upload, error) {
	u.Offset = u.Length - 1
	if err := os.Truncate(t.DataPath(u.ID), u.Offset); err != nil {
		return u, fmt.Errorf("tus store: reopen %s: %w", u.ID, err)
	}
	return u, t.Save(u)
}

// PendingIDs lists the pending uploads no request holds.
func (t *FileStore) PendingIDs() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ids []string
	for id, u := range t.uploads {
		if u.Pending() && t.busy[id] == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// Complete replaces the upload u, accepted as a video, by its completion
// record, kept until expires.
func (t *FileStore) Complete(u Upload, expires time.Time) error {
	d := Done{ID: u.ID, Account: u.Account, Direct: u.Direct, Length: u.Length, Metadata: u.Metadata, Expires: expires}
	b, err := json.Marshal(d)
	if err == nil {
		tmp := t.finished(u.ID) + ".tmp"
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, t.finished(u.ID))
		}
		if err != nil {
			_ = os.Remove(tmp)
		}
	}
	if err == nil {
		t.mu.Lock()
		t.done[u.ID] = d
		t.mu.Unlock()
	}
	return errors.Join(err, t.Remove(u.ID))
}

// Completed is the completion record of a finished upload.
func (t *FileStore) Completed(id string) (Done, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.done[id]
	return d, ok
}

// Forget removes a completion record.
func (t *FileStore) Forget(id string) error {
	t.mu.Lock()
	delete(t.done, id)
	t.mu.Unlock()
	if err := os.Remove(t.finished(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// ExpiredDone lists the completion records expired at now.
func (t *FileStore) ExpiredDone(now time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ids []string
	for id, d := range t.done {
		if !now.Before(d.Expires) {
			ids = append(ids, id)
		}
	}
	return ids
}

// Create records a new upload with an empty file.
func (t *FileStore) Create(u Upload) error {
	f, err := os.OpenFile(t.DataPath(u.ID), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("tus store: create %s: %w", u.ID, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("tus store: create %s: %w", u.ID, err)
	}
	if err := t.Save(u); err != nil {
		_ = os.Remove(t.DataPath(u.ID))
		return err
	}
	return nil
}

// Save records u (after a PATCH), atomically.
func (t *FileStore) Save(u Upload) error {
	b, err := json.Marshal(u)
	if err != nil {
		return fmt.Errorf("tus store: save %s: %w", u.ID, err)
	}
	tmp := t.info(u.ID) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("tus store: save %s: %w", u.ID, err)
	}
	if err := os.Rename(tmp, t.info(u.ID)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("tus store: save %s: %w", u.ID, err)
	}
	t.mu.Lock()
	t.uploads[u.ID] = u
	t.mu.Unlock()
	return nil
}

// Get is the unfinished upload id.
func (t *FileStore) Get(id string) (Upload, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	u, ok := t.uploads[id]
	return u, ok
}

// Remove forgets an upload and removes its files.
func (t *FileStore) Remove(id string) error {
	t.mu.Lock()
	delete(t.uploads, id)
	t.mu.Unlock()
	return t.removeFiles(id)
}

func (t *FileStore) removeFiles(id string) error {
	var errs []error
	for _, p := range []string{t.info(id), t.DataPath(id), t.info(id) + ".tmp", t.commit(id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// hold is a request's hold on an upload: while it reads a body, a
// later request of the same owner may interrupt it (takeover).
type hold struct {
	mu          sync.Mutex
	interrupt   func() // ends the body read in progress; nil when none is
	interrupted bool
	done        chan struct{} // closed when the hold is released
}

// Lock marks an upload busy; false when it is already.
func (t *FileStore) Lock(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.busy[id] != nil {
		return false
	}
	t.busy[id] = &hold{done: make(chan struct{})}
	return true
}

// Unlock releases the hold Lock or Takeover took.
func (t *FileStore) Unlock(id string) {
	t.mu.Lock()
	if h := t.busy[id]; h != nil {
		close(h.done)
	}
	delete(t.busy, id)
	t.mu.Unlock()
}

// Interruptible registers f as the way to end the body read of the hold
// on id (called at once if a takeover came first).
func (t *FileStore) Interruptible(id string, f func()) {
	t.mu.Lock()
	h := t.busy[id]
	t.mu.Unlock()
	if h == nil {
		return
	}
	h.mu.Lock()
	h.interrupt = f
	now := h.interrupted
	h.mu.Unlock()
	if now {
		f()
	}
}

// Takeover locks id, interrupting the request that holds it if any (its
// body read ends; it records what it wrote and lets go), and waiting at
// most wait for it to let go; false when it did not.
func (t *FileStore) Takeover(ctx context.Context, id string, wait time.Duration) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		if t.Lock(id) {
			return true
		}
		t.mu.Lock()
		h := t.busy[id]
		t.mu.Unlock()
		if h == nil {
			continue
		}
		h.mu.Lock()
		h.interrupted = true
		f := h.interrupt
		h.mu.Unlock()
		if f != nil {
			f()
		}
		select {
		case <-h.done:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Usage is the number of unfinished uploads of account: its direct
// uploads (made through direct upload URLs) or its own.
func (t *FileStore) Usage(account string, direct bool) (n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, u := range t.uploads {
		if u.Account == account && (u.Direct != "") == direct {
			n++
		}
	}
	return n
}

// Expired lists the uploads expired at now that no request holds.
func (t *FileStore) Expired(now time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ids []string
	for id, u := range t.uploads {
		if !now.Before(u.Expires) && t.busy[id] == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// Unfinished lists account's unfinished uploads on this node that have
// not expired at now, newest first. Completion records are not uploads
// (they live in t.done): a finished upload is a video, listed there.
// Read-only: an expired upload is left for findUpload or the sweeper.
func (t *FileStore) Unfinished(account string, now time.Time) []Upload {
	t.mu.Lock()
	var out []Upload
	for _, u := range t.uploads {
		if u.Account == account && now.Before(u.Expires) {
			out = append(out, u)
		}
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b Upload) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out
}

// Busy reports whether a request holds upload id.
func (t *FileStore) Busy(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.busy[id] != nil
}

// Interrupted reports whether the request that holds upload id was asked
// to let it go (a takeover waits for it).
func (t *FileStore) Interrupted(id string) bool {
	t.mu.Lock()
	h := t.busy[id]
	t.mu.Unlock()
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.interrupted
}
