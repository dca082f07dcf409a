package playback

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kino-video/kino/domain"
)

// KeyRing holds the keys of kino's own tokens: the one new tokens are
// signed with, and the ones tokens are still accepted from.
type KeyRing interface {
	// Current is the key new tokens are signed with, and its id.
	Current(ctx context.Context) (id string, key []byte, err error)
	// Lookup is the key of id while tokens signed with it are accepted.
	Lookup(ctx context.Context, id string) (key []byte, ok bool, err error)
}

// RingStore keeps the ring as one value, replaced by compare-and-set
// (kv.PlaybackKeys; a domain Conflict when another write came first).
type RingStore interface {
	Get(ctx context.Context) (value []byte, revision uint64, found bool, err error)
	Put(ctx context.Context, value []byte, revision uint64) error
}

// Sealer seals the keys at rest with kino's secret key (seal.Key).
type Sealer interface {
	Seal(id, secret string) (string, error)
	Open(id, sealed string) (string, error)
}

// Ring is kino's ring of playback-token keys kept in a RingStore, the
// same for every node: the first key is made on first use; Rotate makes a
// new one current and keeps the old one for a grace period (none:
// every token it signed is refused at once). Each node reads the ring
// again at most once a second, so a rotation reaches them all within
// about a second.
type Ring struct {
	store  RingStore
	sealer Sealer
	now    func() time.Time

	// readOnly: an empty ring is an error, not given a first key (the
	// operator's CLI, which must not seal one with a wrong secret key).
	readOnly bool

	mu       sync.Mutex
	keys     []ringKey     // keys[0] is current; the rest retiring
	readAt   time.Time     // when keys was read from the store
	loading  chan struct{} // closed when the read under way ends; nil: none
	loadErr  error         // how the last read ended
	failedAt time.Time     // when a read last failed: the next waits ringTTL
}

// ringKey is one key as the ring lists it.
type ringKey struct {
	ID      string     `json:"id"`
	Sealed  string     `json:"sealed"`
	Created time.Time  `json:"created"`
	Until   *time.Time `json:"until,omitempty"` // retiring: accepted until then
	key     []byte
}

// KeyInfo describes a key of the ring (never the key).
type KeyInfo struct {
	ID      string
	Created time.Time
	Current bool
	Until   *time.Time // when a retiring key stops being accepted
}

// How long a node trusts the ring it read; how long one read may take;
// how long the last ring read serves while the store does not answer.
const (
	ringTTL   = time.Second
	ringFetch = 2 * time.Second
	ringStale = time.Minute
)

// NewRing is the ring kept in store, its keys sealed by sealer.
func NewRing(store RingStore, sealer Sealer, now func() time.Time) *Ring {
	if now == nil {
		now = time.Now
	}
	return &Ring{store: store, sealer: sealer, now: now}
}

// ExistingRing is NewRing for a tool that never makes the first key: an
// empty ring is an error (start kino serve first).
func ExistingRing(store RingStore, sealer Sealer, now func() time.Time) *Ring {
	r := NewRing(store, sealer, now)
	r.readOnly = true
	return r
}

func sealID(id string) string { return "playback-key:" + id }

// read is the ring now: cached for ringTTL, else read again (one read
// at a time, which the others wait for, outside the lock); an empty ring
// gets its first key unless the ring only reads. When the store does not
// answer, the ring last read serves for ringStale more, so that signed
// playback goes on through a short NATS outage.
func (r *Ring) read(ctx context.Context) ([]ringKey, error) {
	r.mu.Lock()
	if len(r.keys) > 0 && r.now().Sub(r.readAt) < ringTTL {
		keys := r.keys
		r.mu.Unlock()
		return keys, nil
	}
	if r.loading == nil && r.loadErr != nil && r.now().Sub(r.failedAt) < ringTTL {
		// The store failed a moment ago (a leader being elected): the
		// ring read before serves, and no request waits on it again yet.
		defer r.mu.Unlock()
		return r.usable(r.loadErr)
	}
	if wait := r.loading; wait != nil {
		r.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.usable(r.loadErr)
	}
	done := make(chan struct{})
	r.loading = done
	r.mu.Unlock()

	fetch, cancel := context.WithTimeout(ctx, ringFetch)
	keys, err := r.fetch(fetch)
	cancel()

	r.mu.Lock()
	defer r.mu.Unlock()
	r.loading, r.loadErr = nil, err
	close(done)
	if err == nil {
		r.keys, r.readAt = keys, r.now()
	} else {
		r.failedAt = r.now()
	}
	return r.usable(err)
}

// usable is the ring as read, or, after a failed read, the last one while
// it is younger than ringStale.
func (r *Ring) usable(err error) ([]ringKey, error) {
	if err == nil && len(r.keys) > 0 {
		return r.keys, nil
	}
	if len(r.keys) > 0 && r.now().Sub(r.readAt) < ringStale {
		return r.keys, nil
	}
	if err == nil {
		err = domain.E("playback keys", domain.Unavailable, "the playback keys cannot be read now; retry")
	}
	return nil, err
}

// fetch reads the stored ring, making its first key when it is empty
// (unless readOnly).
func (r *Ring) fetch(ctx context.Context) ([]ringKey, error) {
	for range 5 {
		keys, rev, err := r.load(ctx)
		if err != nil {
			return nil, err
		}
		if len(keys) > 0 {
			return keys, nil
		}
		if r.readOnly {
			return nil, domain.E("playback keys", domain.Unavailable, "there are no playback keys yet: start kino serve first, which makes them")
		}
		k, err := r.newKey()
		if err != nil {
			return nil, err
		}
		keys = []ringKey{k}
		if err := r.save(ctx, keys, rev); errors.Is(err, errChanged) {
			continue // another node made the first key: use it
		} else if err != nil {
			return nil, err
		}
		return keys, nil
	}
	return nil, domain.E("playback keys", domain.Unavailable, "the playback key ring keeps changing; retry")
}

// errChanged is the store's ErrRingChanged, as the ring sees it.
var errChanged = errors.New("ring changed")

// load reads and opens the stored ring, dropping keys past their grace.
func (r *Ring) load(ctx context.Context) ([]ringKey, uint64, error) {
	value, rev, found, err := r.store.Get(ctx)
	if err != nil {
		return nil, 0, domain.Wrap("playback keys", domain.Unavailable, err, "the playback keys cannot be read now; retry")
	}
	if !found {
		return nil, 0, nil
	}
	var stored struct {
		Keys []ringKey `json:"keys"`
	}
	if err := json.Unmarshal(value, &stored); err != nil {
		return nil, 0, fmt.Errorf("playback keys: %w", err)
	}
	now := r.now()
	var keys []ringKey
	for i, k := range stored.Keys {
		if i > 0 && (k.Until == nil || !now.Before(*k.Until)) {
			continue
		}
		clear, err := r.sealer.Open(sealID(k.ID), k.Sealed)
		if err != nil {
			return nil, 0, fmt.Errorf("playback key %s: %w (is this kino's secret key?)", k.ID, err)
		}
		if k.key, err = base64.RawURLEncoding.DecodeString(clear); err != nil || len(k.key) < 32 {
			return nil, 0, fmt.Errorf("playback key %s: malformed", k.ID)
		}
		keys = append(keys, k)
	}
	return keys, rev, nil
}

func (r *Ring) save(ctx context.Context, keys []ringKey, rev uint64) error {
	b, err := json.Marshal(struct {
		Keys []ringKey `json:"keys"`
	}{keys})
	if err != nil {
		return err
	}
	if err := r.store.Put(ctx, b, rev); err != nil {
		if domain.IsKind(err, domain.Conflict) {
			return errChanged
		}
		return domain.Wrap("playback keys", domain.Unavailable, err, "the playback keys cannot be written now; retry")
	}
	return nil
}

// newKey draws a key of 32 random bytes and seals it.
func (r *Ring) newKey() (ringKey, error) {
	var id [8]byte
	key := make([]byte, 32)
	if _, err := rand.Read(id[:]); err != nil {
		return ringKey{}, err
	}
	if _, err := rand.Read(key); err != nil {
		return ringKey{}, err
	}
	k := ringKey{ID: hex.EncodeToString(id[:]), Created: r.now().UTC().Truncate(time.Second), key: key}
	var err error
	k.Sealed, err = r.sealer.Seal(sealID(k.ID), base64.RawURLEncoding.EncodeToString(key))
	return k, err
}

// Current is the key new tokens are signed with.
func (r *Ring) Current(ctx context.Context) (string, []byte, error) {
	keys, err := r.read(ctx)
	if err != nil {
		return "", nil, err
	}
	return keys[0].ID, keys[0].key, nil
}

// Lookup is the key of id while it is current or within its grace.
func (r *Ring) Lookup(ctx context.Context, id string) ([]byte, bool, error) {
	keys, err := r.read(ctx)
	if err != nil {
		return nil, false, err
	}
	now := r.now()
	for i, k := range keys {
		if k.ID == id && (i == 0 || now.Before(*k.Until)) {
			return k.key, true, nil
		}
	}
	return nil, false, nil
}

// Rotate makes a new key current. Tokens signed with the keys before it
// are accepted for grace more (0: refused at once, on every node within
// about a second); a key already retiring keeps the earlier of its end
// and that.
func (r *Ring) Rotate(ctx context.Context, grace time.Duration) (string, error) {
	if grace < 0 || grace > MaxTTL*time.Second {
		return "", domain.E("rotate playback key", domain.Invalid, "the grace period is from 0 to %s, the longest a token lives (got %s)", MaxTTL*time.Second, grace)
	}
	for range 5 {
		old, rev, err := r.load(ctx)
		if err != nil {
			return "", err
		}
		if len(old) == 0 && r.readOnly {
			return "", domain.E("rotate playback key", domain.Unavailable, "there are no playback keys yet: start kino serve first, which makes them")
		}
		k, err := r.newKey()
		if err != nil {
			return "", err
		}
		until := r.now().Add(grace).UTC()
		keys := []ringKey{k}
		if grace > 0 {
			for _, o := range old {
				if o.Until == nil || until.Before(*o.Until) {
					o.Until = &until
				}
				keys = append(keys, o)
			}
		}
		if err := r.save(ctx, keys, rev); errors.Is(err, errChanged) {
			continue
		} else if err != nil {
			return "", err
		}
		r.mu.Lock()
		r.keys, r.readAt = keys, r.now()
		r.mu.Unlock()
		return k.ID, nil
	}
	return "", domain.E("rotate playback key", domain.Unavailable, "the playback key ring keeps changing; retry")
}

// List describes the keys tokens are accepted from, the current first,
// as stored now.
func (r *Ring) List(ctx context.Context) ([]KeyInfo, error) {
	keys, err := r.fetch(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]KeyInfo, len(keys))
	for i, k := range keys {
		out[i] = KeyInfo{ID: k.ID, Created: k.Created, Current: i == 0, Until: k.Until}
	}
	return slices.Clip(out), nil
}
