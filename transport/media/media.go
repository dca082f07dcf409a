package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kino-video/kino/domain"
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
	AnimatedName        = "preview.webp" // a few seconds as an animated WebP, for hover previews
)

// Directory modes; see the package comment.
const (
	modePassable os.FileMode = 0o711
	modePrivate  os.FileMode = 0o700
)

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

// OriginalName is the file name of a stored original with extension ext.
func OriginalName(ext string) string { return "original" + ext }

// InputName is the name of the original inside an attempt's work directory.
func InputName(ext string) string { return "input" + ext }

// Owner is the user an attempt's work directory is given to; nil keeps
// kino's.
type Owner struct{ UID, GID int }

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
	return writeNew(dst, in)
}

// writeNew writes r into dst, a file that must not exist yet (0600).
func writeNew(dst string, r io.Reader) error {
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// CopyVideos copies the video directories of a Dir's root src (never its
// uploads in flight, work directories, tus uploads or cache) into dst,
// each file a hard link where the file system allows (LinkOrCopy): kino
// replaces a published file by a rename, never in place, so a link keeps
// the bytes of the moment. Links and special files are skipped, never
// followed. It returns how many video directories it copied (kino backup,
// kino restore).
func CopyVideos(src, dst string) (int, error) {
	entries, err := os.ReadDir(src)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dst, modePassable); err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || checkID(e.Name()) != nil {
			continue
		}
		err := filepath.WalkDir(filepath.Join(src, e.Name()), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(src, p)
			if err != nil {
				return err
			}
			switch target := filepath.Join(dst, rel); {
			case d.IsDir():
				return os.MkdirAll(target, modePrivate)
			case d.Type().IsRegular():
				return LinkOrCopy(p, target)
			}
			return nil
		})
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
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
var Outputs = []string{HLSDir, ThumbnailName, PreviewName, StoryboardImageName, StoryboardVTTName, DownloadName, AnimatedName}

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

// absent reports whether nothing, not even a dangling link, is at p.
func absent(p string) bool {
	_, err := os.Lstat(p)
	return errors.Is(err, fs.ErrNotExist)
}
