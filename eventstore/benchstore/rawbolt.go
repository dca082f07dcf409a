package benchstore

import (
	"context"
	"encoding/binary"
	"runtime"
	"strconv"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/eventstore"
)

// readModelOptions are the bbolt options of kino's read models
// (projections.OpenDB: map freelist, not synced, 1 GiB mapped up front on
// 64-bit systems other than Windows), so the floor has every advantage
// kino's own file has.
func readModelOptions() *bolt.Options {
	o := &bolt.Options{FreelistType: bolt.FreelistMapType, NoFreelistSync: true}
	if runtime.GOOS != "windows" && strconv.IntSize == 64 {
		o.InitialMmapSize = 1 << 30
	}
	return o
}

// RawIntoBolt writes the raw bodies of sequences 1..upTo of s's event
// stream into a bbolt file at path, 1 000 per transaction: the floor of
// reading a stream into a bbolt file, which a rebuild is measured against
// (kino bench, and BenchmarkRebuild).
func RawIntoBolt(ctx context.Context, s *eventstore.Store, path string, upTo uint64) error {
	db, err := bolt.Open(path, 0o600, readModelOptions())
	if err != nil {
		return err
	}
	defer db.Close()
	type kv struct {
		k    [8]byte
		body []byte
	}
	batch := make([]kv, 0, 1000)
	flush := func() error {
		return db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("events"))
			if err != nil {
				return err
			}
			bk.FillPercent = 1
			for _, e := range batch {
				if err := bk.Put(e.k[:], e.body); err != nil {
					return err
				}
			}
			batch = batch[:0]
			return nil
		})
	}
	return RawTail(ctx, s, upTo, func(seq uint64, body []byte) error {
		var e kv
		binary.BigEndian.PutUint64(e.k[:], seq)
		e.body = body
		batch = append(batch, e)
		if len(batch) == 1000 || seq >= upTo {
			return flush()
		}
		return nil
	})
}
