package projections

import bolt "go.etcd.io/bbolt"

// DropBucketForTest removes a bucket, as a file of an older version lacks it.
func DropBucketForTest(db *DB, name string) error {
	return db.update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte(name)) })
}
