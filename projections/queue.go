package projections

import (
	"bytes"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
)

// QueuePositions maps the ids of account's first limit PENDING videos,
// oldest first (by creation), to their 1-based place among them: the
// order the account's transcode queue takes them in, near enough (a
// retried video waits behind newer uploads, though older). It walks the
// status index only, limit keys at most.
func (db *DB) QueuePositions(account string, limit int) (map[string]int, error) {
	out := map[string]int{}
	err := db.view(func(tx *bolt.Tx) error {
		prefix := append(key(account, string(domain.StatusPending)), 0)
		c := tx.Bucket(bByStatus).Cursor()
		for k, id := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, id = c.Next() {
			out[string(id)] = len(out) + 1
		}
		return nil
	})
	return out, err
}
