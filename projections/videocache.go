package projections

import (
	"maps"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
)

// videoCache keeps video records as last read from the file, for the
// requests that read one video again and again (a client polls its
// upload every 2 s, players and apps read a finished one): a map lookup
// instead of a bbolt read and a JSON decode. A commit forgets the records
// it wrote (every one, when a collection's rename rewrote its videos)
// before its waiters are woken, and a rebuild's swap and a verify's
// catch-up do too, so a read after a write never sees the record before
// it. Callers get copies: what they change stays theirs.
type videoCache struct {
	mu      sync.RWMutex
	gen     uint64 // counts the forgettings: a record read before one is not kept
	entries map[string]Video
}

// maxVideoEntries bounds the cache (a few MB): past it, it starts over.
const maxVideoEntries = 4096

// forget drops the records of ids (all of them with all).
func (c *videoCache) forget(ids []string, all bool) {
	if len(ids) == 0 && !all {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if all {
		clear(c.entries)
		return
	}
	for _, id := range ids {
		delete(c.entries, id)
	}
}

// Video returns a video by id, whatever its account.
func (db *DB) Video(id string) (Video, bool, error) {
	c := &db.videos
	c.mu.RLock()
	v, hit := c.entries[id]
	gen := c.gen
	c.mu.RUnlock()
	if hit {
		return v.clone(), true, nil
	}
	var ok bool
	err := db.view(func(tx *bolt.Tx) (err error) {
		v, ok, err = getJSON[Video](tx.Bucket(bVideos), []byte(id))
		return err
	})
	if err != nil || !ok {
		return Video{}, false, err
	}
	c.mu.Lock()
	if c.gen == gen {
		if c.entries == nil || len(c.entries) >= maxVideoEntries {
			c.entries = make(map[string]Video)
		}
		c.entries[id] = v.clone()
	}
	c.mu.Unlock()
	return v, true, nil
}

// clone is v with nothing shared: its slices, map and pointers are
// copies.
func (v Video) clone() Video {
	v.Duration = clonePtr(v.Duration)
	v.ProcessedSize = clonePtr(v.ProcessedSize)
	v.ErrorMessage = clonePtr(v.ErrorMessage)
	v.ThumbnailTime = clonePtr(v.ThumbnailTime)
	v.Resolutions = slices.Clone(v.Resolutions)
	v.Tags = slices.Clone(v.Tags)
	v.Metadata = maps.Clone(v.Metadata)
	v.Captions = slices.Clone(v.Captions)
	return v
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// keepCaches keeps the in-memory caches true to a batch just committed
// to the file; callers run it before the batch's waiters are woken.
func (db *DB) keepCaches(batch []domain.Event, s *scratch) {
	if touchesAuth(batch) {
		db.auth.reset()
	}
	db.videos.forget(s.written, s.allVideos)
	db.queue.forget(s.writers, s.allVideos)
}
