package media

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// Ready reports whether the directory can take files now: it exists and a
// file can be created (and removed) where uploads land.
func (d *Dir) Ready(context.Context) error {
	f, err := os.CreateTemp(filepath.Join(d.root, incoming), "ready-*.probe")
	if err != nil {
		return fmt.Errorf("media: not writable: %w", err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("media: not writable: %w", err)
	}
	return nil
}

// Ready reports whether the object store can take and serve media now:
// its bucket answers, and the local directory where uploads land and
// transcodes run is writable.
func (b *Bucket) Ready(ctx context.Context) error {
	if err := b.obj.Ready(ctx); err != nil {
		return fmt.Errorf("media: %w", err)
	}
	return b.local.Ready(ctx)
}
