package media

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kino-video/kino/domain"
)

// Bucket keeps media in an object store (an ObjectStore: the JetStream
// object store in kino): each video's files are objects named
// <videoId>/<path> (original<ext>, hls/..., thumbnail.jpg, preview.mp4),
// and <videoId>/index.json lists them, so one video's objects are found
// without listing the bucket. Uploads in flight and transcode attempts
// stay on the local disk, in a directory laid out (and moded) like a
// Dir's.
type Bucket struct {
	obj   ObjectStore
	local *Dir

	cache *cache // local copies of objects served; nil: none
	stats stats  // segments' descriptions, for a second (with cache)

	// Grace is the age under which Sweep leaves an object alone (default
	// 10 minutes): another node may have stored an original whose
	// UploadAccepted it is appending right now.
	Grace time.Duration
}

// indexName is the object listing a video's other objects.
const indexName = "index.json"

type index struct {
	Original string   `json:"original,omitempty"`
	Outputs  []string `json:"outputs,omitempty"`
}

// OpenBucket adapts obj, with scratch (created if needed) for uploads in
// flight and work directories, and cacheBytes of copies of the objects
// served, under scratch/.cache (0: no copies).
func OpenBucket(obj ObjectStore, scratch string, cacheBytes int64) (*Bucket, error) {
	local, err := OpenDir(scratch)
	if err != nil {
		return nil, err
	}
	b := &Bucket{obj: obj, local: local, Grace: 10 * time.Minute}
	if cacheBytes > 0 {
		if b.cache, err = openCache(filepath.Join(scratch, ".cache"), cacheBytes); err != nil {
			return nil, fmt.Errorf("media: cache: %w", err)
		}
	}
	return b, nil
}

// CommitCopies is true: Commit copies the upload into the object store,
// so it needs the room of a second copy (on the store's disk: with
// JetStream, the NATS server's) for a moment.
func (b *Bucket) CommitCopies() bool { return true }

// WorkRoot is the local directory holding transcode attempts.
func (b *Bucket) WorkRoot() string { return b.local.WorkRoot() }

// Incoming creates a local temporary file for an upload in flight.
func (b *Bucket) Incoming() (*os.File, error) { return b.local.Incoming() }

func name(id, rel string) string { return id + "/" + rel }

// checkRel refuses a file name that is not one of a video's files (the
// index is the Bucket's own).
func checkRel(rel string) error {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.Contains(rel, "..") || rel == indexName {
		return domain.Wrap("media", domain.NotFound, fs.ErrNotExist, "file not found")
	}
	return nil
}

func (b *Bucket) readIndex(ctx context.Context, id string) (index, bool, error) {
	// An index replaced (or removed) while it is read may lose its bytes
	// under the reader (the JetStream bucket's chunks go with a Put over
	// them): read the new one, or find it gone. The writer
	// needs a moment to finish: back off a little between reads (a CI run
	// under load met five back-to-back reads all inside one removal).
	wait := 5 * time.Millisecond
	for i := range 8 {
		if i > 0 {
			select {
			case <-ctx.Done():
				return index{}, false, ctx.Err()
			case <-time.After(wait):
			}
			wait *= 2
		}
		var ix index
		r, _, err := b.obj.Get(ctx, name(id, indexName), 0)
		if errors.Is(err, fs.ErrNotExist) {
			return ix, false, nil
		}
		if err != nil {
			return ix, false, err
		}
		err = json.NewDecoder(r).Decode(&ix)
		r.Close()
		if err == nil {
			return ix, true, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return ix, false, fmt.Errorf("media: index of %s: %w", id, err)
		}
	}
	return index{}, false, fmt.Errorf("media: index of %s: replaced while read, again and again", id)
}

func (b *Bucket) writeIndex(ctx context.Context, id string, ix index) error {
	data, err := json.Marshal(ix)
	if err != nil {
		return err
	}
	_, err = b.obj.Put(ctx, name(id, indexName), bytes.NewReader(data))
	return err
}

// Commit stores a finished upload (a file from Incoming) as the original
// of id, and then removes the local file. When the bucket does not take
// it, the file stays at tmpPath, the caller's: a resumable upload's bytes
// must outlive an outage of the store.
func (b *Bucket) Commit(ctx context.Context, tmpPath, id, ext string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := checkExt(ext); err != nil {
		return err
	}
	f, err := os.Open(tmpPath)
	if err != nil {
		return fmt.Errorf("media: commit %s: %w", id, err)
	}
	defer f.Close()
	orig := OriginalName(ext)
	if err := b.writeIndex(ctx, id, index{Original: orig}); err != nil {
		return fmt.Errorf("media: commit %s: %w", id, err)
	}
	if _, err := b.obj.Put(ctx, name(id, orig), f); err != nil {
		_ = b.Remove(context.WithoutCancel(ctx), id)
		return fmt.Errorf("media: commit %s: %w", id, err)
	}
	_ = os.Remove(tmpPath)
	return nil
}

// Open opens rel (slash-separated) of video id for reading at any offset.
// A missing object is a NotFound wrapping fs.ErrNotExist.
func (b *Bucket) Open(ctx context.Context, id, rel string) (*File, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if err := checkRel(rel); err != nil {
		return nil, err
	}
	if b.cache != nil {
		// A local copy needs only the object's description: no read of
		// its bytes is begun (which a store like S3 would have to abort).
		info, err := b.stats.stat(ctx, b.obj, name(id, rel), rel, time.Now())
		if err != nil {
			return nil, notFound(err)
		}
		if f := b.cache.lookup(info.Digest, info.Size); f != nil {
			b.cache.hits.Add(1)
			return &File{ReadSeekCloser: f, Size: info.Size, ModTime: info.ModTime, ETag: etag(info)}, nil
		}
		b.cache.misses.Add(1)
		fetch := func(ctx context.Context) (io.ReadCloser, ObjectInfo, error) {
			return openObject(ctx, b.obj, name(id, rel))
		}
		if f := b.cache.fill(ctx, info.Digest, info.Size, fetch); f != nil {
			return &File{ReadSeekCloser: f, Size: info.Size, ModTime: info.ModTime, ETag: etag(info)}, nil
		}
	}
	r, info, err := openObject(ctx, b.obj, name(id, rel))
	if err != nil {
		return nil, notFound(err)
	}
	file := &File{ReadSeekCloser: r, Size: info.Size, ModTime: info.ModTime, ETag: etag(info)}
	if f := b.cache.open(info.Digest, info.Size, r); f != nil {
		r.Close()
		file.ReadSeekCloser = f
	} else if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return file, nil
}

// CacheStats are how many reads Open served from a local copy, and how
// many found none (0 and 0 without a cache).
func (b *Bucket) CacheStats() (hits, misses uint64) {
	if b.cache == nil {
		return 0, 0
	}
	return b.cache.hits.Load(), b.cache.misses.Load()
}

// CanPresign reports whether the object store hands out presigned URLs
// (Presign).
func (b *Bucket) CanPresign() bool {
	_, ok := b.obj.(ObjectPresigner)
	return ok
}

// Presign is a URL that reads rel of video id straight from the object
// store for ttl, answered with contentType and cacheControl: for /cdn to
// redirect to, after its own checks. A missing file is a NotFound, as
// with Open.
func (b *Bucket) Presign(ctx context.Context, id, rel string, ttl time.Duration, contentType, cacheControl string) (*url.URL, error) {
	p, ok := b.obj.(ObjectPresigner)
	if !ok {
		return nil, domain.E("media", domain.Internal, "the media store hands out no presigned URLs")
	}
	if err := checkID(id); err != nil {
		return nil, err
	}
	if err := checkRel(rel); err != nil {
		return nil, err
	}
	if _, err := b.obj.Stat(ctx, name(id, rel)); err != nil {
		return nil, notFound(err)
	}
	return p.Presign(ctx, name(id, rel), ttl, contentType, cacheControl)
}

// Fetch copies the original of id into dst, a new local file.
func (b *Bucket) Fetch(ctx context.Context, id, ext, dst string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if err := checkExt(ext); err != nil {
		return err
	}
	if err := b.getFile(ctx, name(id, OriginalName(ext)), dst); err != nil {
		_ = os.Remove(dst)
		if errors.Is(err, fs.ErrNotExist) {
			return notFound(err)
		}
		return fmt.Errorf("media: fetch %s: %w", id, err)
	}
	return nil
}

// getFile copies object name into a new local file at path (mode 0600).
func (b *Bucket) getFile(ctx context.Context, name, path string) error {
	r, _, err := b.obj.Get(ctx, name, 0)
	if err != nil {
		return err
	}
	defer r.Close()
	return writeNew(path, r)
}

// notFound is err, a missing object of the store's, as a NotFound (still
// wrapping fs.ErrNotExist).
func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) && !domain.IsKind(err, domain.NotFound) {
		return domain.Wrap("media", domain.NotFound, err, "file not found")
	}
	return err
}

// etag is the entity tag of an object: its digest, or a weak tag of its
// size and time when the store keeps no digest.
func etag(info ObjectInfo) string {
	if info.Digest == "" {
		return `W/"` + strconv.FormatInt(info.Size, 36) + "-" + strconv.FormatInt(info.ModTime.UnixNano(), 36) + `"`
	}
	return `"` + strings.TrimPrefix(info.Digest, "SHA-256=") + `"`
}

// WorkDir creates the local directory of one transcode attempt holding
// the original as InputName(ext); see Dir.WorkDir.
func (b *Bucket) WorkDir(ctx context.Context, id, ext string, owner *Owner) (string, error) {
	return workDir(ctx, b.WorkRoot(), b, id, ext, owner)
}

// Publish stores a finished work directory's outputs as the video's,
// replacing an earlier attempt's, and removes the work directory. The
// outputs are checked first as Dir.Publish checks them (no links, no
// special files). It fails, leaving nothing behind, if the video's
// original is gone (the video was deleted), before or while it stores.
func (b *Bucket) Publish(ctx context.Context, id, workDir string) error {
	defer b.stats.forget(id) // what this node changed it serves at once
	if err := checkID(id); err != nil {
		return err
	}
	ix, err := b.liveIndex(ctx, id)
	if err != nil {
		return err
	}
	if err := reclaim(workDir, Outputs...); err != nil {
		return fmt.Errorf("media: publish %s: %w", id, err)
	}
	var outputs []string
	for _, top := range Outputs {
		if absent(filepath.Join(workDir, top)) {
			continue
		}
		err := filepath.WalkDir(filepath.Join(workDir, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(workDir, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			outputs = append(outputs, rel)
			return b.put(ctx, id, rel, f, slices.Contains(ix.Outputs, rel))
		})
		if err != nil {
			b.drop(ctx, id, outputs, ix.Outputs)
			// A video deleted while its outputs were stored makes some
			// stores refuse a write into what is being removed (a
			// directory-backed S3): the deletion is the outcome.
			if lerr := b.live(ctx, id, ix); domain.IsKind(lerr, domain.NotFound) {
				return lerr
			}
			return fmt.Errorf("media: publish %s: %w", id, err)
		}
	}
	old := ix.Outputs
	ix.Outputs = outputs
	if err := b.list(ctx, id, ix, outputs, old, true); err != nil {
		return err
	}
	b.drop(ctx, id, old, outputs)
	return os.RemoveAll(workDir)
}

// liveIndex reads the index of id, failing with NotFound when the video's
// original is gone (the video was deleted).
func (b *Bucket) liveIndex(ctx context.Context, id string) (index, error) {
	ix, ok, err := b.readIndex(ctx, id)
	if err != nil {
		return index{}, err
	}
	if !ok || ix.Original == "" {
		return index{}, domain.E("media", domain.NotFound, "video's media deleted")
	}
	if err := b.live(ctx, id, ix); err != nil {
		return index{}, err
	}
	return ix, nil
}

// list ends a publishing of id's objects stored: it writes ix, which lists
// them, as id's index (unless write is false: it listed them already), then
// checks the video is still live. If the write fails it deletes those of
// stored the old index, listed, does not hold; if the video is gone, all of
// stored and the index.
func (b *Bucket) list(ctx context.Context, id string, ix index, stored, listed []string, write bool) error {
	if write {
		if err := b.writeIndex(ctx, id, ix); err != nil {
			b.drop(ctx, id, stored, listed)
			return fmt.Errorf("media: publish %s: %w", id, err)
		}
	}
	// Remove deletes the original first, then what the index lists: had
	// it run since liveIndex's check, it may have missed these outputs.
	if err := b.live(ctx, id, ix); err != nil {
		b.drop(ctx, id, stored, nil)
		_ = b.obj.Delete(context.WithoutCancel(ctx), name(id, indexName))
		return err
	}
	return nil
}

// live fails with NotFound when the original of id is gone.
func (b *Bucket) live(ctx context.Context, id string, ix index) error {
	if _, err := b.obj.Stat(ctx, name(id, ix.Original)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return domain.Wrap("media", domain.NotFound, err, "video's media deleted")
		}
		return err
	}
	return nil
}

// drop deletes the objects rels of id but those in keep, as far as it can.
func (b *Bucket) drop(ctx context.Context, id string, rels, keep []string) {
	ctx = context.WithoutCancel(ctx)
	for _, rel := range rels {
		if !slices.Contains(keep, rel) {
			_ = b.obj.Delete(ctx, name(id, rel))
		}
	}
}

// RemoveOutputs deletes a video's processed outputs, keeping its original.
func (b *Bucket) RemoveOutputs(ctx context.Context, id string) error {
	defer b.stats.forget(id) // what this node changed it serves at once
	if err := checkID(id); err != nil {
		return err
	}
	ix, ok, err := b.readIndex(ctx, id)
	if err != nil || !ok {
		return err
	}
	for _, rel := range ix.Outputs {
		if err := b.obj.Delete(ctx, name(id, rel)); err != nil {
			return fmt.Errorf("media: remove outputs of %s: %w", id, err)
		}
	}
	ix.Outputs = nil
	if err := b.writeIndex(ctx, id, ix); err != nil {
		return fmt.Errorf("media: remove outputs of %s: %w", id, err)
	}
	return nil
}

// Remove deletes every object of a video: the original first (so a
// Publish under way sees the deletion), then what the index lists, then
// the index. Removing what is not there is fine.
func (b *Bucket) Remove(ctx context.Context, id string) error {
	defer b.stats.forget(id) // what this node changed it serves at once
	if err := checkID(id); err != nil {
		return err
	}
	ix, ok, err := b.readIndex(ctx, id)
	if err != nil || !ok {
		return err
	}
	if ix.Original != "" {
		if err := b.obj.Delete(ctx, name(id, ix.Original)); err != nil {
			return fmt.Errorf("media: remove %s: %w", id, err)
		}
	}
	// Read again: a Publish may have written its outputs meanwhile.
	if ix, _, err = b.readIndex(ctx, id); err != nil {
		return err
	}
	for _, rel := range ix.Outputs {
		if err := b.obj.Delete(ctx, name(id, rel)); err != nil {
			return fmt.Errorf("media: remove %s: %w", id, err)
		}
	}
	if err := b.obj.Delete(ctx, name(id, indexName)); err != nil {
		return fmt.Errorf("media: remove %s: %w", id, err)
	}
	return nil
}

// Sweep removes leftovers: the local uploads in flight and idle work
// directories (as Dir.Sweep does), and every object of a video for
// which live reports false, or whose name is no video's. It lists the
// whole bucket: run it at start and now and then, not per request.
func (b *Bucket) Sweep(ctx context.Context, live func(id string) (bool, error)) (removed []string, err error) {
	if removed, err = b.SweepLocal(); err != nil {
		return removed, err
	}
	more, err := b.Reconcile(ctx, live)
	return append(removed, more...), err
}

// SweepLocal empties the local directory of uploads in flight: run it at
// start, before this node takes uploads.
func (b *Bucket) SweepLocal() ([]string, error) { return b.local.sweepScratch() }

// Reconcile removes the objects of every video for which live reports
// false (deleted, or never accepted), and never an object whose name does
// not start with a video id (another application's, in a shared bucket),
// except those stored in the last
// Grace, and aborts the unfinished writes a store keeps
// (IncompleteAborter) begun more than a day ago. It lists the whole
// bucket: a maintenance pass that may run while the node serves, repeated
// now and then.
func (b *Bucket) Reconcile(ctx context.Context, live func(id string) (bool, error)) (removed []string, err error) {
	defer b.stats.forget("")
	all, err := b.obj.List(ctx)
	if err != nil {
		return removed, fmt.Errorf("media: sweep: %w", err)
	}
	verdict := map[string]bool{}
	for _, oi := range all {
		id, _, _ := strings.Cut(oi.Name, "/")
		if checkID(id) != nil {
			continue // not named by a video: not kino's (a shared bucket), never removed
		}
		keep, seen := verdict[id]
		if !seen {
			if keep, err = live(id); err != nil {
				return removed, err
			}
			verdict[id] = keep
		}
		if keep || time.Since(oi.ModTime) < b.Grace {
			continue
		}
		if err := b.obj.Delete(ctx, oi.Name); err != nil {
			return removed, fmt.Errorf("media: sweep: %w", err)
		}
		removed = append(removed, oi.Name)
	}
	if a, ok := b.obj.(IncompleteAborter); ok {
		aborted, err := a.AbortIncomplete(ctx, incompleteAge)
		removed = append(removed, aborted...)
		if err != nil {
			return removed, fmt.Errorf("media: sweep: %w", err)
		}
	}
	return removed, nil
}
