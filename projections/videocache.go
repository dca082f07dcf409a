package projections

import (
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Video returns a video by id, whatever its account. The records it reads
// are kept (DB.caches.videos) for the requests that read one video again
// and again (a client polls its upload every 2 s, players and apps read a
// finished one): a map lookup instead of a bbolt read and a JSON decode.
// A commit forgets the records it wrote (every one, when a collection's
// rename rewrote its videos). Callers get copies: what they change stays
// theirs.
func (db *DB) Video(id string) (Video, bool, error) {
	v, gen, hit := db.caches.videos.get(id)
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
	db.caches.videos.put(id, v.clone(), gen)
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
