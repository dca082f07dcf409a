package media

import (
	"context"
	"hash/fnv"
	"path"
	"strings"
	"sync"
	"time"
)

// stats remembers for a short while (statFor) what the object store said
// of a video's HLS segments, so a segment asked by every player of a video
// costs the store one description a second instead of one a request: a
// round trip to the stream's leader with JetStream, a HEAD with S3.
// Segments keep their bytes once published (a name is published again only
// by a retried transcode), and a deleted video's requests end at /cdn's
// check of the read models before they reach the store, so the one thing a
// remembered description can cost is a segment of a retried video served
// as it was, at most statFor late. Playlists, thumbnails and the rest are
// described by the store on every read: they are replaced in place.
//
// What this node publishes or removes it sees at once: those calls forget
// the video's descriptions (forget), and a description read from the store
// while one ran is not kept (gen). Other nodes' changes are seen within
// statFor: a retried or redelivered transcode that publishes a segment
// again, or a deletion made on another node while this node's read models
// have not applied it yet (/cdn's check then still finds the video).
type stats struct {
	mu    sync.Mutex
	m     map[string]statEntry
	gen   [statStripes]uint64 // forgets, per stripe of video ids: one video's publishing does not hold back the others'
	every uint64              // forgets of every video
}

// statStripes is how many counters the videos' forgets are spread over.
const statStripes = 64

// stripe is the counter of video id's forgets.
func stripe(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % statStripes)
}

type statEntry struct {
	info ObjectInfo
	at   time.Time
}

const (
	// statFor is how long a segment's description is used.
	statFor = time.Second
	// statsMax bounds the descriptions kept; at the bound the stale ones
	// go, then all if none is.
	statsMax = 8192
)

// immutable reports whether rel is an HLS segment (a media segment or an
// initialization segment), whose bytes do not change once published.
func immutable(rel string) bool {
	base := path.Base(rel)
	return strings.HasPrefix(rel, "hls/") && (strings.HasPrefix(base, "seg_") || strings.HasPrefix(base, "init"))
}

// stat describes name (rel of a video), from memory when it is a segment
// described less than statFor ago.
func (s *stats) stat(ctx context.Context, obj ObjectStore, name, rel string, now time.Time) (ObjectInfo, error) {
	if !immutable(rel) {
		return obj.Stat(ctx, name)
	}
	id, _, _ := strings.Cut(name, "/")
	st := stripe(id)
	s.mu.Lock()
	e, ok := s.m[name]
	gen, every := s.gen[st], s.every
	s.mu.Unlock()
	if ok && now.Sub(e.at) < statFor {
		return e.info, nil
	}
	info, err := obj.Stat(ctx, name)
	if err != nil {
		return info, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen[st] != gen || s.every != every {
		return info, nil // the video may have changed since the store answered
	}
	if s.m == nil {
		s.m = make(map[string]statEntry)
	}
	if len(s.m) >= statsMax {
		for k, e := range s.m {
			if now.Sub(e.at) >= statFor {
				delete(s.m, k)
			}
		}
		if len(s.m) >= statsMax {
			clear(s.m)
		}
	}
	s.m[name] = statEntry{info: info, at: now}
	return info, nil
}

// forget drops the descriptions of video id's segments (every video's
// when id is ""), once this node has changed its objects.
func (s *stats) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" {
		s.every++
		clear(s.m)
		return
	}
	s.gen[stripe(id)]++
	for k := range s.m {
		if strings.HasPrefix(k, id+"/") {
			delete(s.m, k)
		}
	}
}
