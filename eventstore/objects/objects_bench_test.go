package objects_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/objects"
)

// BenchmarkObjectRead reads a 1.5 MiB object whole, as /cdn reads a
// segment, from an embedded server.
func BenchmarkObjectRead(b *testing.B) {
	ctx := context.Background()
	obj, err := objects.Open(ctx, eventstoretest.Run(b))
	if err != nil {
		b.Fatal(err)
	}
	data := pattern(1536<<10, 'x')
	if _, err := obj.Put(ctx, "v/seg", bytes.NewReader(data)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r, _, err := obj.Open(ctx, "v/seg")
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, r); err != nil || n != int64(len(data)) {
			b.Fatal(n, err)
		}
		r.Close()
	}
}

func BenchmarkObjectReadParallel(b *testing.B) {
	ctx := context.Background()
	obj, err := objects.Open(ctx, eventstoretest.Run(b))
	if err != nil {
		b.Fatal(err)
	}
	data := pattern(1536<<10, 'x')
	if _, err := obj.Put(ctx, "v/seg", bytes.NewReader(data)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, _, err := obj.Open(ctx, "v/seg")
			if err != nil {
				b.Error(err)
				return
			}
			if n, err := io.Copy(io.Discard, r); err != nil || n != int64(len(data)) {
				b.Error(n, err)
				return
			}
			r.Close()
		}
	})
}
