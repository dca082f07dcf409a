package tus_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kino-video/kino/transport/tus"
)

const id = "01ARZ3NDEKTSV4RRFFQ69G5FAV"

// An upload outlives a restart: its record and bytes are read back, a
// complete one is pending and told one byte short, and files that are no
// upload's are removed.
func TestFileStoreReopens(t *testing.T) {
	dir := t.TempDir()
	s, err := tus.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	u := tus.Upload{ID: id, Account: "acme", Length: 4, Created: now, Expires: now.Add(time.Hour)}
	if err := s.Create(u); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.DataPath(id), []byte("abcd"), 0o600); err != nil {
		t.Fatal(err)
	}
	u.Offset = 4
	if err := s.Save(u); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "01BX5ZZKBKACTAV9WEVGEMMVRZ.bin") // bytes without a record
	if err := os.WriteFile(junk, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	s, err = tus.OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := s.Get(id)
	if !ok || !got.Pending() || got.ResumeOffset() != 3 {
		t.Fatalf("after a restart: %+v (found %v)", got, ok)
	}
	if ids := s.PendingIDs(); len(ids) != 1 || ids[0] != id {
		t.Fatalf("pending %v", ids)
	}
	if _, err := os.Stat(junk); !os.IsNotExist(err) {
		t.Fatalf("a file of no upload stayed: %v", err)
	}
	if list := s.Unfinished("acme", now); len(list) != 1 || s.Usage("acme", false) != 1 || len(s.Expired(now)) != 0 {
		t.Fatalf("unfinished %v, usage %d", list, s.Usage("acme", false))
	}
	if err := s.Complete(got, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get(id); ok {
		t.Fatal("a completed upload is still an upload")
	}
	if d, ok := s.Completed(id); !ok || d.Length != 4 {
		t.Fatalf("completion record %+v (found %v)", d, ok)
	}
	if ids := s.ExpiredDone(now.Add(time.Hour)); len(ids) != 1 {
		t.Fatalf("expired completion records %v", ids)
	}
}

// A takeover interrupts the request holding an upload and gets the
// upload once that request lets go.
func TestFileStoreTakeover(t *testing.T) {
	s, err := tus.OpenFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !s.Lock(id) || s.Lock(id) || !s.Busy(id) {
		t.Fatal("a second lock of a held upload succeeded")
	}
	s.Interruptible(id, func() { go s.Unlock(id) }) // the holder lets go when interrupted
	if !s.Takeover(context.Background(), id, time.Minute) {
		t.Fatal("the takeover did not get the upload")
	}
	s.Unlock(id)
	if s.Busy(id) {
		t.Fatal("held after unlock")
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.Lock(id) // a holder that never lets go
	cancel()
	if s.Takeover(ctx, id, time.Minute) {
		t.Fatal("a takeover got an upload its holder kept")
	}
}
