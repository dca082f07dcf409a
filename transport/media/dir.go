package media

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kino-video/kino/domain"
)

// incoming holds uploads in flight; it is emptied at start. work holds
// transcoder outputs until they are complete.
const (
	incoming = ".incoming"
	work     = ".work"
)

// Dir keeps media in a local directory (kino --media dir,
// <data>/media): a video's files lie under <root>/<videoId>/, uploads in
// flight under .incoming, transcode attempts under .work.
type Dir struct {
	root    string
	beneath *beneath // opens served files under root in one call, where the kernel can
}

// OpenDir creates root (and its incoming and work directories) if needed and
// sets the modes of root, of those and of every video directory (older
// kinos made them 0755).
func OpenDir(root string) (*Dir, error) {
	for dir, mode := range map[string]os.FileMode{root: modePassable, filepath.Join(root, incoming): modePrivate, filepath.Join(root, work): modePassable} {
		if err := os.MkdirAll(dir, mode); err != nil {
			return nil, fmt.Errorf("open media store: %w", err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			return nil, fmt.Errorf("open media store: %w", err)
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("open media store: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || checkID(e.Name()) != nil {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().Perm() != modePrivate {
			if err := os.Chmod(filepath.Join(root, e.Name()), modePrivate); err != nil {
				return nil, fmt.Errorf("open media store: %w", err)
			}
		}
	}
	return &Dir{root: root, beneath: newBeneath(root)}, nil
}

// Root is the directory served as {cdn_url}.
func (d *Dir) Root() string { return d.root }

// WorkRoot is the directory holding transcode attempts' work directories.
func (d *Dir) WorkRoot() string { return filepath.Join(d.root, work) }

// Dir is the directory of one video's files.
func (d *Dir) Dir(id string) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	return filepath.Join(d.root, id), nil
}

// Incoming creates a temporary file for an upload in flight. The caller
// either Commits it or removes it.
func (d *Dir) Incoming() (*os.File, error) {
	f, err := os.CreateTemp(filepath.Join(d.root, incoming), "upload-*.part")
	if err != nil {
		return nil, fmt.Errorf("media: create upload file: %w", err)
	}
	return f, nil
}

// Commit moves a finished upload (a file from Incoming) to
// <root>/<id>/original<ext>. ext comes from the supported-extension list,
// never from a raw client string. When it fails, the file stays at
// tmpPath, the caller's.
func (d *Dir) Commit(_ context.Context, tmpPath, id, ext string) error {
	dir, err := d.Dir(id)
	if err != nil {
		return err
	}
	if err := checkExt(ext); err != nil {
		return err
	}
	if err := os.Mkdir(dir, modePrivate); err != nil {
		return fmt.Errorf("media: commit %s: %w", id, err)
	}
	dst := filepath.Join(dir, OriginalName(ext))
	if err := os.Rename(tmpPath, dst); err != nil {
		_ = os.Remove(dir)
		return fmt.Errorf("media: commit %s: %w", id, err)
	}
	return nil
}

// Open opens rel (slash-separated, e.g. hls/720p/index.m3u8) of video id
// for reading. Every step on the way must be a real directory and the last
// a plain file, none of them a symlink: Publish never leaves a link, so one
// found here was planted, and following it could serve any file kino can
// read. On Linux one openat2 resolves the whole path with that rule
// (beneath); without it, each step is checked with Lstat (openPlain).
// Anything missing is a NotFound wrapping fs.ErrNotExist.
func (d *Dir) Open(_ context.Context, id, rel string) (*File, error) {
	dir, err := d.Dir(id)
	if err != nil {
		return nil, err
	}
	if rel == "" || strings.HasPrefix(rel, "/") || strings.Contains(rel, "..") {
		return nil, domain.Wrap("media", domain.NotFound, fs.ErrNotExist, "file not found")
	}
	f, fi, err := d.beneath.open(id + "/" + rel)
	if errors.Is(err, errNoOpenat2) {
		f, fi, err = openPlain(dir, rel)
		for try := 0; errors.Is(err, errSwapped) && try < 3; try++ { // replaced as it was opened (PublishFiles, Publish)
			f, fi, err = openPlain(dir, rel)
		}
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, domain.Wrap("media", domain.NotFound, err, "file not found")
		}
		return nil, fmt.Errorf("media: open %s/%s: %w", id, rel, err)
	}
	etag := `W/"` + strconv.FormatInt(fi.Size(), 36) + "-" + strconv.FormatInt(fi.ModTime().UnixNano(), 36) + `"`
	return &File{ReadSeekCloser: f, Size: fi.Size(), ModTime: fi.ModTime(), ETag: etag}, nil
}

// errSwapped is a file replaced between its check and its opening.
var errSwapped = fmt.Errorf("replaced while opened: %w", fs.ErrNotExist)

// openPlain is Open's walk where the kernel cannot resolve the path in
// one call (beneath): every step is checked with Lstat, then the file is
// opened and checked to be the one looked at.
func openPlain(dir, rel string) (*os.File, fs.FileInfo, error) {
	p := dir
	var last fs.FileInfo
	for _, part := range append([]string{""}, strings.Split(rel, "/")...) {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, nil, fs.ErrNotExist
		}
		last = fi
	}
	if !last.Mode().IsRegular() {
		return nil, nil, fs.ErrNotExist
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil || !os.SameFile(fi, last) { // swapped since the check
		f.Close()
		if err == nil {
			err = errSwapped
		}
		return nil, nil, err
	}
	return f, fi, nil
}

// Original is the path of a video's stored original.
func (d *Dir) Original(id, ext string) (string, error) {
	dir, err := d.Dir(id)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, OriginalName(ext)), nil
}

// WorkDir creates the directory of one transcode attempt: mode 0700, owned
// by owner when given, holding only the original as InputName(ext) (a hard
// link, or a copy when the link fails, e.g. across file systems). ffmpeg
// runs in it, reads its input there and writes its outputs there. The
// caller Publishes it or removes it.
//
// With an owner the input is made readable by all (mode 0644): with a hard
// link that is the original's mode too, which stays private in its 0700
// video directory.
func (d *Dir) WorkDir(ctx context.Context, id, ext string, owner *Owner) (string, error) {
	return workDir(ctx, d.WorkRoot(), d, id, ext, owner)
}

// Fetch makes dst (a new file) a hard link to, or a copy of, the original
// of id. A missing original is a NotFound wrapping fs.ErrNotExist.
func (d *Dir) Fetch(_ context.Context, id, ext, dst string) error {
	if err := checkExt(ext); err != nil {
		return err
	}
	src, err := d.Original(id, ext)
	if err != nil {
		return err
	}
	if err := LinkOrCopy(src, dst); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return domain.Wrap("media", domain.NotFound, err, "original not found")
		}
		return fmt.Errorf("media: fetch %s: %w", id, err)
	}
	return nil
}

// Publish moves a finished work directory's outputs (hls/, thumbnail.jpg,
// preview.mp4) into <root>/<id>/, replacing any left by an earlier attempt
// or published early (PublishFiles; see replace), and removes the work
// directory. It fails if the video's directory is gone
// (the video was deleted).
func (d *Dir) Publish(_ context.Context, id, workDir string) error {
	dir, err := d.Dir(id)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return domain.Wrap("media", domain.NotFound, err, "video's media deleted")
		}
		return fmt.Errorf("media: publish %s: %w", id, err)
	}
	if err := reclaim(workDir, Outputs...); err != nil {
		return fmt.Errorf("media: publish %s: %w", id, err)
	}
	for _, name := range Outputs {
		src, dst := filepath.Join(workDir, name), filepath.Join(dir, name)
		if absent(src) {
			if err := os.RemoveAll(dst); err != nil {
				return fmt.Errorf("media: publish %s: %w", id, err)
			}
			continue
		}
		if err := replace(src, dst); err != nil {
			if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
				return domain.Wrap("media", domain.NotFound, err, "video's media deleted")
			}
			return fmt.Errorf("media: publish %s: %w", id, err)
		}
	}
	return os.RemoveAll(workDir)
}

// RemoveOutputs deletes a video's processed outputs, keeping its original.
func (d *Dir) RemoveOutputs(_ context.Context, id string) error {
	dir, err := d.Dir(id)
	if err != nil {
		return err
	}
	for _, name := range Outputs {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("media: remove outputs of %s: %w", id, err)
		}
	}
	return nil
}

// Remove deletes every file of a video. Removing what is not there is fine.
func (d *Dir) Remove(_ context.Context, id string) error {
	dir, err := d.Dir(id)
	if err != nil {
		return err
	}
	// Moved aside first, in one step: a Publish under way either moved
	// its outputs in before (they go with the rest) or finds the
	// directory gone and fails. Removing in place could race its renames.
	tomb, err := os.MkdirTemp(filepath.Join(d.root, incoming), "deleted-"+id+"-*")
	if err != nil {
		return fmt.Errorf("media: remove %s: %w", id, err)
	}
	defer os.RemoveAll(tomb)
	if err := os.Rename(dir, filepath.Join(tomb, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("media: remove %s: %w", id, err)
	}
	// Emptying the tomb has met ENOTEMPTY, rarely (once in thousands of
	// publish/remove races, under load), as if a racing Publish's entry
	// landed in it after RemoveAll read it: it is emptied again then.
	for try := 1; ; try++ {
		err := os.RemoveAll(tomb)
		if err == nil {
			return nil
		}
		if try == 5 {
			return fmt.Errorf("media: remove %s: %w", id, err)
		}
		time.Sleep(time.Duration(try) * 10 * time.Millisecond)
	}
}

// Sweep removes leftovers of interrupted work: every upload in flight, and
// every video directory for which live reports false (a crash between
// storing a file and recording its event, or between recording a deletion
// and removing the files). Run it only when no upload is in flight and the
// read models are caught up.
func (d *Dir) Sweep(_ context.Context, live func(id string) (bool, error)) (removed []string, err error) {
	removed, err = d.sweepScratch()
	if err != nil {
		return removed, err
	}
	entries, err := os.ReadDir(d.root)
	if err != nil {
		return removed, fmt.Errorf("media: sweep: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || checkID(e.Name()) != nil {
			continue
		}
		ok, err := live(e.Name())
		if err != nil {
			return removed, err
		}
		if ok {
			continue
		}
		if err := os.RemoveAll(filepath.Join(d.root, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("media: sweep: %w", err)
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}

// sweepScratch removes every upload in flight.
func (d *Dir) sweepScratch() (removed []string, err error) {
	in := filepath.Join(d.root, incoming)
	entries, err := os.ReadDir(in)
	if err != nil {
		return nil, fmt.Errorf("media: sweep: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(in, e.Name())); err != nil {
			return removed, fmt.Errorf("media: sweep: %w", err)
		}
		removed = append(removed, filepath.Join(incoming, e.Name()))
	}
	// Work directories (.work) are the transcoder's: it removes those of
	// dead attempts itself, by their locks (transport/transcoder/scratch.go).
	return removed, nil
}
