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

// Source is a media store a library is copied from (kino media migrate):
// Dir and Bucket.
type Source interface {
	// Videos lists the ids of the videos whose media it holds.
	Videos(ctx context.Context) ([]string, error)
	// Files lists a video's files, its original first (none when it has
	// none).
	Files(ctx context.Context, id string) ([]string, error)
	Open(ctx context.Context, id, rel string) (*File, error)
}

var (
	_ Source = (*Dir)(nil)
	_ Source = (*Bucket)(nil)
)

// Videos lists the video directories.
func (d *Dir) Videos(context.Context) ([]string, error) {
	entries, err := os.ReadDir(d.root)
	if err != nil {
		return nil, fmt.Errorf("media: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && checkID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// Files lists id's original and the regular files of its outputs.
func (d *Dir) Files(_ context.Context, id string) ([]string, error) {
	dir, err := d.Dir(id)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, domain.Wrap("media", domain.NotFound, err, "video's media not found")
	}
	if err != nil {
		return nil, fmt.Errorf("media: %w", err)
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), "original.") && checkExt(strings.TrimPrefix(e.Name(), "original")) == nil {
			files = append(files, e.Name())
			break
		}
	}
	for _, top := range Outputs {
		err := filepath.WalkDir(filepath.Join(dir, top), func(p string, e fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil || !e.Type().IsRegular() {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("media: files of %s: %w", id, err)
		}
	}
	return files, nil
}

// Videos lists the videos that have an index in the bucket.
func (b *Bucket) Videos(ctx context.Context) ([]string, error) {
	all, err := b.obj.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("media: %w", err)
	}
	var ids []string
	for _, oi := range all {
		if id, rel, _ := strings.Cut(oi.Name, "/"); rel == indexName && checkID(id) == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Files lists what id's index holds.
func (b *Bucket) Files(ctx context.Context, id string) ([]string, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	ix, ok, err := b.readIndex(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, domain.E("media", domain.NotFound, "video's media not found")
	}
	var files []string
	if ix.Original != "" {
		files = append(files, ix.Original)
	}
	return append(files, ix.Outputs...), nil
}

// Imported says what Import did with a video's files.
type Imported struct {
	Copied, Verified int   // files stored now; files found stored already
	Bytes            int64 // of the files copied
}

// Import copies video id's files from src into the bucket, each checked
// by its SHA-256: a file already stored with the same digest is left
// alone, so an interrupted import resumes where it stopped and a second
// one copies only what changed. The index, written first (as Commit
// does), lists every file, so a delete finds them all. A video src no
// longer has (deleted meanwhile) is a NotFound.
func (b *Bucket) Import(ctx context.Context, src Source, id string) (Imported, error) {
	defer b.stats.forget(id)
	var done Imported
	if err := checkID(id); err != nil {
		return done, err
	}
	files, err := src.Files(ctx, id)
	if err != nil {
		return done, err
	}
	var ix index
	for _, rel := range files {
		if err := checkRel(rel); err != nil {
			return done, fmt.Errorf("media: import %s: file %q: %w", id, rel, err)
		}
		if ix.Original == "" && len(ix.Outputs) == 0 && strings.HasPrefix(rel, "original.") && !strings.Contains(rel, "/") {
			ix.Original = rel
		} else {
			ix.Outputs = append(ix.Outputs, rel)
		}
	}
	if old, ok, err := b.readIndex(ctx, id); err != nil {
		return done, err
	} else if !ok || old.Original != ix.Original || !slices.Equal(old.Outputs, ix.Outputs) {
		if err := b.writeIndex(ctx, id, ix); err != nil {
			return done, fmt.Errorf("media: import %s: %w", id, err)
		}
	}
	for _, rel := range files {
		copied, n, err := b.importFile(ctx, src, id, rel)
		if err != nil {
			return done, err
		}
		if copied {
			done.Copied++
			done.Bytes += n
		} else {
			done.Verified++
		}
	}
	return done, nil
}

// importFile stores rel of id from src unless the bucket holds the same
// bytes, then checks that what is stored has the source's size and
// digest.
func (b *Bucket) importFile(ctx context.Context, src Source, id, rel string) (copied bool, n int64, err error) {
	f, err := src.Open(ctx, id, rel)
	if err != nil {
		return false, 0, fmt.Errorf("media: import %s/%s: %w", id, rel, err)
	}
	defer f.Close()
	h := sha256.New()
	if n, err = io.Copy(h, f); err == nil && n != f.Size {
		err = fmt.Errorf("read %d bytes of %d", n, f.Size)
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		return false, 0, fmt.Errorf("media: import %s/%s: %w", id, rel, err)
	}
	want := "SHA-256=" + base64.URLEncoding.EncodeToString(h.Sum(nil))
	if info, err := b.obj.Stat(ctx, name(id, rel)); err == nil && info.Size == n && sameDigest(info.Digest, want) {
		return false, n, nil
	}
	if _, err := b.obj.Put(ctx, name(id, rel), f); err != nil {
		return false, 0, fmt.Errorf("media: import %s/%s: %w", id, rel, err)
	}
	info, err := b.obj.Stat(ctx, name(id, rel))
	if err != nil {
		return false, 0, fmt.Errorf("media: import %s/%s: %w", id, rel, err)
	}
	if info.Size != n || (info.Digest != "" && !sameDigest(info.Digest, want)) {
		return false, 0, fmt.Errorf("media: import %s/%s: stored %d bytes of digest %s, want %d bytes of %s (the source changed while read?)", id, rel, info.Size, info.Digest, n, want)
	}
	return true, n, nil
}

// sameDigest compares two "SHA-256=" digests, with or without base64
// padding.
func sameDigest(a, b string) bool {
	return a != "" && strings.TrimRight(a, "=") == strings.TrimRight(b, "=")
}
