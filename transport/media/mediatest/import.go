package mediatest

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/media"
)

// SourceStore is a backend a library is copied from (media.Dir,
// media.Bucket).
type SourceStore interface {
	Store
	media.Source
}

// Importer is a backend a library is copied into (media.Bucket).
type Importer interface {
	Store
	Import(ctx context.Context, src media.Source, id string) (media.Imported, error)
}

// RunImport checks copying a library from one backend into another (kino
// media migrate): every file arrives, checked; a second pass copies
// nothing; a file that differs is copied again; a video the source lost
// meanwhile is a NotFound; and a delete in the new backend finds every
// file copied.
func RunImport(t *testing.T, openSource func(t *testing.T) SourceStore, openTarget func(t *testing.T) Importer) {
	ctx := context.Background()
	src, dst := openSource(t), openTarget(t)
	original := payload(200 << 10)
	outputs := map[string][]byte{
		"hls/master.m3u8":       []byte("#EXTM3U\n"),
		"hls/240p/index.m3u8":   []byte("#EXTM3U\n#EXT-X-ENDLIST\n"),
		"hls/240p/seg_00000.ts": payload(100 << 10),
	}
	published := commit(t, src, original)
	publish(t, src, published, outputs)
	pending := commit(t, src, payload(1000))
	gone := commit(t, src, payload(10))

	ids, err := src.Videos(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{published, pending, gone} {
		if !slices.Contains(ids, id) {
			t.Fatalf("Videos lists %v, not %s", ids, id)
		}
	}
	files, err := src.Files(ctx, published)
	if err != nil || len(files) != 6 || files[0] != media.OriginalName(".mp4") {
		t.Fatalf("files of a published video: %v %v (want the original first, the 3 HLS files, the thumbnail and the preview)", files, err)
	}

	t.Run("every file arrives, and a second pass copies nothing", func(t *testing.T) {
		for _, id := range []string{published, pending} {
			want, _ := src.Files(ctx, id)
			got, err := dst.Import(ctx, src, id)
			if err != nil || got.Copied != len(want) || got.Verified != 0 || got.Bytes == 0 {
				t.Fatalf("import %s: %+v %v (want %d files copied)", id, got, err, len(want))
			}
			for _, rel := range want {
				if a, b := read(t, src, id, rel), read(t, dst, id, rel); a != b {
					t.Fatalf("%s of %s: %d bytes, want %d", rel, id, len(b), len(a))
				}
			}
			again, err := dst.Import(ctx, src, id)
			if err != nil || again.Copied != 0 || again.Verified != len(want) {
				t.Fatalf("second pass over %s: %+v %v", id, again, err)
			}
		}
		if got := read(t, dst, published, "hls/240p/seg_00000.ts"); got != string(outputs["hls/240p/seg_00000.ts"]) {
			t.Fatal("the segment differs")
		}
	})

	t.Run("a file that differs is copied again", func(t *testing.T) {
		// The new backend holds other outputs (a transcode there), one of
		// the same size.
		publish(t, dst, published, map[string][]byte{"thumbnail.jpg": []byte("JPG")})
		got, err := dst.Import(ctx, src, published)
		if err != nil || got.Copied < 1 {
			t.Fatalf("import: %+v %v", got, err)
		}
		if read(t, dst, published, "thumbnail.jpg") != "jpg" || read(t, dst, published, "hls/master.m3u8") != "#EXTM3U\n" {
			t.Fatal("the new backend does not hold the source's files")
		}
	})

	t.Run("a video the source no longer has is not found", func(t *testing.T) {
		if err := src.Remove(ctx, gone); err != nil {
			t.Fatal(err)
		}
		if _, err := dst.Import(ctx, src, gone); !domain.IsKind(err, domain.NotFound) {
			t.Fatalf("import of a removed video: %v", err)
		}
	})

	t.Run("a delete in the new backend finds every file copied", func(t *testing.T) {
		if err := dst.Remove(ctx, published); err != nil {
			t.Fatal(err)
		}
		for _, rel := range files {
			if f, err := dst.Open(ctx, published, rel); !domain.IsKind(err, domain.NotFound) {
				if f != nil {
					f.Close()
				}
				t.Fatalf("%s after delete: %v", rel, err)
			}
		}
		if !bytes.Equal([]byte(read(t, src, published, "thumbnail.jpg")), []byte("jpg")) {
			t.Fatal("the source changed")
		}
	})
}
