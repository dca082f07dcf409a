package objects_test

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/objects"
)

// Objects are read at any offset, chunk by chunk, whether their chunks
// lie side by side in the stream or between another object's (two Puts at
// once).
func TestObjectReaderSeeksWithInterleavedChunks(t *testing.T) {
	ctx := context.Background()
	obj, err := objects.Open(ctx, eventstoretest.Run(t))
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 128 << 10
	a, b := pattern(5*chunk+100, 'a'), pattern(4*chunk+7, 'b')
	// Both Puts run at once, each fed one chunk at a time in turn, so
	// their chunks alternate in the stream.
	ra, wa := io.Pipe()
	rb, wb := io.Pipe()
	errs := make(chan error, 2)
	go func() { _, err := obj.Put(ctx, "A/x", ra); errs <- err }()
	go func() { _, err := obj.Put(ctx, "B/x", rb); errs <- err }()
	for i := 0; i < max(len(a), len(b)); i += chunk {
		for _, p := range []struct {
			w    *io.PipeWriter
			data []byte
		}{{wa, a}, {wb, b}} {
			if i < len(p.data) {
				if _, err := p.w.Write(p.data[i:min(i+chunk, len(p.data))]); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	wa.Close()
	wb.Close()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Small reads from a small-read writer: still full chunks.
	c := pattern(3*chunk+1, 'c')
	if _, err := obj.Put(ctx, "C/x", io.MultiReader(strings.NewReader(string(c[:10])), bytes.NewReader(c[10:]))); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{"A/x": a, "B/x": b, "C/x": c} {
		r, _, err := obj.Open(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for _, off := range []int64{3 * chunk, 1, chunk - 1, int64(len(want)) - 1, 2*chunk + 5, 0} {
			if _, err := r.Seek(off, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, chunk+10)
			n, err := io.ReadFull(r, buf)
			if err != nil && err != io.ErrUnexpectedEOF {
				t.Fatalf("%s at %d: %v", name, off, err)
			}
			if !bytes.Equal(buf[:n], want[off:min(off+int64(len(buf)), int64(len(want)))]) {
				t.Fatalf("%s at %d: wrong bytes", name, off)
			}
		}
	}
}

// An object whose last chunk went out before another whole object was
// stored, and whose description after it, is read at every chunk: the
// guess of where its chunks lie, taken back from its description, lands
// past all of them (two Puts at once; it once failed as "message not
// found").
func TestObjectReaderFindsChunksFarBeforeTheDescription(t *testing.T) {
	ctx := context.Background()
	obj, err := objects.Open(ctx, eventstoretest.Run(t))
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 128 << 10
	b := pattern(4*chunk, 'b')
	held := &heldReader{r: bytes.NewReader(b), drained: make(chan struct{}), release: make(chan struct{})}
	errs := make(chan error, 1)
	go func() { _, err := obj.Put(ctx, "B/x", held); errs <- err }()
	// Every chunk of B is published (on the same connection, so stored
	// before anything put next) once its Put reads past them.
	<-held.drained
	if _, err := obj.Put(ctx, "A/x", bytes.NewReader(pattern(2*chunk, 'a'))); err != nil {
		t.Fatal(err)
	}
	close(held.release)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	// The stream: B's 4 chunks, A's 2 chunks, A's description, B's.
	for _, off := range []int64{3 * chunk, 2 * chunk, chunk, 0} {
		t.Run(strconv.FormatInt(off/chunk, 10), func(t *testing.T) {
			r, _, err := obj.Open(ctx, "B/x")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if _, err := r.Seek(off, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatalf("B/x from %d: %v", off, err)
			}
			if !bytes.Equal(got, b[off:]) {
				t.Fatalf("B/x from %d: wrong bytes", off)
			}
		})
	}
}

// heldReader gives r's bytes, then holds its io.EOF until release; drained
// is closed when it is first asked past r's end.
type heldReader struct {
	r        io.Reader
	drained  chan struct{}
	release  chan struct{}
	signaled bool
}

func (h *heldReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if err == io.EOF {
		if !h.signaled {
			h.signaled = true
			close(h.drained)
		}
		<-h.release
	}
	return n, err
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i%251)
	}
	return b
}
