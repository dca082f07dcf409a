package projections

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A file written by an older layout (no schema recorded) is emptied when
// opened, so the projector fills it again from sequence 1 with what the
// older records lack (key prefixes, the key and user indexes).
func TestOlderLayoutIsRebuiltFromTheStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	db, err := OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	err = db.update(func(tx *bolt.Tx) error {
		var cp [8]byte
		binary.BigEndian.PutUint64(cp[:], 42)
		if err := tx.Bucket(bMeta).Put(kCheckpoint, cp[:]); err != nil {
			return err
		}
		if err := tx.Bucket(bKeys).Put([]byte("h"), []byte(`{"id":"k"}`)); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Delete(kSchema) // as an older kino wrote it
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	db, err = OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if cp, _ := db.Checkpoint(); cp != 0 {
		t.Fatalf("checkpoint = %d; want 0 (replay from the start)", cp)
	}
	_ = db.view(func(tx *bolt.Tx) error {
		if tx.Bucket(bKeys).Get([]byte("h")) != nil {
			t.Fatal("an old record survived")
		}
		return nil
	})

	// A file of the current layout keeps what it holds.
	seq := uint64(7)
	_ = db.update(func(tx *bolt.Tx) error {
		var cp [8]byte
		binary.BigEndian.PutUint64(cp[:], seq)
		return tx.Bucket(bMeta).Put(kCheckpoint, cp[:])
	})
	db.Close()
	if db, err = OpenDB(path); err != nil {
		t.Fatal(err)
	}
	if cp, _ := db.Checkpoint(); cp != seq {
		t.Fatalf("checkpoint = %d; want %d", cp, seq)
	}
}
