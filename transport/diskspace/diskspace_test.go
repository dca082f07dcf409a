package diskspace_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"

	"github.com/kino-video/kino/transport/diskspace"
)

func TestParseReserve(t *testing.T) {
	tests := []struct {
		in   string
		want diskspace.Reserve
		bad  bool
	}{
		{in: "1GiB", want: diskspace.Reserve{Bytes: 1 << 30}},
		{in: "512MiB", want: diskspace.Reserve{Bytes: 512 << 20}},
		{in: "4096", want: diskspace.Reserve{Bytes: 4096}},
		{in: "0", want: diskspace.Reserve{}},
		{in: "5%", want: diskspace.Reserve{Percent: 5}},
		{in: "2.5%", want: diskspace.Reserve{Percent: 2.5}},
		{in: "100%", bad: true},
		{in: "-1GiB", bad: true},
		{in: "lots", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := diskspace.ParseReserve(tt.in)
			if (err != nil) != tt.bad || got != tt.want {
				t.Fatalf("diskspace.ParseReserve(%q) = %+v, %v", tt.in, got, err)
			}
		})
	}
}

// A Writer stops once the guarded file system's free space is inside the
// reserve, from its first write; with no directories there is no
// reserve.
func TestWriterStopsInsideTheReserve(t *testing.T) {
	dir := t.TempDir()
	if room, err := (diskspace.Guard{Dirs: []string{dir}}).Room(); err != nil || room <= 0 {
		t.Skipf("no free space known here: %d, %v", room, err)
	}
	var sink bytes.Buffer
	w := &diskspace.Writer{W: &sink, Guard: diskspace.Guard{Dirs: []string{dir}, Reserve: diskspace.Reserve{Bytes: 1 << 62}, Every: 8 << 20}}
	if _, err := w.Write(make([]byte, 5)); !errors.Is(err, diskspace.ErrNoRoom) {
		t.Fatalf("inside the reserve: %v", err)
	}
	free := &diskspace.Writer{W: &sink, Guard: diskspace.Guard{Every: 1}}
	if _, err := free.Write(make([]byte, 5)); err != nil {
		t.Fatalf("no directories guarded: %v", err)
	}
}

// Claims share the room: a claim that does not fit beside another is
// refused, what a Writer writes comes off its own claim, a released claim
// frees its room, and a Writer without a claim stops where the others'
// claims leave no room while one holding its claim writes on; a request
// claims no more than ClaimWindow of what it announces. The guarded
// directory's real free space is used, with the room set to half of it
// (at most ClaimWindow): the checks keep a quarter of the room as a margin
// for what other processes write meanwhile.
func TestClaimsShareTheRoom(t *testing.T) {
	dir := t.TempDir()
	avail, err := (diskspace.Guard{Dirs: []string{dir}}).Room()
	if err != nil || avail < 16<<20 {
		t.Skipf("not enough free space known here: %d, %v", avail, err)
	}
	if avail > 4*diskspace.ClaimWindow {
		big := diskspace.NewGuard([]string{dir}, diskspace.Reserve{Bytes: avail - 3*diskspace.ClaimWindow}, 8<<20)
		c, err := big.Claim(2 * diskspace.ClaimWindow)
		if err != nil || c.Left() != diskspace.ClaimWindow {
			t.Fatalf("a claim of twice the window: %v (holds %d)", err, c.Left())
		}
		if free, err := big.Unclaimed(); err != nil || free > 2*diskspace.ClaimWindow+diskspace.ClaimWindow/2 {
			t.Fatalf("room beside a claim of the window: %d %v", free, err)
		}
		c.Release()
	}
	room := min(avail/2, diskspace.ClaimWindow)
	g := diskspace.NewGuard([]string{dir}, diskspace.Reserve{Bytes: avail - room}, 8<<20)
	a, err := g.Claim(room * 3 / 4)
	if err != nil || a.Left() != room*3/4 {
		t.Fatalf("a claim of three quarters of the room: %v (left %d)", err, a.Left())
	}
	if _, err := g.Claim(room / 2); !errors.Is(err, diskspace.ErrTooBig) {
		t.Fatalf("a second claim of half the room: %v, want ErrTooBig", err)
	}
	if err := g.Fits(room / 2); !errors.Is(err, diskspace.ErrTooBig) {
		t.Fatalf("Fits half the room beside the claim: %v, want ErrTooBig", err)
	}
	var sink bytes.Buffer
	w := &diskspace.Writer{W: &sink, Guard: g, Claim: a}
	if _, err := w.Write(make([]byte, 1<<20)); err != nil || a.Left() != room*3/4-1<<20 {
		t.Fatalf("writing 1 MiB of the claim: %v (left %d)", err, a.Left())
	}

	// With the room a copy of the guard sees shrunk to a half, the claim
	// leaves none to a writer without one, and its own writer writes on.
	tight := g
	tight.Reserve.Bytes = avail - room/2
	if _, err := (&diskspace.Writer{W: &sink, Guard: tight}).Write(make([]byte, 5)); !errors.Is(err, diskspace.ErrNoRoom) {
		t.Fatalf("a writer without a claim beside one over the room: %v, want ErrNoRoom", err)
	}
	if _, err := (&diskspace.Writer{W: &sink, Guard: tight, Claim: a}).Write(make([]byte, 5)); err != nil {
		t.Fatalf("the claim's own writer: %v", err)
	}

	a.Release()
	a.Release()
	if a.Left() != 0 {
		t.Fatalf("a released claim holds %d", a.Left())
	}
	b, err := g.Claim(room / 2)
	if err != nil {
		t.Fatalf("half the room once the claim is released: %v", err)
	}
	b.Release()
	if err := g.Fits(room * 3 / 4); err != nil {
		t.Fatalf("three quarters with nothing claimed: %v", err)
	}
}

// writes records where each write to a file ends, and tells ended.
type writes struct {
	f     *os.File
	ends  []int64
	ended chan int64
}

func (w *writes) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	off, _ := w.f.Seek(0, io.SeekCurrent)
	w.ends = append(w.ends, off)
	if w.ended != nil {
		w.ended <- off
	}
	return n, err
}

func create(t *testing.T, offset int64) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "upload"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(make([]byte, offset)); err != nil {
		t.Fatal(err)
	}
	return f
}

// ReadFrom writes what a reader hands out in odd pieces so that every
// write but the last ends on a Block boundary in the file, from a resumed
// offset as from the start, and the file holds every byte.
func TestReadFromWritesWholeBlocks(t *testing.T) {
	src := make([]byte, 3*diskspace.Block+12345)
	for i := range src {
		src[i] = byte(i * 31)
	}
	for _, offset := range []int64{0, 1000, diskspace.Block} {
		f := create(t, offset)
		rec := &writes{f: f}
		w := &diskspace.Writer{W: rec, Guard: diskspace.Guard{Every: 1 << 30}, Offset: offset}
		// io.Copy takes ReadFrom; pieces of 1 to 8192 bytes in an odd order.
		n, err := io.Copy(w, &pieces{r: bytes.NewReader(src)})
		if err != nil || n != int64(len(src)) {
			t.Fatalf("offset %d: copied %d, %v", offset, n, err)
		}
		for i, end := range rec.ends[:len(rec.ends)-1] {
			if end%diskspace.Block != 0 {
				t.Fatalf("offset %d: write %d ends at %d, inside a block (ends %v)", offset, i, end, rec.ends)
			}
		}
		got, err := os.ReadFile(f.Name())
		if err != nil || !bytes.Equal(got[offset:], src) || w.Offset != offset+int64(len(src)) {
			t.Fatalf("offset %d: file of %d bytes (%v) does not hold the source; Offset %d", offset, len(got), err, w.Offset)
		}
	}
}

// pieces hands out reads of varying odd sizes.
type pieces struct {
	r io.Reader
	i int
}

func (p *pieces) Read(b []byte) (int, error) {
	p.i++
	return p.r.Read(b[:min(len(b), (p.i*7919)%8192+1)])
}

// ReadFrom does not wait for the body's end: what arrives is written as
// far as its last whole Block while the client pauses, and the rest once
// the body ends.
func TestReadFromWritesWhatArrives(t *testing.T) {
	block := diskspace.Block
	pr, pw := io.Pipe()
	rec := &writes{f: create(t, 0), ended: make(chan int64, 4)}
	done := make(chan error, 1)
	go func() {
		_, err := (&diskspace.Writer{W: rec, Guard: diskspace.Guard{Every: 1 << 30}}).ReadFrom(pr)
		done <- err
	}()
	_, _ = pw.Write(make([]byte, block+100)) // then a pause
	if end := <-rec.ended; end != int64(block) {
		t.Fatalf("while the client pauses, the file ends at %d, want %d", end, block)
	}
	pw.Close()
	if end := <-rec.ended; end != int64(block+100) {
		t.Fatalf("once the body ends, the file ends at %d, want %d", end, block+100)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A reader that fails midway: what it handed out before the error is in
// the file, and the error is the reader's.
func TestReadFromKeepsWhatArrivedBeforeAnError(t *testing.T) {
	var sink bytes.Buffer
	broken := errors.New("connection reset")
	src := io.MultiReader(bytes.NewReader([]byte("first bytes")), iotest.ErrReader(broken))
	w := &diskspace.Writer{W: &sink, Guard: diskspace.Guard{Every: 1 << 30}}
	n, err := w.ReadFrom(src)
	if !errors.Is(err, broken) || n != 11 || sink.String() != "first bytes" {
		t.Fatalf("ReadFrom = %d, %v; wrote %q", n, err, sink.String())
	}
}
