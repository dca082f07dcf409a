package projections

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
)

// QueuePositions returns, for each of seqs (the CreatedSeq of videos of
// account), its 1-based place among the account's PENDING videos, oldest
// first (by creation): the order the account's transcode queue takes
// them in, near enough (a retried video waits behind newer uploads,
// though older). 0 for a video that is not PENDING or not among the first
// limit. It walks the status index's keys only, and stops at the last of
// seqs or after limit keys; what it walked is kept (DB.caches.queue), so the
// polls of a queued upload find their place without walking again.
func (db *DB) QueuePositions(account string, seqs []uint64, limit int) ([]int, error) {
	out := make([]int, len(seqs))
	if len(seqs) == 0 {
		return out, nil
	}
	last := slices.Max(seqs)
	q, gen, hit := db.caches.queue.get(account)
	if !hit || q.limit != limit || last > q.bound {
		q = queued{limit: limit, bound: math.MaxUint64}
		err := db.view(func(tx *bolt.Tx) error {
			prefix := append(key(account, string(domain.StatusPending)), 0)
			c := tx.Bucket(bByStatus).Cursor()
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(q.seqs) < limit; k, _ = c.Next() {
				if len(k) != len(prefix)+8 {
					continue
				}
				seq := binary.BigEndian.Uint64(k[len(prefix):])
				q.seqs = append(q.seqs, seq)
				if seq >= last {
					q.bound = seq
					break
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		db.caches.queue.put(account, q, gen)
	}
	for i, s := range seqs {
		if at, ok := slices.BinarySearch(q.seqs, s); ok {
			out[i] = at + 1
		}
	}
	return out, nil
}

// queued is the start of an account's queue: seqs holds its PENDING
// videos' CreatedSeq in order, every one up to bound (all of them, or the
// first limit, with bound MaxUint64).
type queued struct {
	seqs  []uint64
	bound uint64
	limit int
}
