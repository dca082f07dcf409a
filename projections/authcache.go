package projections

import (
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
)

// authCache keeps API keys with their accounts as last read from the file,
// for the authentication of every request: a map lookup instead of two
// bbolt reads and two JSON decodes. Any commit that applies an account's
// event (a key issued or revoked, a plan or quota changed) empties it
// before the commit's WaitFor waiters are woken, and so does a file
// swapped in by a rebuild: a revoked key is refused as soon as the
// revocation's write has answered. Unknown keys are not kept.
type authCache struct {
	mu      sync.RWMutex
	gen     uint64 // counts the emptyings: an entry read before one is not kept
	entries map[string]authEntry
}

type authEntry struct {
	key     Key
	account Account
}

// maxAuthEntries bounds the cache: past it, keys are read from the file.
const maxAuthEntries = 10000

// reset empties the cache.
func (c *authCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
}

// Authenticate finds the live API key with SHA-256 hex hash and its
// account; ok is false when there is no such key (or, which the stream's
// order rules out, no account for it).
func (db *DB) Authenticate(hash string) (Key, Account, bool, error) {
	c := &db.auth
	c.mu.RLock()
	e, hit := c.entries[hash]
	gen := c.gen
	c.mu.RUnlock()
	if hit {
		return e.key, e.account, true, nil
	}
	var ok bool
	err := db.view(func(tx *bolt.Tx) (err error) {
		if e.key, ok, err = getJSON[Key](tx.Bucket(bKeys), []byte(hash)); err != nil || !ok {
			return err
		}
		e.account, ok, err = getJSON[Account](tx.Bucket(bAccounts), []byte(e.key.Account))
		return err
	})
	if err != nil || !ok {
		return Key{}, Account{}, false, err
	}
	c.mu.Lock()
	if c.gen == gen && len(c.entries) < maxAuthEntries {
		if c.entries == nil {
			c.entries = make(map[string]authEntry)
		}
		c.entries[hash] = e
	}
	c.mu.Unlock()
	return e.key, e.account, true, nil
}

// touchesAuth reports whether a batch holds an account's event, which may
// change what Authenticate answers.
func touchesAuth(batch []domain.Event) bool {
	for _, e := range batch {
		if e.Data != nil && e.Data.Aggregate() == domain.AggAccount {
			return true
		}
	}
	return false
}
