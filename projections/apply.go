package projections

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
)

// apply folds one event into the read models inside a batch's
// transaction. It has no side effects outside it, so it may run again on a
// rebuild from sequence 1.
func apply(b *batch, e domain.Event) error {
	tx := b.tx
	switch d := e.Data.(type) {
	case domain.UploadAccepted:
		if _, ok, err := b.video(e.AggregateID); err != nil || ok {
			return err // an upload is accepted once
		}
		cv := b.newVideo()
		cv.v = Video{
			ID: e.AggregateID, Account: d.Account, Filename: d.Filename, Ext: d.Ext,
			Status: domain.StatusPending, OriginalSize: d.OriginalSize, Resolutions: []string{},
			Collection: d.Collection, CollectionName: d.CollectionName,
			CreatedAt: e.OccurredAt, UpdatedAt: e.OccurredAt, CreatedSeq: e.Seq,
			PlaybackPolicy: d.PlaybackPolicy.OrPublic(), WantsDownload: d.Download, ThumbnailTime: d.ThumbnailTime,
		}
		cv.v.setDetails(d.Details())
		b.videos[e.AggregateID] = cv
		return b.changeCollection(d.Account, d.Collection, func(c *Collection) { c.VideoCount++ })
	case domain.TranscodeStarted:
		return b.changeVideo(e, func(v *Video) { v.Status, v.Playable = domain.StatusProcessing, false })
	case domain.TranscodePlayable:
		return b.changeVideo(e, func(v *Video) { v.Playable = v.Status == domain.StatusProcessing })
	case domain.TranscodeRetried:
		return b.changeVideo(e, func(v *Video) {
			v.Status, v.ErrorMessage, v.Playable = domain.StatusPending, nil, false
		})
	case domain.PlaybackPolicyChanged:
		return b.changeVideo(e, func(v *Video) { v.PlaybackPolicy = d.Policy.OrPublic() })
	case domain.VideoDetailsChanged:
		return b.changeVideo(e, func(v *Video) { v.setDetails(d.Details()) })
	case domain.ThumbnailRequested:
		return b.changeVideo(e, func(v *Video) { at := d.At; v.ThumbnailTime = &at })
	case domain.ThumbnailChanged:
		return b.changeVideo(e, func(v *Video) { v.Animated = v.Animated || d.Animated })
	case domain.TranscodeSucceeded:
		return b.changeVideo(e, func(v *Video) {
			dur, size := d.Duration, d.ProcessedSize
			v.Status, v.Duration, v.ProcessedSize, v.ErrorMessage = domain.StatusCompleted, &dur, &size, nil
			v.Playable, v.Storyboard, v.Download, v.Animated = false, d.Storyboard, d.Download, d.Animated
			v.Width, v.Height = d.Width, d.Height
			v.Resolutions = d.Resolutions // events are never changed
			if v.Resolutions == nil {
				v.Resolutions = []string{}
			}
		})
	case domain.TranscodeFailed:
		return b.changeVideo(e, func(v *Video) {
			// The attempt's growing playlist grows no more: no
			// playlistUrl until the next attempt is playable.
			v.Playable = false
			if d.Final {
				reason := d.Reason
				v.Status, v.ErrorMessage = domain.StatusFailed, &reason
			}
		})
	case domain.TranscodeInterrupted:
		// The job comes back for another attempt: still PROCESSING, but
		// not playable until that attempt is.
		return b.changeVideo(e, func(v *Video) { v.Playable = false })
	case domain.CaptionTrackAdded, domain.CaptionTrackRequested, domain.CaptionTrackReady, domain.CaptionTrackFailed, domain.CaptionTrackRemoved:
		return b.applyCaption(e)
	case domain.VideoDeleted:
		cv, ok, err := b.video(e.AggregateID)
		if err != nil || !ok {
			return err
		}
		cv.deleted = true
		for _, c := range cv.v.Captions {
			b.w.del(bCaptions, b.key(cv.v.ID, c.ID))
		}
		// Clamped: a video uploaded while its collection was being deleted
		// may outlive it and be counted by neither the old nor a new one.
		return b.changeCollection(cv.v.Account, cv.v.Collection, func(c *Collection) { c.VideoCount = max(0, c.VideoCount-1) })

	case domain.CollectionCreated:
		b.collections[string(key(d.Account, d.Slug))] = &cachedCollection{c: Collection{
			Account: d.Account, Slug: d.Slug, Name: d.Name, CreatedAt: e.OccurredAt, UpdatedAt: e.OccurredAt,
			PlaybackPolicy: d.PlaybackPolicy.OrPublic(), Downloads: !d.NoDownloads,
		}, live: true}
		return nil
	case domain.CollectionSettingsChanged:
		return b.changeCollection(d.Account, d.Slug, func(c *Collection) {
			c.PlaybackPolicy, c.Downloads, c.UpdatedAt = d.PlaybackPolicy.OrPublic(), d.Downloads, e.OccurredAt
			c.EmbedOrigins = d.EmbedOrigins
		})
	case domain.CollectionRenamed:
		if err := b.changeCollection(d.Account, d.Slug, func(c *Collection) { c.Name, c.UpdatedAt = d.Name, e.OccurredAt }); err != nil {
			return err
		}
		// Rare: write the cached videos out, then rename through the index.
		b.allVideos = true
		if err := b.flushVideos(); err != nil {
			return err
		}
		return renameInVideos(tx, d.Account, d.Slug, d.Name)
	case domain.CollectionDeleted:
		b.collections[string(key(d.Account, d.Slug))] = &cachedCollection{live: false}
		return nil

	case domain.AccountCreated:
		return putJSON(tx.Bucket(bAccounts), []byte(e.AggregateID), Account{Slug: e.AggregateID, Plan: d.Plan, CreatedAt: e.OccurredAt})
	case domain.PlanChanged:
		b := tx.Bucket(bAccounts)
		a, ok, err := getJSON[Account](b, []byte(e.AggregateID))
		if err != nil || !ok {
			return err
		}
		a.Plan = d.Plan
		return putJSON(b, []byte(e.AggregateID), a)
	case domain.StorageQuotaChanged:
		b := tx.Bucket(bAccounts)
		a, ok, err := getJSON[Account](b, []byte(e.AggregateID))
		if err != nil || !ok {
			return err
		}
		a.StorageQuota = d.Bytes
		return putJSON(b, []byte(e.AggregateID), a)
	case domain.KeyIssued:
		if err := tx.Bucket(bKeysByAcct).Put(key(e.AggregateID, d.KeyID), []byte(d.Hash)); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bKeys), []byte(d.Hash), Key{
			ID: d.KeyID, Account: e.AggregateID, Hash: d.Hash, Prefix: d.Prefix, Label: d.Label, CreatedAt: e.OccurredAt,
		})
	case domain.KeyRevoked:
		if err := tx.Bucket(bKeysByAcct).Delete(key(e.AggregateID, d.KeyID)); err != nil {
			return err
		}
		return tx.Bucket(bKeys).Delete([]byte(d.Hash))
	case domain.SigningKeyCreated:
		return putJSON(tx.Bucket(bSigningKeys), key(e.AggregateID, d.KeyID), SigningKey{
			ID: d.KeyID, Account: e.AggregateID, Algorithm: d.Algorithm, PublicKey: d.PublicKey, Label: d.Label, CreatedAt: e.OccurredAt,
		})
	case domain.SigningKeyDeleted:
		return tx.Bucket(bSigningKeys).Delete(key(e.AggregateID, d.KeyID))

	case domain.UserCreated:
		u := User{ID: d.UserID, Key: e.AggregateID, Email: d.Email, Account: d.Account, Operator: d.Operator,
			LinkHash: d.LinkHash, LinkExpiresAt: d.LinkExpiresAt, CreatedAt: e.OccurredAt}
		if err := tx.Bucket(bUserEmails).Put([]byte(d.Email), []byte(d.UserID)); err != nil {
			return err
		}
		if d.Account != "" {
			if err := tx.Bucket(bUserAccts).Put(key(d.Account, d.UserID), []byte(d.UserID)); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bUserLinks).Put([]byte(d.LinkHash), []byte(d.UserID)); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bUsers), []byte(d.UserID), u)
	case domain.PasswordLinkIssued:
		return changeUser(tx, d.UserID, func(u *User) error {
			if u.LinkHash != "" {
				if err := tx.Bucket(bUserLinks).Delete([]byte(u.LinkHash)); err != nil {
					return err
				}
			}
			u.LinkHash, u.LinkExpiresAt = d.LinkHash, d.LinkExpiresAt
			return tx.Bucket(bUserLinks).Put([]byte(d.LinkHash), []byte(u.ID))
		})
	case domain.PasswordSet:
		return changeUser(tx, d.UserID, func(u *User) error {
			u.PasswordSet = true
			u.PasswordGen++
			if d.LinkHash != "" && d.LinkHash == u.LinkHash {
				u.LinkHash, u.LinkExpiresAt = "", time.Time{}
				return tx.Bucket(bUserLinks).Delete([]byte(d.LinkHash))
			}
			return nil
		})
	case domain.UserRemoved:
		u, ok, err := getJSON[User](tx.Bucket(bUsers), []byte(d.UserID))
		if err != nil || !ok {
			return err
		}
		if u.LinkHash != "" {
			if err := tx.Bucket(bUserLinks).Delete([]byte(u.LinkHash)); err != nil {
				return err
			}
		}
		if u.Account != "" {
			if err := tx.Bucket(bUserAccts).Delete(key(u.Account, u.ID)); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bUserEmails).Delete([]byte(u.Email)); err != nil {
			return err
		}
		return tx.Bucket(bUsers).Delete([]byte(u.ID))

	case domain.WebhookSubscribed:
		return putJSON(tx.Bucket(bWebhooks), key(d.Account, e.AggregateID), Webhook{
			ID: e.AggregateID, Account: d.Account, URL: d.URL, Events: d.Events, SealedSecret: d.SealedSecret, CreatedAt: e.OccurredAt,
		})
	case domain.WebhookDeleted:
		if err := deletePrefix(tx.Bucket(bDeliveries), append(key(e.AggregateID), 0)); err != nil {
			return err
		}
		if err := deletePrefix(tx.Bucket(bRedelivered), append(key(e.AggregateID), 0)); err != nil {
			return err
		}
		return tx.Bucket(bWebhooks).Delete(key(d.Account, e.AggregateID))
	case domain.DeliverySucceeded:
		if tx.Bucket(bWebhooks).Get(key(d.Account, e.AggregateID)) == nil {
			return nil // an attempt that ended after the subscription was deleted
		}
		return putJSON(tx.Bucket(bDeliveries), seqKey(key(e.AggregateID), e.Seq), Delivery{
			WebhookID: e.AggregateID, DeliveryID: d.DeliveryID, EventID: d.EventID, Kind: d.Kind, VideoID: d.VideoID,
			Attempt: d.Attempt, Succeeded: true, StatusCode: d.StatusCode, DurationMs: d.DurationMs, At: e.OccurredAt,
		})
	case domain.DeliveryFailed:
		if tx.Bucket(bWebhooks).Get(key(d.Account, e.AggregateID)) == nil {
			return nil
		}
		return putJSON(tx.Bucket(bDeliveries), seqKey(key(e.AggregateID), e.Seq), Delivery{
			WebhookID: e.AggregateID, DeliveryID: d.DeliveryID, EventID: d.EventID, Kind: d.Kind, VideoID: d.VideoID,
			Attempt: d.Attempt, GaveUp: d.GaveUp, StatusCode: d.StatusCode, Error: d.Error, DurationMs: d.DurationMs, At: e.OccurredAt,
		})
	case domain.DeliveryRedelivered:
		if tx.Bucket(bWebhooks).Get(key(d.Account, e.AggregateID)) == nil {
			return nil
		}
		return putJSON(tx.Bucket(bRedelivered), key(e.AggregateID, d.RedeliveryOf), Redelivery{
			WebhookID: e.AggregateID, RedeliveryOf: d.RedeliveryOf, DeliveryID: d.DeliveryID, At: e.OccurredAt,
		})
	}
	return nil
}

// changeUser applies change to a live user.
func changeUser(tx *bolt.Tx, id string, change func(*User) error) error {
	b := tx.Bucket(bUsers)
	u, ok, err := getJSON[User](b, []byte(id))
	if err != nil || !ok {
		return err
	}
	if err := change(&u); err != nil {
		return err
	}
	return putJSON(b, []byte(id), u)
}

// writes collects a batch's puts and deletes per bucket, to apply them in
// key order: bbolt inserts far faster into neighbouring pages than at
// random (sorting the records took a rebuild from 87k to 118k events/s).
type writes map[string][]write

type write struct {
	k, v []byte // v nil: delete
	n    int    // order of the call, for writes to the same key
}

func (w writes) reset() {
	for name, ops := range w {
		clear(ops)
		w[name] = ops[:0]
	}
}

func (w writes) put(bucket, k, v []byte) { w.add(bucket, write{k: k, v: v}) }
func (w writes) del(bucket, k []byte)    { w.add(bucket, write{k: k}) }

func (w writes) add(bucket []byte, op write) {
	ops := w[string(bucket)]
	op.n = len(ops)
	w[string(bucket)] = append(ops, op)
}

// apply writes the lists in key order and empties them (a rename flushes
// the videos mid-batch, and they must not be written again at its end).
func (w writes) apply(tx *bolt.Tx) error {
	defer w.reset()
	for name, ops := range w {
		// pdqsort with the call order as tie-break: a stable sort's merges
		// cost a rebuild a tenth of its time.
		slices.SortFunc(ops, func(a, b write) int {
			if c := bytes.Compare(a.k, b.k); c != 0 {
				return c
			}
			return a.n - b.n
		})
		b := tx.Bucket([]byte(name))
		for _, op := range ops {
			var err error
			if op.v == nil {
				err = b.Delete(op.k)
			} else {
				err = b.Put(op.k, op.v)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// putVideo stores v and moves its status index entry from oldStatus ("":
// a new video, indexed by account and collection too).
func (s *scratch) putVideo(v *Video, oldStatus domain.Status) error {
	raw, err := s.marshal(v)
	if err != nil {
		return err
	}
	id := s.key(v.ID)
	s.w.put(bVideos, id, raw)
	if oldStatus == "" {
		s.w.put(bByAccount, s.seqKey(v.CreatedSeq, v.Account), id)
		s.w.put(bByColl, s.seqKey(v.CreatedSeq, v.Account, v.Collection), id)
	} else if oldStatus != v.Status {
		s.w.del(bByStatus, s.seqKey(v.CreatedSeq, v.Account, string(oldStatus)))
	}
	s.w.put(bByStatus, s.seqKey(v.CreatedSeq, v.Account, string(v.Status)), id)
	return nil
}

func (s *scratch) deleteVideo(v Video) {
	s.w.del(bVideos, s.key(v.ID))
	s.w.del(bByAccount, s.seqKey(v.CreatedSeq, v.Account))
	s.w.del(bByColl, s.seqKey(v.CreatedSeq, v.Account, v.Collection))
	s.w.del(bByStatus, s.seqKey(v.CreatedSeq, v.Account, string(v.Status)))
}

func renameInVideos(tx *bolt.Tx, account, slug, name string) error {
	videos := tx.Bucket(bVideos)
	prefix := append(key(account, slug), 0)
	c := tx.Bucket(bByColl).Cursor()
	for k, id := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, id = c.Next() {
		v, ok, err := getJSON[Video](videos, id)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		v.CollectionName = name
		if err := putJSON(videos, id, v); err != nil {
			return err
		}
	}
	return nil
}

func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// applyBatch applies events and stores the last one's sequence as the
// checkpoint in the same transaction. Events at or below the checkpoint
// are skipped, so a redelivered batch is never applied twice.
func applyBatch(tx *bolt.Tx, events []domain.Event, s *scratch) error {
	// Keys of these buckets mostly grow (ULIDs, sequences): fill pages
	// instead of splitting them in half, or a rebuild doubles the file.
	for _, name := range [][]byte{bVideos, bByAccount, bByColl, bDeliveries} {
		tx.Bucket(name).FillPercent = 0.9
	}
	s.reset()
	b := &batch{tx: tx, scratch: s}
	cp := readCheckpoint(tx)
	for _, e := range events {
		if e.Seq <= cp {
			continue
		}
		if err := apply(b, e); err != nil {
			return fmt.Errorf("apply %s %s (seq %d): %w", e.Type, e.AggregateID, e.Seq, err)
		}
		cp = e.Seq
	}
	if err := b.flush(); err != nil {
		return err
	}
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], cp)
	return tx.Bucket(bMeta).Put(kCheckpoint, buf[:])
}

// batch caches the video and collection records a batch of events touches,
// so each is decoded and encoded once per batch however many events change
// it (an upload, its transcode start and its success usually share one).
type batch struct {
	tx *bolt.Tx
	*scratch
}

// scratch is the memory one writer (the follower, a rebuild) reuses from
// batch to batch. Records are encoded and index keys built into its arena;
// bbolt copies them into its pages when the transaction commits, so the
// next batch writes over them. Allocation is what drives the GC, and
// every GC cycle marks the embedded NATS server's per-subject index.
type scratch struct {
	arena
	enc         *json.Encoder // writes into the arena
	videos      map[string]*cachedVideo
	collections map[string]*cachedCollection
	usage       map[string]*Usage // per account: what the batch's videos added (negative: removed)
	w           writes
	slab        [][]cachedVideo // where the videos of the cache live
	used        int             // of the slab's entries
	// written are the ids of the video records the batch wrote or
	// deleted, and writers their accounts; allVideos: it rewrote others
	// too (a collection renamed).
	written   []string
	writers   []string
	allVideos bool
}

const slabChunk = 1024

// newVideo returns a zero cachedVideo from the slab, valid until reset.
func (s *scratch) newVideo() *cachedVideo {
	i, j := s.used/slabChunk, s.used%slabChunk
	if i == len(s.slab) {
		s.slab = append(s.slab, make([]cachedVideo, slabChunk))
	}
	s.used++
	cv := &s.slab[i][j]
	*cv = cachedVideo{}
	return cv
}

func newScratch() *scratch {
	s := &scratch{videos: map[string]*cachedVideo{}, collections: map[string]*cachedCollection{}, usage: map[string]*Usage{}, w: writes{}}
	s.enc = json.NewEncoder(&s.arena)
	return s
}

// reset makes everything free again; call it only once the transaction
// that wrote the last batch has ended.
func (s *scratch) reset() {
	s.arena.reset()
	s.used = 0
	clear(s.videos)
	clear(s.collections)
	clear(s.usage)
	s.written, s.writers, s.allVideos = s.written[:0], s.writers[:0], false
	s.w.reset() // after a failed batch
}

// marshal encodes v as encoding/json's Marshal would (same bytes) into
// the arena.
func (s *scratch) marshal(v any) ([]byte, error) {
	if err := s.enc.Encode(v); err != nil {
		return nil, err
	}
	return s.last[:len(s.last)-1], nil // Encode ends the value with a newline
}

// key builds key(parts...) in the arena.
func (s *scratch) key(parts ...string) []byte {
	return appendKey(s.alloc(keyLen(parts))[:0], parts...)
}

// seqKey builds seqKey(key(parts...), seq) in the arena.
func (s *scratch) seqKey(seq uint64, parts ...string) []byte {
	k := appendKey(s.alloc(keyLen(parts) + 9)[:0], parts...)
	return binary.BigEndian.AppendUint64(append(k, 0), seq)
}

// arena hands out byte slices from chunks that reset makes free again.
type arena struct {
	chunks [][]byte
	cur    int
	last   []byte // what Write copied last
}

const arenaChunk = 1 << 20

// alloc returns n bytes, valid until reset.
func (a *arena) alloc(n int) []byte {
	for {
		if a.cur == len(a.chunks) {
			a.chunks = append(a.chunks, make([]byte, 0, max(arenaChunk, n)))
		}
		c := a.chunks[a.cur]
		if l := len(c); cap(c)-l >= n {
			a.chunks[a.cur] = c[:l+n]
			return c[l : l+n : l+n]
		}
		a.cur++
	}
}

// Write copies p into the arena (json.Encoder writes each value at once).
func (a *arena) Write(p []byte) (int, error) {
	a.last = a.alloc(len(p))
	copy(a.last, p)
	return len(p), nil
}

func (a *arena) reset() {
	for i := range a.chunks {
		a.chunks[i] = a.chunks[i][:0]
	}
	a.cur, a.last = 0, nil
}

type cachedVideo struct {
	v           Video
	stored      bool           // in the file when the batch began
	origStatus  domain.Status  // its status then (for the status index)
	origBytes   int64          // and its stored bytes then (for the usage)
	origDetails domain.Details // and its details then (for the search indexes)
	deleted     bool
}

type cachedCollection struct {
	c    Collection
	live bool // false: deleted (or never created)
}

// video returns the live video id, from the cache or the file.
func (b *batch) video(id string) (*cachedVideo, bool, error) {
	if cv, ok := b.videos[id]; ok {
		return cv, !cv.deleted, nil
	}
	v, ok, err := getJSON[Video](b.tx.Bucket(bVideos), []byte(id))
	if err != nil || !ok {
		return nil, false, err
	}
	cv := b.newVideo()
	cv.v, cv.stored, cv.origStatus, cv.origBytes, cv.origDetails = v, true, v.Status, storedBytes(&v), v.Details()
	b.videos[id] = cv
	return cv, true, nil
}

// changeVideo applies change to a live video. Events of a video the read
// models do not hold (deleted) change nothing.
func (b *batch) changeVideo(e domain.Event, change func(*Video)) error {
	cv, ok, err := b.video(e.AggregateID)
	if err != nil || !ok {
		return err
	}
	change(&cv.v)
	cv.v.UpdatedAt = e.OccurredAt
	return nil
}

// applyCaption folds a caption event into its video's tracks, keeping a
// READY track's cues beside the video record.
func (b *batch) applyCaption(e domain.Event) error {
	cv, ok, err := b.video(e.AggregateID)
	if err != nil || !ok {
		return err
	}
	v := &cv.v
	v.UpdatedAt = e.OccurredAt
	tracks := slices.Clone(v.Captions) // the stored record's slice is shared with nothing, a cached one may be
	switch d := e.Data.(type) {
	case domain.CaptionTrackAdded:
		tracks = append(clearDefault(tracks, d.Default), Caption{ID: d.Track, Language: d.Language, Label: d.Label, Default: d.Default,
			Source: domain.CaptionUploaded, Status: domain.CaptionReady, Cues: d.Cues, CreatedAt: e.OccurredAt})
		b.w.put(bCaptions, b.key(v.ID, d.Track), []byte(d.VTT))
	case domain.CaptionTrackRequested:
		tracks = append(clearDefault(tracks, d.Default), Caption{ID: d.Track, Language: d.Language, Label: d.Label, Default: d.Default,
			Source: domain.CaptionGenerated, Status: domain.CaptionPending, CreatedAt: e.OccurredAt})
	case domain.CaptionTrackReady:
		for i := range tracks {
			if tracks[i].ID == d.Track {
				tracks[i].Status, tracks[i].Cues = domain.CaptionReady, d.Cues
				b.w.put(bCaptions, b.key(v.ID, d.Track), []byte(d.VTT))
			}
		}
	case domain.CaptionTrackFailed:
		for i := range tracks {
			if tracks[i].ID == d.Track {
				tracks[i].Status, tracks[i].ErrorMessage = domain.CaptionFailed, d.Reason
			}
		}
	case domain.CaptionTrackRemoved:
		tracks = slices.DeleteFunc(tracks, func(c Caption) bool { return c.ID == d.Track })
		b.w.del(bCaptions, b.key(v.ID, d.Track))
	}
	if len(tracks) == 0 {
		tracks = nil // a record without tracks is written as one that never had any
	}
	v.Captions = tracks
	return nil
}

// clearDefault is tracks with none of them the default, when a new
// default comes.
func clearDefault(tracks []Caption, newDefault bool) []Caption {
	for i := range tracks {
		tracks[i].Default = tracks[i].Default && !newDefault
	}
	return tracks
}

func (b *batch) changeCollection(account, slug string, change func(*Collection)) error {
	k := string(key(account, slug))
	cc, ok := b.collections[k]
	if !ok {
		c, found, err := getJSON[Collection](b.tx.Bucket(bCollections), []byte(k))
		if err != nil {
			return err
		}
		cc = &cachedCollection{c: c, live: found}
		b.collections[k] = cc
	}
	if cc.live {
		change(&cc.c)
	}
	return nil
}

// countUsage adds what the batch changed of cv to its account's usage:
// it takes away what the video counted when the batch began (if it was
// stored) and adds what it counts now (if it is still live).
func (b *batch) countUsage(cv *cachedVideo) {
	u := b.usage[cv.v.Account]
	if u == nil {
		u = &Usage{}
		b.usage[cv.v.Account] = u
	}
	if cv.stored {
		u.add(cv.origStatus, -1, -cv.origBytes)
	}
	if !cv.deleted {
		u.add(cv.v.Status, 1, storedBytes(&cv.v))
	}
}

// flushUsage writes the usage of the accounts the batch changed.
func (b *batch) flushUsage() error {
	bucket := b.tx.Bucket(bUsage)
	for account, d := range b.usage {
		u, _, err := getJSON[Usage](bucket, []byte(account))
		if err != nil {
			return err
		}
		u.Pending += d.Pending
		u.Processing += d.Processing
		u.Completed += d.Completed
		u.Failed += d.Failed
		u.StorageBytes += d.StorageBytes
		if u == (Usage{}) {
			// No record for an account without videos, however the
			// events were batched: a rebuild must write the same file.
			if err := bucket.Delete([]byte(account)); err != nil {
				return err
			}
			continue
		}
		raw, err := b.marshal(&u)
		if err != nil {
			return err
		}
		if err := bucket.Put(b.key(account), raw); err != nil {
			return err
		}
	}
	clear(b.usage)
	return nil
}

// flushVideos writes the cached videos and their index entries.
func (b *batch) flushVideos() error {
	for id, cv := range b.videos {
		b.written = append(b.written, id)
		if len(b.writers) == 0 || b.writers[len(b.writers)-1] != cv.v.Account {
			b.writers = append(b.writers, cv.v.Account)
		}
		if cv.stored || !cv.deleted {
			b.countUsage(cv)
		}
		var err error
		switch {
		case cv.deleted && cv.stored:
			stored := cv.v
			stored.Status = cv.origStatus
			b.deleteVideo(stored)
			b.indexDetails(&cv.v, cv.origDetails, false)
		case cv.deleted:
			// created and deleted within the batch: nothing was written
		case cv.stored:
			err = b.putVideo(&cv.v, cv.origStatus)
			if d := cv.v.Details(); err == nil && !d.Equal(cv.origDetails) {
				b.indexDetails(&cv.v, cv.origDetails, false)
				b.indexDetails(&cv.v, d, true)
			}
		default:
			err = b.putVideo(&cv.v, "")
			b.indexDetails(&cv.v, cv.v.Details(), true)
		}
		if err != nil {
			return err
		}
	}
	clear(b.videos)
	return b.w.apply(b.tx)
}

func (b *batch) flush() error {
	if err := b.flushVideos(); err != nil {
		return err
	}
	if err := b.flushUsage(); err != nil {
		return err
	}
	bucket := b.tx.Bucket(bCollections)
	for k, cc := range b.collections {
		var err error
		if cc.live {
			var raw []byte
			if raw, err = b.marshal(&cc.c); err == nil {
				err = bucket.Put(b.key(k), raw)
			}
		} else {
			err = bucket.Delete([]byte(k))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
