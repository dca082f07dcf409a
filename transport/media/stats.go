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
// costs the store one or two descriptions a second instead of one a request: a
// round trip to the stream's leader with JetStream, a HEAD with S3.
// Segments keep their bytes once published (a name is published again only
// by a retried transcode), and a deleted video's requests end at /cdn's
// check of the read models before they reach the store, so the one thing a
// remembered description can cost is a segment of a retried video served
// as it was, at most statFor late. Playlists, thumbnails and the rest are
// described by the store on every read: they are replaced in place.
//
// No request waits on the store while a segment is being played: in the
// second half of statFor one description is asked in the background, and
// a crowd that finds none waits on a single one (a flight), not one each:
// 200 players asking a segment together, each with a HEAD to S3 once a
// second, doubled the tail of /cdn's latency.
//
// What this node publishes or removes it sees at once: those calls forget
// the video's descriptions and flights (forget), and a description read
// from the store while one ran is not kept (gen). Other nodes' changes are seen within
// statFor: a retried or redelivered transcode that publishes a segment
// again, or a deletion made on another node while this node's read models
// have not applied it yet (/cdn's check then still finds the video).
type stats struct {
	mu      sync.Mutex
	m       map[string]statEntry
	flights map[string]*statFlight // descriptions being asked of the store, one per name
	gen     [statStripes]uint64    // forgets, per stripe of video ids: one video's publishing does not hold back the others'
	every   uint64                 // forgets of every video
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
	info       ObjectInfo
	at         time.Time // when the store was asked
	refreshing bool      // a description is being asked ahead of at+statFor
}

// statFlight is one description asked of the store, which every request
// for the name waits on instead of asking again: at the end of statFor, or
// when a segment first becomes popular, a crowd of players asks at once.
type statFlight struct {
	done    chan struct{}
	info    ObjectInfo
	err     error
	waiting int                // requests waiting on it
	cancel  context.CancelFunc // ends the asking when the last request waiting gives up; nil: asked ahead, for no one
}

const (
	// statFor is how long a segment's description is used. A request in
	// its second half asks the store again in the background, so a
	// segment being played is described before its description runs out
	// and no request waits on the store.
	statFor = time.Second
	// statsMax bounds the descriptions kept; at the bound the stale ones
	// go, then all if none is.
	statsMax = 8192
	// statWait bounds a description asked of the store. A description
	// asked for waiting requests ends when the last of them does (so a
	// client cannot leave the store asked for names it gave up on); one
	// asked ahead does not.
	statWait = 10 * time.Second
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
	s.mu.Lock()
	e, ok := s.m[name]
	if ok && now.Sub(e.at) < statFor {
		if now.Sub(e.at) >= statFor/2 && !e.refreshing {
			e.refreshing = true
			s.m[name] = e
			s.fly(obj, name, now, false)
		}
		s.mu.Unlock()
		return e.info, nil
	}
	f := s.fly(obj, name, now, true)
	f.waiting++
	s.mu.Unlock()
	select {
	case <-f.done:
		return f.info, f.err
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if f.waiting--; f.waiting == 0 && f.cancel != nil {
			f.cancel()
			if s.flights[name] == f { // the next request asks again
				delete(s.flights, name)
			}
		}
		return ObjectInfo{}, ctx.Err()
	}
}

// fly is the description of name being asked of the store, asking it
// when none is (for the requests that will wait on it, or ahead); s.mu is
// held. What the store answers is kept, from now, unless the video was
// forgotten meanwhile.
func (s *stats) fly(obj ObjectStore, name string, now time.Time, waited bool) *statFlight {
	if f, ok := s.flights[name]; ok {
		return f
	}
	id, _, _ := strings.Cut(name, "/")
	st := stripe(id)
	gen, every := s.gen[st], s.every
	ctx, cancel := context.WithTimeout(context.Background(), statWait)
	f := &statFlight{done: make(chan struct{})}
	if waited {
		f.cancel = cancel
	}
	if s.flights == nil {
		s.flights = make(map[string]*statFlight)
	}
	s.flights[name] = f
	go func() {
		f.info, f.err = obj.Stat(ctx, name)
		cancel()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.flights[name] == f { // else forgotten, and asked again since
			delete(s.flights, name)
		}
		close(f.done)
		if f.err != nil || s.gen[st] != gen || s.every != every {
			// Not kept: a failure is asked again by the next request,
			// and the video may have changed since the store answered.
			if e, ok := s.m[name]; ok && e.refreshing {
				e.refreshing = false
				s.m[name] = e
			}
			return
		}
		s.keep(name, statEntry{info: f.info, at: now}, now)
	}()
	return f
}

// keep remembers e under name; s.mu is held.
func (s *stats) keep(name string, e statEntry, now time.Time) {
	if s.m == nil {
		s.m = make(map[string]statEntry)
	}
	if _, ok := s.m[name]; !ok && len(s.m) >= statsMax {
		for k, e := range s.m {
			if now.Sub(e.at) >= statFor {
				delete(s.m, k)
			}
		}
		if len(s.m) >= statsMax {
			clear(s.m)
		}
	}
	s.m[name] = e
}

// forget drops the descriptions of video id's segments (every video's
// when id is ""), once this node has changed its objects.
func (s *stats) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" {
		s.every++
		clear(s.m)
		clear(s.flights) // their answers may predate the change: the next request asks again
		return
	}
	s.gen[stripe(id)]++
	for k := range s.m {
		if strings.HasPrefix(k, id+"/") {
			delete(s.m, k)
		}
	}
	for k := range s.flights {
		if strings.HasPrefix(k, id+"/") {
			delete(s.flights, k)
		}
	}
}
