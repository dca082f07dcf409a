package projections

import (
	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
)

// authEntry is a live API key with its account, as Authenticate keeps it
// (unknown keys are not kept): a map lookup for every request instead of
// two bbolt reads and two JSON decodes.
type authEntry struct {
	key     Key
	account Account
}

// Authenticate finds the live API key with SHA-256 hex hash and its
// account; ok is false when there is no such key (or, which the stream's
// order rules out, no account for it).
func (db *DB) Authenticate(hash string) (Key, Account, bool, error) {
	e, gen, hit := db.caches.auth.get(hash)
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
	db.caches.auth.put(hash, e, gen)
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
