package projections

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// Dump writes every read model, bucket by bucket in key order, one line per
// entry (bucket, key, value), leaving out the checkpoint: two DBs that
// hold the same read models dump the same bytes.
func (db *DB) Dump(w io.Writer) error {
	bw := bufio.NewWriter(w)
	err := db.view(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if string(name) == string(bMeta) {
				continue
			}
			err := tx.Bucket(name).ForEach(func(k, v []byte) error {
				_, err := fmt.Fprintf(bw, "%s\t%s\t%s\n", name, strconv.Quote(string(k)), v)
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// Diff compares the read models of a and b entry by entry (the checkpoint
// aside) and describes up to max differences.
func Diff(a, b *DB, max int) ([]string, error) {
	var out []string
	err := a.view(func(ta *bolt.Tx) error {
		return b.view(func(tb *bolt.Tx) error {
			for _, name := range allBuckets {
				if string(name) == string(bMeta) {
					continue
				}
				show := func(v []byte) string { return string(v) }
				if secretBucket(name) {
					// Key hashes and signing secrets never leave the process.
					show = func([]byte) string { return "(value not shown: it holds secrets)" }
				}
				ca, cb := ta.Bucket(name).Cursor(), tb.Bucket(name).Cursor()
				ka, va := ca.First()
				kb, vb := cb.First()
				for (ka != nil || kb != nil) && len(out) < max {
					switch c := compareKeys(ka, kb); {
					case c < 0:
						out = append(out, fmt.Sprintf("%s %q: only in the first: %s", name, ka, show(va)))
						ka, va = ca.Next()
					case c > 0:
						out = append(out, fmt.Sprintf("%s %q: only in the second: %s", name, kb, show(vb)))
						kb, vb = cb.Next()
					default:
						if string(va) != string(vb) {
							out = append(out, fmt.Sprintf("%s %q: %s <> %s", name, ka, show(va), show(vb)))
						}
						ka, va = ca.Next()
						kb, vb = cb.Next()
					}
				}
			}
			return nil
		})
	})
	return out, err
}

// secretBucket: the buckets whose values (key hashes, sealed signing
// secrets, link hashes) Diff never shows.
func secretBucket(name []byte) bool {
	switch string(name) {
	case string(bKeys), string(bWebhooks), string(bUsers), string(bUserLinks), string(bKeysByAcct):
		return true
	}
	return false
}

// compareKeys orders keys as bbolt does, with nil (exhausted) last.
func compareKeys(a, b []byte) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return bytes.Compare(a, b)
}
