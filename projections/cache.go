package projections

import (
	"sync"

	"github.com/kino-video/kino/domain"
)

// cache keeps what requests read from the file again and again (API keys,
// video records, queue starts) in memory, by key, up to max entries
// (past them it starts over). Whoever commits a write forgets the keys it
// wrote before the write's waiters are woken, so a read after a write
// never answers what was there before it. gen counts the forgettings: a
// value read from the file before one is not kept, as it may be older
// than the write.
type cache[V any] struct {
	max     int
	mu      sync.RWMutex
	gen     uint64
	entries map[string]V
}

// get returns k's value if kept, and the generation to put with.
func (c *cache[V]) get(k string) (v V, gen uint64, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok = c.entries[k]
	return v, c.gen, ok
}

// put keeps v as k's value, unless something was forgotten since gen.
func (c *cache[V]) put(k string, v V, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.entries == nil || len(c.entries) >= c.max {
		c.entries = make(map[string]V)
	}
	c.entries[k] = v
}

// forget drops keys (everything with all).
func (c *cache[V]) forget(keys []string, all bool) {
	if len(keys) == 0 && !all {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if all {
		clear(c.entries)
		return
	}
	for _, k := range keys {
		delete(c.entries, k)
	}
}

// caches are the DB's.
type caches struct {
	auth   cache[authEntry] // Authenticate's, by key hash
	videos cache[Video]     // Video's, by id
	queue  cache[queued]    // QueuePositions', by account
}

func newCaches() caches {
	return caches{auth: cache[authEntry]{max: 10000}, videos: cache[Video]{max: 4096}, queue: cache[queued]{max: 4096}}
}

// forgetAll empties every cache (a file swapped in by a rebuild).
func (c *caches) forgetAll() {
	c.auth.forget(nil, true)
	c.videos.forget(nil, true)
	c.queue.forget(nil, true)
}

// keepCaches keeps the caches true to a batch just committed to the file;
// callers run it before the batch's waiters are woken. Any account event
// (a key issued or revoked, a plan changed) empties the keys' cache.
func (db *DB) keepCaches(batch []domain.Event, s *scratch) {
	if touchesAuth(batch) {
		db.caches.auth.forget(nil, true)
	}
	db.caches.videos.forget(s.written, s.allVideos)
	db.caches.queue.forget(s.writers, s.allVideos)
}
