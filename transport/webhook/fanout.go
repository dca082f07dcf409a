package webhook

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/transport/wire"
)

// Fanout turns finished videos into deliveries. It reads only the event
// stream (no read models), so any kino serve or kino worker can run it;
// they share one durable consumer.
//
// The delivery of an event at stream sequence S reflects the stream as of
// S: the body's Video is the video folded from its events up to S (a
// later delete or rename does not change it), and it goes to the
// account's subscriptions live at S (subscribed before S, not deleted
// before S). So fanning out the same event twice, in one process or two,
// enqueues the same bodies to the same subscriptions, and the delivery
// queue's Nats-Msg-Id drops the second copy.
type Fanout struct {
	cfg  Config
	subs *subscriptions
}

// NewFanout checks cfg; the fan-out needs the CDN URL of the API.
func NewFanout(cfg Config) (*Fanout, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.CDNURL == "" {
		return nil, errors.New("webhook fan-out: the CDN URL (--cdn-url) is required: webhook bodies carry media URLs")
	}
	subs := newSubscriptions(cfg.Store, func(ctx context.Context) (uint64, error) {
		return cfg.Queue.AckFloor(ctx, "", FanoutDurable)
	})
	return &Fanout{cfg: cfg, subs: subs}, nil
}

// FanoutTypes are the event types the fan-out consumes.
var FanoutTypes = []string{domain.TypeUploadAccepted, domain.TypeTranscodePlayable, domain.TypeTranscodeSucceeded,
	domain.TypeTranscodeFailed, domain.TypeVideoDetailsChanged, domain.TypePlaybackPolicyChanged, domain.TypeVideoDeleted,
	domain.TypeCaptionTrackAdded, domain.TypeCaptionTrackReady, domain.TypeCaptionTrackFailed}

// Run consumes FanoutTypes until ctx ends.
func (f *Fanout) Run(ctx context.Context) error {
	var filters []string
	for _, t := range FanoutTypes {
		filters = append(filters, domain.AggVideo+".*."+t)
	}
	return f.cfg.Queue.Work(ctx, queue.WorkConfig{
		Durable:        FanoutDurable,
		FilterSubjects: filters,
		Concurrency:    1,
		// Created at the stream's end: a first start of a version with
		// webhook delivery must not send a webhook for every video ever
		// finished. Once created, it resumes where it left off.
		OnlyNew: true,
		Log:     f.cfg.Log,
	}, f.handle)
}

func (f *Fanout) handle(ctx context.Context, job *queue.Job) {
	e := job.Event
	log := f.cfg.Log.With("video_id", e.AggregateID, "event_id", e.ID, "seq", e.Seq)
	var kind string
	switch d := e.Data.(type) {
	case domain.UploadAccepted:
		kind = domain.EventVideoCreated
	case domain.VideoDetailsChanged, domain.PlaybackPolicyChanged:
		kind = domain.EventVideoUpdated
	case domain.VideoDeleted:
		kind = domain.EventVideoDeleted
	case domain.TranscodePlayable:
		kind = domain.EventVideoPlayable
	case domain.TranscodeSucceeded:
		kind = domain.EventVideoCompleted
	case domain.TranscodeFailed:
		if !d.Final { // a retry follows: not a failure of the video yet
			_ = job.Ack(ctx)
			return
		}
		kind = domain.EventVideoFailed
	case domain.CaptionTrackAdded, domain.CaptionTrackReady:
		kind = domain.EventVideoCaptionsReady
	case domain.CaptionTrackFailed:
		kind = domain.EventVideoCaptionsFailed
	default:
		_ = job.Ack(ctx)
		return
	}
	if err := f.fanout(ctx, e, kind, func() { _ = job.InProgress() }); err != nil {
		if ctx.Err() != nil {
			_ = job.Release()
			return
		}
		log.Warn("webhook fan-out failed; retrying", "err", err)
		_ = job.Retry(time.Second)
		return
	}
	if err := job.Ack(ctx); err != nil {
		log.Warn("ack fan-out", "err", err)
	}
}

// fanout queues e's deliveries; alive tells the consumer the job is still
// running.
func (f *Fanout) fanout(ctx context.Context, e domain.Event, kind string, alive func()) error {
	at, err := foldAt(ctx, f.cfg.Store, e, f.cfg.CDNURL)
	if err != nil {
		return err
	}
	v, account, ok := at.video, at.account, at.ok
	if ok && kind == domain.EventVideoPlayable && at.toldPlayable {
		// Once per processing run: a later attempt (after a crash or a
		// failed try) is playable again, its subscribers know already.
		return nil
	}
	if p, isPolicy := e.Data.(domain.PlaybackPolicyChanged); ok && isPolicy && p.DetailsFollow {
		// One PATCH changed policy and details in one append: one
		// video.updated, at its details event, whose video shows both.
		return nil
	}
	if !ok {
		// No upload accepted before it, or deleted before it: not an
		// event kino's own transcoder writes.
		f.cfg.Log.Warn("webhook event of a video that did not exist at its position; nothing to send",
			"video_id", e.AggregateID, "seq", e.Seq, "kind", kind)
		return nil
	}
	subs, err := f.subs.at(ctx, account, e.Seq)
	if err != nil {
		return err
	}
	body := Body{ID: e.ID, Type: kind, CreatedAt: domain.FormatTime(e.OccurredAt), Data: wire.WebhookData{Video: &v}}
	if track := trackOf(e); track != "" {
		for i := range v.Captions {
			if v.Captions[i].ID == track {
				body.Data.Track = &v.Captions[i]
			}
		}
		if body.Data.Track == nil { // removed in the same step: not an event to tell
			return nil
		}
	}
	for i, s := range subs {
		if !s.wants(kind) {
			continue
		}
		if _, err := Enqueue(ctx, f.cfg.Queue, s.id, account, body, e.AggregateID); err != nil {
			return err
		}
		if i%100 == 99 { // thousands of subscriptions must not outlast the ack wait
			alive()
		}
	}
	return nil
}

// videoAt is the video of e as it stood at e's position in the stream,
// rendered with cdnURL as the API renders it; the account that owns it;
// and whether it existed (accepted and not deleted) there. It folds the
// video's events as the read model does (projections), up to e.
func videoAt(ctx context.Context, store Store, e domain.Event, cdnURL string) (wire.Video, string, bool, error) {
	at, err := foldAt(ctx, store, e, cdnURL)
	return at.video, at.account, at.ok, err
}

// at is a video as it stood at an event's position (videoAt).
type at struct {
	video   wire.Video
	account string
	ok      bool // accepted before the event, not deleted before it
	// toldPlayable: a TranscodePlayable before the event, in the same
	// processing run (since the upload, or the last TranscodeRetried).
	toldPlayable bool
}

func foldAt(ctx context.Context, store Store, e domain.Event, cdnURL string) (at, error) {
	var (
		r            wire.VideoRecord
		account      string
		accepted     uint64
		deleted      bool
		toldPlayable bool
	)
	err := store.Between(ctx, domain.StreamID{Aggregate: domain.AggVideo, ID: e.AggregateID}.Filter(), 1, e.Seq, func(ev domain.Event) error {
		if accepted == 0 && ev.Type != domain.TypeUploadAccepted {
			return nil
		}
		switch d := ev.Data.(type) {
		case domain.UploadAccepted:
			if accepted != 0 {
				return nil // accepted once
			}
			accepted, account = ev.Seq, d.Account
			r = wire.VideoRecord{ID: ev.AggregateID, Filename: d.Filename, Status: domain.StatusPending,
				OriginalSize: d.OriginalSize, Resolutions: []string{}, Collection: d.Collection, CollectionName: d.CollectionName,
				CreatedAt: ev.OccurredAt, UpdatedAt: ev.OccurredAt, PlaybackPolicy: d.PlaybackPolicy.OrPublic(), Details: d.Details(),
				ThumbnailTime: d.ThumbnailTime}
			return nil
		case domain.TranscodeStarted:
			r.Status, r.Playable = domain.StatusProcessing, false
		case domain.TranscodePlayable:
			r.Playable = r.Status == domain.StatusProcessing
			if ev.Seq < e.Seq {
				toldPlayable = true
			}
		case domain.TranscodeRetried:
			r.Status, r.ErrorMessage, r.Playable = domain.StatusPending, nil, false
			toldPlayable = false
		case domain.PlaybackPolicyChanged:
			r.PlaybackPolicy = d.Policy.OrPublic()
		case domain.VideoDetailsChanged:
			r.Details = d.Details()
		case domain.ThumbnailRequested:
			at := d.At
			r.ThumbnailTime = &at
		case domain.ThumbnailChanged:
			r.Animated = r.Animated || d.Animated
		case domain.TranscodeSucceeded:
			dur, size := d.Duration, d.ProcessedSize
			r.Status, r.Duration, r.ProcessedSize, r.ErrorMessage = domain.StatusCompleted, &dur, &size, nil
			r.Playable, r.Storyboard, r.Download, r.Animated = false, d.Storyboard, d.Download, d.Animated
			r.Resolutions = d.Resolutions
		case domain.TranscodeFailed:
			r.Playable = false
			if d.Final {
				reason := d.Reason
				r.Status, r.ErrorMessage = domain.StatusFailed, &reason
			}
		case domain.TranscodeInterrupted:
			r.Playable = false
		case domain.CaptionTrackAdded, domain.CaptionTrackRequested, domain.CaptionTrackReady, domain.CaptionTrackFailed, domain.CaptionTrackRemoved:
			r.Captions = foldCaption(r.Captions, ev)
		case domain.VideoDeleted:
			if ev.Seq == e.Seq {
				return nil // the deletion announced: the video as it was
			}
			deleted = true
			return nil
		default:
			return nil
		}
		r.UpdatedAt = ev.OccurredAt
		return nil
	})
	if err != nil || accepted == 0 || deleted {
		return at{}, err
	}
	// The collection's name as the read models show it: the one the
	// upload recorded, or the last rename of the slug between the upload
	// and the event.
	coll := domain.CollectionStream(account, r.Collection)
	err = store.Between(ctx, coll.Subject(domain.TypeCollectionRenamed), accepted+1, e.Seq, func(ev domain.Event) error {
		if d, ok := ev.Data.(domain.CollectionRenamed); ok {
			r.CollectionName = d.Name
		}
		return nil
	})
	if err != nil {
		return at{}, err
	}
	return at{video: wire.NewVideo(r, cdnURL, wire.Live{}), account: account, ok: true, toldPlayable: toldPlayable}, nil
}

// trackOf is the text track a caption event is about ("" for other
// events).
func trackOf(e domain.Event) string {
	switch d := e.Data.(type) {
	case domain.CaptionTrackAdded:
		return d.Track
	case domain.CaptionTrackReady:
		return d.Track
	case domain.CaptionTrackFailed:
		return d.Track
	}
	return ""
}

// foldCaption applies caption event e to tracks as the read model does.
func foldCaption(tracks []wire.CaptionRecord, e domain.Event) []wire.CaptionRecord {
	tracks = slices.Clone(tracks)
	switch d := e.Data.(type) {
	case domain.CaptionTrackAdded:
		return append(clearDefault(tracks, d.Default), wire.CaptionRecord{ID: d.Track, Language: d.Language, Label: d.Label,
			Source: domain.CaptionUploaded, Default: d.Default, Status: domain.CaptionReady, Cues: d.Cues, CreatedAt: e.OccurredAt})
	case domain.CaptionTrackRequested:
		return append(clearDefault(tracks, d.Default), wire.CaptionRecord{ID: d.Track, Language: d.Language, Label: d.Label,
			Source: domain.CaptionGenerated, Default: d.Default, Status: domain.CaptionPending, CreatedAt: e.OccurredAt})
	case domain.CaptionTrackReady:
		for i := range tracks {
			if tracks[i].ID == d.Track {
				tracks[i].Status, tracks[i].Cues = domain.CaptionReady, d.Cues
			}
		}
	case domain.CaptionTrackFailed:
		for i := range tracks {
			if tracks[i].ID == d.Track {
				tracks[i].Status, tracks[i].ErrorMessage = domain.CaptionFailed, d.Reason
			}
		}
	case domain.CaptionTrackRemoved:
		return slices.DeleteFunc(tracks, func(c wire.CaptionRecord) bool { return c.ID == d.Track })
	}
	return tracks
}

func clearDefault(tracks []wire.CaptionRecord, newDefault bool) []wire.CaptionRecord {
	for i := range tracks {
		tracks[i].Default = tracks[i].Default && !newDefault
	}
	return tracks
}

// subscriptions indexes every webhook subscription of the stream by
// account, with the sequences of its WebhookSubscribed and WebhookDeleted,
// read from the event stream (webhook.*.WebhookSubscribed and
// webhook.*.WebhookDeleted, one leader read per event) as the fan-out
// needs it. The subjects do not name the account, so the index is what
// makes "the account's subscriptions at sequence S" cheap: once built, a
// fan-out reads only the subscription events appended since the last one.
//
// A deleted subscription stays in the index while an event older than its
// deletion may still be fanned out. When deleted entries outnumber live
// ones (and pruneOver), those deleted at or below the fan-out consumer's
// ack floor are dropped: every event up to the floor is acknowledged and
// never delivered again. Should an event at or below the pruned horizon
// come anyway (the fanout() of a test, a consumer reset), the index is
// rebuilt from the stream for it: slower, never wrong.
type subscriptions struct {
	store     Store
	floor     func(context.Context) (uint64, error) // the fan-out's ack floor
	pruneOver int                                   // deleted entries tolerated before pruning
	mu        sync.Mutex
	next      [2]uint64 // per type (subscribed, deleted): every event of it below this sequence is in the index
	byID      map[string]*subscription
	byAccount map[string][]*subscription
	deleted   int    // entries with a WebhookDeleted
	horizon   uint64 // entries deleted at or below it were pruned: exact only for sequences above it
}

type subscription struct {
	id, account         string
	events              []string
	subscribed, deleted uint64 // sequences of WebhookSubscribed and WebhookDeleted; 0: none seen
}

func (s subscription) wants(kind string) bool {
	return domain.Webhook{Created: true, Events: s.events}.Wants(kind)
}

var indexedTypes = [2]string{domain.TypeWebhookSubscribed, domain.TypeWebhookDeleted}

func newSubscriptions(store Store, floor func(context.Context) (uint64, error)) *subscriptions {
	x := &subscriptions{store: store, floor: floor, pruneOver: 1024}
	x.reset()
	return x
}

func (x *subscriptions) reset() {
	x.next, x.deleted, x.horizon = [2]uint64{1, 1}, 0, 0
	x.byID, x.byAccount = map[string]*subscription{}, map[string][]*subscription{}
}

// at is account's subscriptions live at sequence seq: subscribed before
// it and not deleted before it. Every message up to seq must be stored
// (seq is an event that was delivered), so a read that finds nothing more
// means the index is complete up to seq.
func (x *subscriptions) at(ctx context.Context, account string, seq uint64) ([]subscription, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if seq <= x.horizon { // pruned entries may have been live at seq
		x.reset()
	}
	for i, typ := range indexedTypes {
		if x.next[i] > seq {
			continue
		}
		// The walk stops at the type's last message: asking for a next one
		// that does not exist would read every message after it.
		filter := domain.AggWebhook + ".*." + typ
		last, err := x.store.LastOf(ctx, filter)
		if err != nil {
			return nil, err
		}
		for x.next[i] <= seq && x.next[i] <= last {
			e, ok, err := x.store.Next(ctx, filter, x.next[i])
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			x.apply(e)
			x.next[i] = e.Seq + 1
		}
		x.next[i] = max(x.next[i], seq+1)
	}
	var out []subscription
	for _, s := range x.byAccount[account] {
		if s.subscribed != 0 && s.subscribed < seq && (s.deleted == 0 || s.deleted > seq) {
			out = append(out, *s)
		}
	}
	if x.deleted > x.pruneOver && x.deleted > len(x.byID)-x.deleted {
		_ = x.prune(ctx, seq) // opportunistic: tried again at the next fan-out
	}
	return out, nil
}

// prune drops the subscriptions deleted at or below the fan-out's ack
// floor: no event they could matter to will be fanned out again. It goes
// no further than seq, which both cursors have passed, so the
// WebhookSubscribed of a pruned entry has been read and cannot bring it
// back.
func (x *subscriptions) prune(ctx context.Context, seq uint64) error {
	floor, err := x.floor(ctx)
	if err != nil {
		return err
	}
	if floor = min(floor, seq); floor <= x.horizon {
		return nil
	}
	for account, subs := range x.byAccount {
		kept := subs[:0]
		for _, s := range subs {
			if s.deleted != 0 && s.deleted <= floor {
				delete(x.byID, s.id)
				x.deleted--
				continue
			}
			kept = append(kept, s)
		}
		if len(kept) == 0 {
			delete(x.byAccount, account)
		} else {
			clear(subs[len(kept):])
			x.byAccount[account] = kept
		}
	}
	x.horizon = floor
	return nil
}

func (x *subscriptions) apply(e domain.Event) {
	var account string
	switch d := e.Data.(type) {
	case domain.WebhookSubscribed:
		account = d.Account
	case domain.WebhookDeleted:
		account = d.Account
	default: // refused
		return
	}
	s, ok := x.byID[e.AggregateID]
	if !ok {
		s = &subscription{id: e.AggregateID, account: account}
		x.byID[e.AggregateID] = s
		x.byAccount[account] = append(x.byAccount[account], s)
	}
	switch d := e.Data.(type) {
	case domain.WebhookSubscribed:
		if s.subscribed == 0 { // subscribed once
			s.subscribed, s.events = e.Seq, d.Events
		}
	case domain.WebhookDeleted:
		if s.deleted == 0 && d.Account == s.account {
			s.deleted = e.Seq
			x.deleted++
		}
	}
}
