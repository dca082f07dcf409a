package media

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kino-video/kino/domain"
)

// Progressive publishing: while ffmpeg still writes a work directory, the
// transcoder publishes the HLS files it has finished (segments its
// playlists list, the playlists it rewrote, the master), so the video plays
// before it completes. Publish, at the end, replaces them all.
//
// A work directory being written cannot be taken back (reclaim) as Publish
// does: ffmpeg's user owns it and still writes it. Each file is checked
// where it is opened instead: no step of its path a symlink, opened without
// following one, and the open file itself a plain file with one link, owned
// by the owner of the directory it is published from. A file ffmpeg's user
// owns holds nothing that user could not have written into a segment
// anyway; a link to, or a file of, anyone else is refused. The bytes are
// copied from the checked descriptor, so no swap after the check counts.

// checkEarly refuses a path PublishFiles does not publish: only files under
// hls/, slash-separated, without empty, dot or dot-dot steps, and the
// stills a thumbnail job remakes (thumbnail.jpg, preview.webp).
func checkEarly(rel string) error {
	if rel == ThumbnailName || rel == AnimatedName {
		return nil
	}
	parts := strings.Split(rel, "/")
	if len(parts) < 2 || parts[0] != HLSDir {
		return fmt.Errorf("outputs: %q is not an HLS file: refused", rel)
	}
	for _, p := range parts {
		if p == "" || strings.HasPrefix(p, ".") || strings.ContainsAny(p, `\`+"\x00") {
			return fmt.Errorf("outputs: %q is not a plain relative path: refused", rel)
		}
	}
	return nil
}

// openOwned opens dir/rel for reading after the checks above.
func openOwned(dir, rel string) (*os.File, error) {
	dfi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if !dfi.IsDir() {
		return nil, fmt.Errorf("outputs: %s is not a directory", dir)
	}
	uid, known := owner(dfi)
	parts := strings.Split(rel, "/")
	p := dir
	for _, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("outputs: %s is not a directory (%s): refused", part, fi.Mode().Type())
		}
	}
	p = filepath.Join(p, parts[len(parts)-1])
	if fi, err := os.Lstat(p); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("outputs: %s is not a plain file (%s): refused", filepath.Base(p), fi.Mode().Type())
	}
	f, err := os.OpenFile(p, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		switch u, ok := owner(fi); {
		case !fi.Mode().IsRegular():
			err = fmt.Errorf("outputs: %s is not a plain file (%s): refused", filepath.Base(p), fi.Mode().Type())
		case links(fi) != 1:
			err = fmt.Errorf("outputs: %s has %d links: refused", filepath.Base(p), links(fi))
		case known && ok && u != uid:
			err = fmt.Errorf("outputs: %s is not owned by its directory's owner: refused", filepath.Base(p))
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// PublishFiles publishes the files rels (slash-separated, under hls/, or
// the stills thumbnail.jpg and preview.webp) of
// dir, a work directory ffmpeg may still be writing, as the same paths of
// video id, each replacing the one published before in one step (a
// playlist never 404s while it is replaced). Every file is checked as the
// package's progressive-publishing comment says. It fails with NotFound if
// the video's directory is gone (deleted), and never creates it again.
func (d *Dir) PublishFiles(_ context.Context, id, dir string, rels []string) error {
	vdir, err := d.Dir(id)
	if err != nil {
		return err
	}
	gone := func(err error) error {
		if _, serr := os.Stat(vdir); errors.Is(serr, fs.ErrNotExist) {
			return domain.Wrap("media", domain.NotFound, serr, "video's media deleted")
		}
		return fmt.Errorf("media: publish %s: %w", id, err)
	}
	if _, err := os.Stat(vdir); err != nil {
		return gone(err)
	}
	for _, rel := range rels {
		if err := checkEarly(rel); err != nil {
			return fmt.Errorf("media: publish %s: %w", id, err)
		}
	}
	for _, rel := range rels {
		src, err := openOwned(dir, rel)
		if err != nil {
			return fmt.Errorf("media: publish %s: %w", id, err)
		}
		err = d.place(vdir, rel, src)
		src.Close()
		if err != nil {
			return gone(err)
		}
	}
	return nil
}

// place copies r to vdir/rel through a temporary file renamed over it. The
// directories on the way are made one by one (never MkdirAll): a video
// directory moved away by Remove is not made again.
func (d *Dir) place(vdir, rel string, r io.Reader) error {
	parts := strings.Split(rel, "/")
	p := vdir
	for _, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	tmp, err := os.CreateTemp(p, ".publish-*")
	if err != nil {
		return err
	}
	_, err = io.Copy(tmp, r)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(p, parts[len(parts)-1]))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// replace moves src (a work directory's output) to dst. A directory that
// is already there (hls/, published early) is merged into, file by file,
// each renamed over the one before, playlists after the segments they list
// and the master last; then what the new tree lacks is removed. So a
// player reading a video published early never meets a missing playlist.
// Anything else replaces dst whole.
func replace(src, dst string) error {
	sfi, serr := os.Lstat(src)
	dfi, derr := os.Lstat(dst)
	if serr != nil || derr != nil || !sfi.IsDir() || !dfi.IsDir() {
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		return os.Rename(src, dst)
	}
	var files []string
	keep := map[string]bool{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		keep[rel] = true
		if d.IsDir() {
			if rel != "." {
				if err := os.Mkdir(filepath.Join(dst, rel), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
					return err
				}
			}
			return nil
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		return err
	}
	rank := func(rel string) int {
		switch {
		case !strings.HasSuffix(rel, ".m3u8"):
			return 0
		case strings.ContainsRune(rel, filepath.Separator):
			return 1
		}
		return 2
	}
	slices.SortStableFunc(files, func(a, b string) int { return rank(a) - rank(b) })
	for _, rel := range files {
		if err := os.Rename(filepath.Join(src, rel), filepath.Join(dst, rel)); err != nil {
			return err
		}
	}
	// What the early publishing left that the final outputs do not hold.
	var stale []string
	err = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dst, p)
		if err != nil {
			return err
		}
		if !keep[rel] {
			stale = append(stale, p)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range stale {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}

// PublishFiles stores the files rels (slash-separated, under hls/) of dir,
// a work directory ffmpeg may still be writing, as objects of video id,
// replacing those stored before, and lists them in the video's index. The
// checks are Dir.PublishFiles'. It fails with NotFound, leaving nothing
// behind, if the video's original is gone (deleted), before or while it
// stores.
func (b *Bucket) PublishFiles(ctx context.Context, id, dir string, rels []string) error {
	defer b.stats.forget(id)
	if err := checkID(id); err != nil {
		return err
	}
	for _, rel := range rels {
		if err := checkEarly(rel); err != nil {
			return fmt.Errorf("media: publish %s: %w", id, err)
		}
	}
	ix, err := b.liveIndex(ctx, id)
	if err != nil {
		return err
	}
	var stored []string
	for _, rel := range rels {
		err := func() error {
			f, err := openOwned(dir, rel)
			if err != nil {
				return err
			}
			defer f.Close()
			stored = append(stored, rel)
			_, err = b.obj.Put(ctx, name(id, rel), f)
			return err
		}()
		if err != nil {
			b.drop(ctx, id, stored, ix.Outputs)
			return fmt.Errorf("media: publish %s: %w", id, err)
		}
	}
	listed := ix.Outputs
	for _, rel := range stored {
		if !slices.Contains(ix.Outputs, rel) {
			ix.Outputs = append(ix.Outputs, rel)
		}
	}
	return b.list(ctx, id, ix, stored, listed, len(ix.Outputs) != len(listed))
}

// put stores f as object rel of id, unless listed (published before, e.g.
// early) and the stored object holds the same bytes already: Publish then
// stores again only what changed since the early publishing (playlists),
// not every segment.
func (b *Bucket) put(ctx context.Context, id, rel string, f *os.File, listed bool) error {
	if listed {
		if info, err := b.obj.Stat(ctx, name(id, rel)); err == nil {
			h := sha256.New()
			if n, err := io.Copy(h, f); err == nil && n == info.Size &&
				strings.TrimRight(strings.TrimPrefix(info.Digest, "SHA-256="), "=") == base64.RawURLEncoding.EncodeToString(h.Sum(nil)) {
				return nil
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
		}
	}
	_, err := b.obj.Put(ctx, name(id, rel), f)
	return err
}
