package projections

import (
	"bytes"
	"encoding/binary"
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
// seqs or after limit keys.
func (db *DB) QueuePositions(account string, seqs []uint64, limit int) ([]int, error) {
	out := make([]int, len(seqs))
	if len(seqs) == 0 {
		return out, nil
	}
	last := slices.Max(seqs)
	err := db.view(func(tx *bolt.Tx) error {
		prefix := append(key(account, string(domain.StatusPending)), 0)
		c := tx.Bucket(bByStatus).Cursor()
		n := 0
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && n < limit; k, _ = c.Next() {
			if len(k) != len(prefix)+8 {
				continue
			}
			n++
			seq := binary.BigEndian.Uint64(k[len(prefix):])
			for i, s := range seqs {
				if s == seq {
					out[i] = n
				}
			}
			if seq >= last {
				break
			}
		}
		return nil
	})
	return out, err
}
