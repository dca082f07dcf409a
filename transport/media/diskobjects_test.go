package media_test

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

	"github.com/kino-video/kino/transport/media"
)

// diskObjects is an object store in a directory, one file per object
// (named by the base64url of the object's name), replaced by a rename.
// It is the second media.ObjectStore, beside the JetStream bucket: a
// Bucket on it runs the conformance suite unchanged, so the seam holds no
// NATS. It has no Open: Bucket reads it through Gets.
type diskObjects struct{ dir string }

var _ media.ObjectStore = diskObjects{}

func newDiskObjects(dir string) (diskObjects, error) {
	d := diskObjects{dir: dir}
	for _, sub := range []string{"objects", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return d, err
		}
	}
	return d, nil
}

func (d diskObjects) path(name string) string {
	return filepath.Join(d.dir, "objects", base64.RawURLEncoding.EncodeToString([]byte(name)))
}

// Put describes what it wrote, not what is there after the rename (a
// Delete may come between).
func (d diskObjects) Put(_ context.Context, name string, r io.Reader) (media.ObjectInfo, error) {
	tmp, err := os.CreateTemp(filepath.Join(d.dir, "tmp"), "put-*")
	if err != nil {
		return media.ObjectInfo{}, err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(tmp, h), r)
	var fi fs.FileInfo
	if err == nil {
		fi, err = tmp.Stat()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), d.path(name))
	}
	if err != nil {
		return media.ObjectInfo{}, fmt.Errorf("put %s: %w", name, err)
	}
	return media.ObjectInfo{Name: name, Size: fi.Size(), ModTime: fi.ModTime(), Digest: digest(h.Sum(nil))}, nil
}

// Get describes the file it opened, so the bytes and the description are
// of the same object even while a Put replaces it.
func (d diskObjects) Get(_ context.Context, name string, offset int64) (io.ReadCloser, media.ObjectInfo, error) {
	f, err := os.Open(d.path(name))
	if err != nil {
		return nil, media.ObjectInfo{}, fmt.Errorf("get %s: %w", name, err)
	}
	info, err := describe(name, f)
	if err == nil {
		_, err = f.Seek(offset, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, media.ObjectInfo{}, fmt.Errorf("get %s: %w", name, err)
	}
	return f, info, nil
}

func (d diskObjects) Stat(ctx context.Context, name string) (media.ObjectInfo, error) {
	r, info, err := d.Get(ctx, name, 0)
	if err != nil {
		return info, err
	}
	return info, r.Close()
}

func (d diskObjects) List(ctx context.Context) ([]media.ObjectInfo, error) {
	entries, err := os.ReadDir(filepath.Join(d.dir, "objects"))
	if err != nil {
		return nil, err
	}
	var all []media.ObjectInfo
	for _, e := range entries {
		name, err := base64.RawURLEncoding.DecodeString(e.Name())
		if err != nil {
			return nil, fmt.Errorf("list: %s: %w", e.Name(), err)
		}
		info, err := d.Stat(ctx, string(name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since
		}
		if err != nil {
			return nil, err
		}
		all = append(all, info)
	}
	return all, nil
}

func (d diskObjects) Delete(_ context.Context, name string) error {
	if err := os.Remove(d.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}

func (d diskObjects) Ready(context.Context) error {
	_, err := os.Stat(filepath.Join(d.dir, "objects"))
	return err
}

// describe reads f whole for its digest, as the JetStream bucket keeps it.
func describe(name string, f *os.File) (media.ObjectInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return media.ObjectInfo{}, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return media.ObjectInfo{}, err
	}
	return media.ObjectInfo{Name: name, Size: fi.Size(), ModTime: fi.ModTime(), Digest: digest(h.Sum(nil))}, nil
}

func digest(sum []byte) string { return "SHA-256=" + base64.URLEncoding.EncodeToString(sum) }
