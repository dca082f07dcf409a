// Package media stores video files: originals once accepted, and the
// processed outputs (hls/, thumbnail.jpg, preview.mp4) of each video. Two
// backends hold them, with the same methods (each user declares the ones
// it needs, and mediatest checks both alike):
//
//   - Dir, a local directory: everything under <root>/<videoId>/;
//   - Bucket, the JetStream object store (eventstore.Bucket): objects
//     named <videoId>/original<ext>, <videoId>/hls/..., with a local
//     directory for uploads in flight and transcode attempts.
//
// Video ids are ULIDs, checked before any path or object name is built, so
// no client input ever becomes a path.
//
// Modes keep one video's files from another's ffmpeg: the root and .work
// are 0711 (passable, not listable), every video directory and .incoming
// 0700, owned by kino's user. An ffmpeg running as another user can reach
// only its own attempt directory, whose name it cannot list.
package media

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// Output names under <root>/<id>/.
const (
	HLSDir        = "hls"
	MasterName    = "master.m3u8"
	ThumbnailName = "thumbnail.jpg"
	PreviewName   = "preview.mp4"
	// Optional outputs: a video may have none of them.
	StoryboardImageName = "storyboard.jpg"
	StoryboardVTTName   = "storyboard.vtt"
	DownloadName        = "download.mp4"
)

// Dir is a media directory.
type Dir struct {
	root string
}

// Directory modes; see the package comment.
const (
	modePassable os.FileMode = 0o711
	modePrivate  os.FileMode = 0o700
)

// Open creates root (and its incoming and work directories) if needed and
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
	return &Dir{root: root}, nil
}

// Root is the directory served as {cdn_url}.
func (s *Dir) Root() string { return s.root }

// WorkRoot is the directory holding transcode attempts' work directories.
func (s *Dir) WorkRoot() string { return filepath.Join(s.root, work) }

// File is one stored file opened for reading at any offset.
type File struct {
	io.ReadSeekCloser
	Size    int64
	ModTime time.Time
	ETag    string // a quoted entity tag; "" when none
}

func checkID(id string) error {
	if !domain.ValidID(id) {
		return domain.E("media", domain.Invalid, "invalid video id %q", id)
	}
	return nil
}

func checkExt(ext string) error {
	if !strings.HasPrefix(ext, ".") || strings.ContainsAny(ext, `/\`) || len(ext) > 16 {
		return domain.E("media", domain.Invalid, "bad extension %q", ext)
	}
	return nil
}

// Dir is the directory of one video's files.
func (s *Dir) Dir(id string) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	return filepath.Join(s.root, id), nil
}

// Incoming creates a temporary file for an upload in flight. The caller
// either Commits it or removes it.
func (s *Dir) Incoming() (*os.File, error) {
	f, err := os.CreateTemp(filepath.Join(s.root, incoming), "upload-*.part")
	if err != nil {
		return nil, fmt.Errorf("media: create upload file: %w", err)
	}
	return f, nil
}

// OriginalName is the file name of a stored original with extension ext.
func OriginalName(ext string) string { return "original" + ext }

// Commit moves a finished upload (a file from Incoming) to
// <root>/<id>/original<ext>. ext comes from the supported-extension list,
// never from a raw client string. When it fails, the file stays at
// tmpPath, the caller's.
func (s *Dir) Commit(_ context.Context, tmpPath, id, ext string) error {
	dir, err := s.Dir(id)
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
// read. Anything missing is a NotFound wrapping fs.ErrNotExist.
func (s *Dir) Open(_ context.Context, id, rel string) (*File, error) {
	dir, err := s.Dir(id)
	if err != nil {
		return nil, err
	}
	f, fi, err := openPlain(dir, rel)
	for try := 0; errors.Is(err, errSwapped) && try < 3; try++ { // replaced as it was opened (PublishFiles, Publish)
		f, fi, err = openPlain(dir, rel)
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

func openPlain(dir, rel string) (*os.File, fs.FileInfo, error) {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.Contains(rel, "..") {
		return nil, nil, fs.ErrNotExist
	}
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
func (s *Dir) Original(id, ext string) (string, error) {
	dir, err := s.Dir(id)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, OriginalName(ext)), nil
}

// InputName is the name of the original inside an attempt's work directory.
func InputName(ext string) string { return "input" + ext }

// Owner is the user an attempt's work directory is given to; nil keeps
// kino's.
type Owner struct{ UID, GID int }

// WorkDir creates the directory of one transcode attempt: mode 0700, owned
// by owner when given, holding only the original as InputName(ext) (a hard
// link, or a copy when the link fails, e.g. across file systems). ffmpeg
// runs in it, reads its input there and writes its outputs there. The
// caller Publishes it or removes it.
//
// With an owner the input is made readable by all (mode 0644): with a hard
// link that is the original's mode too, which stays private in its 0700
// video directory.
func (s *Dir) WorkDir(ctx context.Context, id, ext string, owner *Owner) (string, error) {
	return workDir(ctx, s.WorkRoot(), s, id, ext, owner)
}

// workDir makes a work directory under root holding f's original of id.
func workDir(ctx context.Context, root string, f interface {
	Fetch(ctx context.Context, id, ext, dst string) error
}, id, ext string, owner *Owner) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(root, id+"-*")
	if err != nil {
		return "", fmt.Errorf("media: work dir for %s: %w", id, err)
	}
	fail := func(err error) (string, error) {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("media: work dir for %s: %w", id, err)
	}
	in := filepath.Join(dir, InputName(ext))
	if err := f.Fetch(ctx, id, ext, in); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	if owner != nil {
		if err := os.Chmod(in, 0o644); err != nil {
			return fail(err)
		}
		if err := os.Chown(dir, owner.UID, owner.GID); err != nil {
			return fail(err)
		}
	}
	return dir, nil
}

// Fetch makes dst (a new file) a hard link to, or a copy of, the original
// of id. A missing original is a NotFound wrapping fs.ErrNotExist.
func (s *Dir) Fetch(_ context.Context, id, ext, dst string) error {
	if err := checkExt(ext); err != nil {
		return err
	}
	src, err := s.Original(id, ext)
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

// LinkOrCopy makes dst, a new file, a hard link to src, or a copy of it
// where the file system has no hard links.
func LinkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return copyFile(src, dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Size is the total size in bytes of the regular files under dir.
func Size(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		total += fi.Size()
		return nil
	})
	return total, err
}

// Outputs are the names Publish takes from a work directory; a name the
// work directory lacks is not published (and an earlier attempt's is
// removed): the transcoder checks what must be there.
var Outputs = []string{HLSDir, ThumbnailName, PreviewName, StoryboardImageName, StoryboardVTTName, DownloadName}

// Publish moves a finished work directory's outputs (hls/, thumbnail.jpg,
// preview.mp4) into <root>/<id>/, replacing any left by an earlier attempt
// or published early (PublishFiles; see replace), and removes the work
// directory. It fails if the video's directory is gone
// (the video was deleted).
func (s *Dir) Publish(_ context.Context, id, workDir string) error {
	dir, err := s.Dir(id)
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

// reclaim makes a finished work directory kino's own again and checks that
// it holds nothing but directories and plain files with one link each.
// ffmpeg may have run as another user, and that user (a compromised
// ffmpeg, or any other process of it) could have left a symlink, or a hard
// link, to a file it cannot read itself; kino, publishing as root, would
// then serve that file on /cdn. The directories are taken back first (owned
// by kino, not writable by others), so nothing can be added while the
// entries are checked; then every entry is checked with Lstat, and plain
// files are given to kino too.
func reclaim(workDir string, outputs ...string) error {
	uid, gid, root := os.Getuid(), os.Getgid(), os.Geteuid() == 0
	take := func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if root {
			if err := os.Lchown(p, uid, gid); err != nil {
				return err
			}
		}
		return os.Chmod(p, 0o755)
	}
	check := func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			return nil
		case !fi.Mode().IsRegular():
			return fmt.Errorf("outputs: %s is not a plain file (%s): refused", filepath.Base(p), fi.Mode().Type())
		case links(fi) != 1:
			return fmt.Errorf("outputs: %s has %d links: refused", filepath.Base(p), links(fi))
		}
		if root {
			if err := os.Lchown(p, uid, gid); err != nil {
				return err
			}
		}
		return os.Chmod(p, 0o644)
	}
	// The work directory itself first: no new entry at its top either.
	if root {
		if err := os.Lchown(workDir, uid, gid); err != nil {
			return fmt.Errorf("take back outputs: %w", err)
		}
	}
	if err := os.Chmod(workDir, 0o700); err != nil {
		return fmt.Errorf("take back outputs: %w", err)
	}
	for _, walk := range []fs.WalkDirFunc{take, check} {
		for _, name := range outputs {
			if absent(filepath.Join(workDir, name)) {
				continue // nothing can appear: the work directory is kino's now
			}
			if err := filepath.WalkDir(filepath.Join(workDir, name), walk); err != nil {
				return fmt.Errorf("check outputs: %w", err)
			}
		}
	}
	return nil
}

// RemoveOutputs deletes a video's processed outputs, keeping its original.
func (s *Dir) RemoveOutputs(_ context.Context, id string) error {
	dir, err := s.Dir(id)
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
func (s *Dir) Remove(_ context.Context, id string) error {
	dir, err := s.Dir(id)
	if err != nil {
		return err
	}
	// Moved aside first, in one step: a Publish under way either moved
	// its outputs in before (they go with the rest) or finds the
	// directory gone and fails. Removing in place could race its renames.
	tomb, err := os.MkdirTemp(filepath.Join(s.root, incoming), "deleted-"+id+"-*")
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
func (s *Dir) Sweep(_ context.Context, live func(id string) (bool, error)) (removed []string, err error) {
	removed, err = s.sweepScratch()
	if err != nil {
		return removed, err
	}
	entries, err := os.ReadDir(s.root)
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
		if err := os.RemoveAll(filepath.Join(s.root, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("media: sweep: %w", err)
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}

// sweepScratch removes every upload in flight.
func (s *Dir) sweepScratch() (removed []string, err error) {
	in := filepath.Join(s.root, incoming)
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

// absent reports whether nothing, not even a dangling link, is at p.
func absent(p string) bool {
	_, err := os.Lstat(p)
	return errors.Is(err, fs.ErrNotExist)
}
