package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/objects"
	"github.com/kino-video/kino/transport/httpapi"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/transcoder"
)

// Media backends (--media).
const (
	mediaDir  = "dir"  // <data>/media on the local disk
	mediaNATS = "nats" // the JetStream object store bucket KINO_MEDIA
)

// mediaStore is the media store as kino serve and kino worker use it.
type mediaStore interface {
	httpapi.Media
	transcoder.Media
	Sweep(ctx context.Context, live func(id string) (bool, error)) ([]string, error)
	Fetch(ctx context.Context, id, ext, dst string) error
}

var (
	_ mediaStore = (*media.Dir)(nil)
	_ mediaStore = (*media.Bucket)(nil)
)

// mediaCacheFlag adds --media-cache-mb to kino serve.
func mediaCacheFlag(fs *pflag.FlagSet, p *int) {
	fs.IntVar(p, "media-cache-mb", envInt("KINO_MEDIA_CACHE_MB", 1024), "with --media nats: MiB of local copies (under <data>/media/.cache) of the objects /cdn serves, so a segment read again does not go through NATS; 0 keeps none (env KINO_MEDIA_CACHE_MB)")
}

func mediaFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "media", env("KINO_MEDIA", mediaDir), `where media is kept: "dir" (<data>/media; every API node and worker must share it) or "nats" (the JetStream object store, replicated like the streams; <data>/media then holds only uploads in flight and transcode scratch) (env KINO_MEDIA)`)
}

// openMedia opens the media backend kind; data/media is its local
// directory (all of it with dir, scratch only with nats, and cacheMB MiB of
// copies of the objects /cdn serves).
func openMedia(ctx context.Context, kind string, store *eventstore.Store, data string, cacheMB int) (mediaStore, error) {
	local := filepath.Join(data, "media")
	switch kind {
	case mediaDir, "":
		return media.OpenDir(local)
	case mediaNATS:
		obj, err := objects.Open(ctx, store)
		if err != nil {
			return nil, err
		}
		return media.OpenBucket(obj, local, int64(cacheMB)<<20)
	}
	return nil, fmt.Errorf("--media %q: want %q or %q", kind, mediaDir, mediaNATS)
}
