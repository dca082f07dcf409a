package projections

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Bucket names. Index keys end in the 8-byte big-endian stream sequence of
// the video's UploadAccepted, so a reverse scan is newest first.
var (
	bMeta        = []byte("meta")
	bVideos      = []byte("videos")            // id -> Video
	bByAccount   = []byte("videos_by_account") // account 0 seq -> id
	bByColl      = []byte("videos_by_collection")
	bByStatus    = []byte("videos_by_status")
	bCollections = []byte("collections")      // account 0 slug -> Collection
	bAccounts    = []byte("accounts")         // slug -> Account
	bKeys        = []byte("keys")             // sha256 hex -> Key
	bWebhooks    = []byte("webhooks")         // account 0 id -> Webhook
	bDeliveries  = []byte("deliveries")       // webhook id 0 seq -> Delivery
	bUsage       = []byte("usage")            // account -> Usage
	bRedelivered = []byte("redeliveries")     // webhook id 0 delivery id -> Redelivery
	bKeysByAcct  = []byte("keys_by_account")  // account 0 key id -> sha256 hex
	bUsers       = []byte("users")            // id -> User
	bUserEmails  = []byte("users_by_email")   // normalised email -> id
	bUserAccts   = []byte("users_by_account") // account 0 id -> id
	bUserLinks   = []byte("users_by_link")    // set-password link sha256 hex -> id
	bSigningKeys = []byte("signing_keys")     // account 0 key id -> SigningKey
	bSearch      = []byte("videos_by_word")   // account 0 word 0 seq -> id (domain.VideoTerms)
	bByTag       = []byte("videos_by_tag")    // account 0 folded tag 0 seq -> id
	bByMeta      = []byte("videos_by_meta")   // account 0 key 0 value 0 seq -> id
	bCaptions    = []byte("captions")         // video id 0 track id -> WebVTT

	allBuckets = [][]byte{bMeta, bVideos, bByAccount, bByColl, bByStatus, bCollections, bAccounts, bKeys, bWebhooks, bDeliveries,
		bUsage, bRedelivered, bKeysByAcct, bUsers, bUserEmails, bUserAccts, bUserLinks, bSigningKeys,
		bSearch, bByTag, bByMeta, bCaptions}

	kCheckpoint = []byte("checkpoint")
	kSchema     = []byte("schema")
)

// schema is the version of the read models' layout. A file written by an
// older layout (none recorded: 1) is emptied when opened, and the
// projector fills it again from sequence 1: version 2 added the keys'
// prefixes and the account index of keys, and the users, which the
// records of an older file lack; version 3 the playback policies, the
// playable and extra-output flags, collection settings and signing keys;
// version 4 the videos' details (title, description, tags, metadata),
// their search indexes and their displayed size.
const schema = 4

// DB is the bbolt file holding every read model. A rebuild replaces the
// file underneath while the DB keeps answering: every transaction holds mu
// for reading, the swap holds it for writing.
type DB struct {
	mu     sync.RWMutex
	bolt   *bolt.DB
	path   string
	caches caches
}

func (db *DB) view(fn func(*bolt.Tx) error) error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.bolt.View(fn)
}

func (db *DB) update(fn func(*bolt.Tx) error) error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.bolt.Update(fn)
}

// initialMmapSize is the address space mapped for a read-model file up
// front (not memory: pages are read in as they are touched). While the
// file fits, bbolt never remaps it, so a commit never waits for readers to
// leave, and never copies its changed records out of the map first: a
// rebuild's file remapped at every doubling spent a tenth of its
// allocations on that copy. Not on Windows, where bbolt grows the file to
// the size mapped, nor in a 32-bit process, which has no gigabyte to spare.
var initialMmapSize = func() int {
	if runtime.GOOS == "windows" || strconv.IntSize < 64 {
		return 0
	}
	return 1 << 30
}()

// OpenDB opens (or creates) the read-model file at path.
func OpenDB(path string) (*DB, error) { return openDB(path, 5*time.Second) }

// openDB opens the file, waiting up to timeout for another process's lock
// (bolt.ErrTimeout after it).
func openDB(path string, timeout time.Duration) (*DB, error) {
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, FreelistType: bolt.FreelistMapType, NoFreelistSync: true,
		InitialMmapSize: initialMmapSize})
	if err != nil {
		return nil, fmt.Errorf("open read models %s: %w", path, err)
	}
	err = b.Update(func(tx *bolt.Tx) error {
		if m := tx.Bucket(bMeta); m != nil && readSchema(tx) < schema {
			for _, name := range allBuckets {
				if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
					return err
				}
			}
		}
		// A file written before per-account usage was kept has videos
		// but no usage: counted once from the videos, as applying their
		// events would have counted them.
		backfill := tx.Bucket(bUsage) == nil && tx.Bucket(bVideos) != nil
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		if backfill {
			if err := backfillUsage(tx); err != nil {
				return err
			}
		}
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], schema)
		return tx.Bucket(bMeta).Put(kSchema, v[:])
	})
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("open read models %s: %w", path, err)
	}
	return &DB{bolt: b, path: path, caches: newCaches()}, nil
}

// Close closes the file.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.bolt.Close()
}

// Path is the file's path.
func (db *DB) Path() string { return db.path }

// replaceWith makes other's file this DB's: it is renamed over this one's
// path first (if that fails nothing has changed), then in-flight reads
// finish on the old file, which is closed; later reads see the new one.
// other must not be used afterwards.
func (db *DB) replaceWith(other *DB) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := os.Rename(other.path, db.path); err != nil {
		return fmt.Errorf("replace read models: %w", err)
	}
	old := db.bolt
	db.bolt = other.bolt
	other.path = db.path
	_ = old.Close() // the old file is already unlinked: nothing to lose
	db.caches.forgetAll()
	return nil
}

// Checkpoint is the last stream sequence applied.
func (db *DB) Checkpoint() (uint64, error) {
	var seq uint64
	err := db.view(func(tx *bolt.Tx) error {
		seq = readCheckpoint(tx)
		return nil
	})
	return seq, err
}

// readSchema is the layout version of the file (1 when none is recorded).
func readSchema(tx *bolt.Tx) uint64 {
	if v := tx.Bucket(bMeta).Get(kSchema); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 1
}

func readCheckpoint(tx *bolt.Tx) uint64 {
	if v := tx.Bucket(bMeta).Get(kCheckpoint); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// key joins parts with zero bytes: the keys of the read models.
func key(parts ...string) []byte { return appendKey(make([]byte, 0, keyLen(parts)), parts...) }

// keyLen is len(key(parts...)).
func keyLen(parts []string) int {
	n := len(parts) - 1
	for _, p := range parts {
		n += len(p)
	}
	return n
}

// appendKey appends key(parts...) to dst.
func appendKey(dst []byte, parts ...string) []byte {
	for i, p := range parts {
		if i > 0 {
			dst = append(dst, 0)
		}
		dst = append(dst, p...)
	}
	return dst
}

func seqKey(prefix []byte, seq uint64) []byte {
	k := make([]byte, len(prefix)+1+8)
	copy(k, prefix)
	binary.BigEndian.PutUint64(k[len(prefix)+1:], seq)
	return k
}

func getJSON[T any](b *bolt.Bucket, k []byte) (T, bool, error) {
	var v T
	raw := b.Get(k)
	if raw == nil {
		return v, false, nil
	}
	if err := unmarshal(raw, &v); err != nil {
		return v, false, fmt.Errorf("decode read model %q: %w", k, err)
	}
	return v, true, nil
}

// unmarshal decodes a read model with json/v2's decoder, twice as fast as
// encoding/json's on these records (docs/performance.md). Records are
// written with encoding/json, so their bytes stay what they always were.
func unmarshal(raw []byte, v any) error { return jsonv2.Unmarshal(raw, v) }

func putJSON(b *bolt.Bucket, k []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(k, raw)
}

// CaptionVTT returns the WebVTT of video id's track (READY tracks only).
func (db *DB) CaptionVTT(id, track string) ([]byte, bool, error) {
	var out []byte
	err := db.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bCaptions).Get(key(id, track)); v != nil {
			out = bytes.Clone(v)
		}
		return nil
	})
	return out, out != nil, err
}

// Collection returns one collection of an account.
func (db *DB) Collection(account, slug string) (Collection, bool, error) {
	var c Collection
	var ok bool
	err := db.view(func(tx *bolt.Tx) (err error) {
		c, ok, err = getJSON[Collection](tx.Bucket(bCollections), key(account, slug))
		return err
	})
	return c, ok, err
}

// Collections lists an account's collections by slug.
func (db *DB) Collections(account string) ([]Collection, error) {
	return scanPrefix[Collection](db, bCollections, account)
}

// SigningKey returns one live signing key of an account.
func (db *DB) SigningKey(account, id string) (SigningKey, bool, error) {
	var k SigningKey
	var ok bool
	err := db.view(func(tx *bolt.Tx) (err error) {
		k, ok, err = getJSON[SigningKey](tx.Bucket(bSigningKeys), key(account, id))
		return err
	})
	return k, ok, err
}

// SigningKeys lists an account's live signing keys by id (oldest first:
// ids are ULIDs).
func (db *DB) SigningKeys(account string) ([]SigningKey, error) {
	return scanPrefix[SigningKey](db, bSigningKeys, account)
}

// Webhook returns one subscription of an account.
func (db *DB) Webhook(account, id string) (Webhook, bool, error) {
	var w Webhook
	var ok bool
	err := db.view(func(tx *bolt.Tx) (err error) {
		w, ok, err = getJSON[Webhook](tx.Bucket(bWebhooks), key(account, id))
		return err
	})
	return w, ok, err
}

// Webhooks lists an account's subscriptions, oldest first.
func (db *DB) Webhooks(account string) ([]Webhook, error) {
	return scanPrefix[Webhook](db, bWebhooks, account)
}

func scanPrefix[T any](db *DB, bucket []byte, account string) ([]T, error) {
	out := []T{}
	prefix := append(key(account), 0)
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		for k, raw := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, raw = c.Next() {
			var v T
			if err := unmarshal(raw, &v); err != nil {
				return fmt.Errorf("decode %s %q: %w", bucket, k, err)
			}
			out = append(out, v)
		}
		return nil
	})
	return out, err
}

// Account returns an account by slug.
func (db *DB) Account(slug string) (Account, bool, error) {
	var a Account
	var ok bool
	err := db.view(func(tx *bolt.Tx) (err error) {
		a, ok, err = getJSON[Account](tx.Bucket(bAccounts), []byte(slug))
		return err
	})
	return a, ok, err
}

// HasVideo reports whether a live video has this id.
func (db *DB) HasVideo(id string) (bool, error) {
	_, ok, err := db.Video(id)
	return ok, err
}

// Deliveries lists a webhook's delivery attempts, newest first.
func (db *DB) Deliveries(webhookID string, limit, offset int) ([]Delivery, error) {
	out := []Delivery{}
	prefix := append(key(webhookID), 0)
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bDeliveries).Cursor()
		k, raw := c.Seek(append(bytes.Clone(prefix), bytes.Repeat([]byte{0xff}, 9)...))
		if k == nil {
			k, raw = c.Last()
		} else {
			k, raw = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, raw = c.Prev() {
			if offset > 0 {
				offset--
				continue
			}
			var d Delivery
			if err := unmarshal(raw, &d); err != nil {
				return fmt.Errorf("decode delivery %q: %w", k, err)
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

// backfillUsage counts every account's usage from its live videos.
func backfillUsage(tx *bolt.Tx) error {
	usage := map[string]*Usage{}
	err := tx.Bucket(bVideos).ForEach(func(k, raw []byte) error {
		var v Video
		if err := unmarshal(raw, &v); err != nil {
			return fmt.Errorf("decode video %q: %w", k, err)
		}
		u := usage[v.Account]
		if u == nil {
			u = &Usage{}
			usage[v.Account] = u
		}
		u.add(v.Status, 1, storedBytes(&v))
		return nil
	})
	if err != nil {
		return err
	}
	for account, u := range usage {
		if err := putJSON(tx.Bucket(bUsage), []byte(account), u); err != nil {
			return err
		}
	}
	return nil
}

// Usage is an account's videos by status and storage, kept as events
// apply (zero for an account without videos).
func (db *DB) Usage(account string) (Usage, error) {
	var u Usage
	err := db.view(func(tx *bolt.Tx) (err error) {
		u, _, err = getJSON[Usage](tx.Bucket(bUsage), []byte(account))
		return err
	})
	return u, err
}

// Accounts lists every account by slug.
func (db *DB) Accounts() ([]Account, error) {
	out := []Account{}
	err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bAccounts).ForEach(func(k, raw []byte) error {
			var a Account
			if err := unmarshal(raw, &a); err != nil {
				return fmt.Errorf("decode account %q: %w", k, err)
			}
			out = append(out, a)
			return nil
		})
	})
	return out, err
}

// DeliveryAttempts lists the attempts of one delivery of a webhook,
// oldest first (none when the webhook has no such delivery).
func (db *DB) DeliveryAttempts(webhookID, deliveryID string) ([]Delivery, error) {
	out := []Delivery{}
	prefix := append(key(webhookID), 0)
	quoted := []byte(`"` + deliveryID + `"`)
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bDeliveries).Cursor()
		for k, raw := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, raw = c.Next() {
			if !bytes.Contains(raw, quoted) { // most rows are other deliveries: not decoded
				continue
			}
			var d Delivery
			if err := unmarshal(raw, &d); err != nil {
				return fmt.Errorf("decode delivery %q: %w", k, err)
			}
			if d.DeliveryID == deliveryID {
				out = append(out, d)
			}
		}
		return nil
	})
	return out, err
}

// Keys lists an account's live keys, by id (oldest first: ids are ULIDs).
func (db *DB) Keys(account string) ([]Key, error) {
	out := []Key{}
	prefix := append(key(account), 0)
	err := db.view(func(tx *bolt.Tx) error {
		keys := tx.Bucket(bKeys)
		c := tx.Bucket(bKeysByAcct).Cursor()
		for k, hash := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, hash = c.Next() {
			v, ok, err := getJSON[Key](keys, hash)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, v)
			}
		}
		return nil
	})
	return out, err
}

// Redelivered tells whether a delivery of a webhook was sent again, and
// as which.
func (db *DB) Redelivered(webhookID, deliveryID string) (Redelivery, bool, error) {
	var r Redelivery
	var ok bool
	err := db.view(func(tx *bolt.Tx) (err error) {
		r, ok, err = getJSON[Redelivery](tx.Bucket(bRedelivered), key(webhookID, deliveryID))
		return err
	})
	return r, ok, err
}

// User returns a user by id.
func (db *DB) User(id string) (User, bool, error) {
	var u User
	var ok bool
	err := db.view(func(tx *bolt.Tx) (err error) {
		u, ok, err = getJSON[User](tx.Bucket(bUsers), []byte(id))
		return err
	})
	return u, ok, err
}

// UserByEmail returns the user with this normalised email.
func (db *DB) UserByEmail(email string) (User, bool, error) {
	return db.userBy(bUserEmails, email)
}

// UserByLink returns the user whose unused set-password link has this
// SHA-256 (hex).
func (db *DB) UserByLink(hash string) (User, bool, error) {
	return db.userBy(bUserLinks, hash)
}

func (db *DB) userBy(index []byte, k string) (User, bool, error) {
	var u User
	var ok bool
	err := db.view(func(tx *bolt.Tx) (err error) {
		id := tx.Bucket(index).Get([]byte(k))
		if id == nil {
			return nil
		}
		u, ok, err = getJSON[User](tx.Bucket(bUsers), id)
		return err
	})
	return u, ok, err
}

// Users lists the users of account by id, or every user (operators
// included) when account is "".
func (db *DB) Users(account string) ([]User, error) {
	out := []User{}
	err := db.view(func(tx *bolt.Tx) error {
		users := tx.Bucket(bUsers)
		if account == "" {
			return users.ForEach(func(k, raw []byte) error {
				var u User
				if err := unmarshal(raw, &u); err != nil {
					return fmt.Errorf("decode user %q: %w", k, err)
				}
				out = append(out, u)
				return nil
			})
		}
		prefix := append(key(account), 0)
		c := tx.Bucket(bUserAccts).Cursor()
		for k, id := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, id = c.Next() {
			u, ok, err := getJSON[User](users, id)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, u)
			}
		}
		return nil
	})
	return out, err
}
