package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/transport/wire"
)

const testCDN = "https://cdn.example.test/media"

// fanoutEnv is an embedded NATS with kino serve's store (to write what the
// API and the transcoder write) and a kino worker's (the worker role's
// credentials, no read models anywhere), which runs the fan-out.
type fanoutEnv struct {
	serve, worker *eventstore.Store
	rc            *collector
}

func newFanoutEnv(t *testing.T) *fanoutEnv {
	t.Helper()
	srv := eventstoretest.Server(t, t.TempDir())
	serve := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	worker, err := eventstore.Open(context.Background(), eventstore.Config{URL: srv.URL(), Auth: srv.Auth(eventstore.RoleWorker), Name: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Close() })
	return &fanoutEnv{serve: serve, worker: worker, rc: newCollector(t)}
}

// collector is a receiver that keeps every body it gets, by path.
type collector struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string][]Body
}

func newCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{got: map[string][]Body{}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var b Body
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Errorf("body %s: %v", raw, err)
		}
		c.mu.Lock()
		c.got[r.URL.Path] = append(c.got[r.URL.Path], b)
		c.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) bodies(path string) []Body {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Body(nil), c.got[path]...)
}

func (env *fanoutEnv) subscribe(t *testing.T, account, path string, events ...string) string {
	t.Helper()
	id := env.serve.NewID()
	sealed, err := testKey.Seal(id, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	_, err = eventstore.Execute[domain.Webhook](context.Background(), env.serve, domain.StreamID{Aggregate: domain.AggWebhook, ID: id},
		domain.SubscribeWebhook{Account: account, URL: env.rc.srv.URL + path, Events: events, SealedSecret: sealed})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (env *fanoutEnv) unsubscribe(t *testing.T, account, id string) {
	t.Helper()
	if _, err := eventstore.Execute[domain.Webhook](context.Background(), env.serve, domain.StreamID{Aggregate: domain.AggWebhook, ID: id},
		domain.DeleteWebhook{Account: account}); err != nil {
		t.Fatal(err)
	}
}

// do executes a command on an aggregate with kino serve's store.
func do[S eventstore.Aggregate[S]](t *testing.T, store *eventstore.Store, id domain.StreamID, cmd any) []domain.Event {
	t.Helper()
	res, err := eventstore.Execute[S](context.Background(), store, id, cmd)
	if err != nil {
		t.Fatalf("%T: %v", cmd, err)
	}
	return res.Events
}

// upload accepts a video of account into collection main and starts its
// transcode; it returns the video's stream.
func (env *fanoutEnv) upload(t *testing.T, account, name string) domain.StreamID {
	t.Helper()
	v := domain.StreamID{Aggregate: domain.AggVideo, ID: env.serve.NewID()}
	do[domain.Video](t, env.serve, v, domain.AcceptUpload{Account: account, Collection: "main", CollectionName: "Main", Filename: name, Size: 1234})
	do[domain.Video](t, env.worker, v, domain.StartTranscode{Worker: "test:1", MaxAttempts: 3})
	return v
}

// complete completes v's transcode and returns its TranscodeSucceeded (a
// TranscodePlayable comes first when v was not playable yet).
func (env *fanoutEnv) complete(t *testing.T, v domain.StreamID) domain.Event {
	t.Helper()
	events := do[domain.Video](t, env.worker, v, domain.CompleteTranscode{Duration: 2.5, Width: 320, Height: 180,
		Resolutions: []string{"180p"}, ProcessedSize: 4321})
	return events[len(events)-1]
}

// createFanoutConsumer makes the durable fan-out consumer (at the stream's
// end, as a first start does) and stops: what happens next waits for it.
func (env *fanoutEnv) createFanoutConsumer(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := newTestFanout(t, env.worker)
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	eventstoretest.Eventually(t, "the fan-out consumer", func() bool {
		_, err := queue.New(env.serve).Unfinished(context.Background(), "", FanoutDurable)
		return err == nil
	})
	cancel()
	// The consumer exists; the call that made it may still be waiting for
	// its answer when cancelled.
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	// Its last pull request is gone once the server has processed the
	// unsubscription; until then the server may send it the next event,
	// which would then wait out AckWait (a minute) for the next fan-out.
	eventstoretest.Eventually(t, "the stopped fan-out's pull gone", func() bool {
		cons, err := env.serve.NATS().Events.Consumer(context.Background(), FanoutDurable)
		if err != nil {
			return false
		}
		info, err := cons.Info(context.Background())
		return err == nil && info.NumWaiting == 0
	})
}

func newTestFanout(t *testing.T, store *eventstore.Store) *Fanout {
	t.Helper()
	f, err := NewFanout(Config{Store: store, Queue: queue.New(store), CDNURL: testCDN})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// deliverAll runs the fan-out (as a worker) and a sender until every
// event up to sequence last is fanned out and every delivery sent.
func (env *fanoutEnv) deliverAll(t *testing.T, last uint64) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	f := newTestFanout(t, env.worker)
	d := newTestDeliverer(t, Config{Store: env.worker, Queue: queue.New(env.worker), Workers: 2, Timeout: 30 * time.Second, AllowPrivate: true})
	for _, run := range []func(context.Context) error{f.Run, d.Run} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				t.Error(err)
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	env.fannedOut(t, last)
	eventstoretest.Eventually(t, "every delivery sent", func() bool {
		n, err := queue.New(env.serve).DeliveriesQueued(context.Background())
		return err == nil && n == 0
	})
}

// fannedOut waits until the fan-out has acknowledged every event up to
// sequence last (and so queued their deliveries). The ack floor moves as
// each ack is processed; a consumer's pending count may lag a new message.
func (env *fanoutEnv) fannedOut(t *testing.T, last uint64) {
	t.Helper()
	eventstoretest.Eventually(t, "the fan-out", func() bool {
		floor, err := queue.New(env.serve).AckFloor(context.Background(), "", FanoutDurable)
		return err == nil && floor >= last
	})
}

// The body is the video as of the event it announces: a video deleted
// (and its collection renamed) between its TranscodeSucceeded and the
// fan-out is still announced, as it was when it completed, with the API's
// media URLs; renames before the event show, as in the read models. The
// fan-out runs with a worker's credentials and no read models.
func TestFanoutRendersTheVideoAsOfItsEvent(t *testing.T) {
	env := newFanoutEnv(t)
	coll := domain.CollectionStream("acme", "main")
	do[domain.Collection](t, env.serve, coll, domain.CreateCollection{Account: "acme", Slug: "main", Name: "Main"})
	env.subscribe(t, "acme", "/all", domain.EventVideoCompleted, domain.EventVideoFailed)
	env.createFanoutConsumer(t)

	v := env.upload(t, "acme", "clip.mp4")
	failed := env.upload(t, "acme", "bad.mp4")
	do[domain.Collection](t, env.serve, coll, domain.RenameCollection{Account: "acme", Name: "Renamed"})
	before, after := "Before", "After"
	do[domain.Video](t, env.serve, v, domain.UpdateVideo{Account: "acme", Details: domain.DetailsPatch{Title: &before, Tags: &[]string{"t"}}})
	done := env.complete(t, v)
	do[domain.Collection](t, env.serve, coll, domain.RenameCollection{Account: "acme", Name: "Later"})
	do[domain.Video](t, env.serve, v, domain.UpdateVideo{Account: "acme", Details: domain.DetailsPatch{Title: &after}})
	do[domain.Video](t, env.serve, v, domain.DeleteVideo{Account: "acme"})
	gaveUp := do[domain.Video](t, env.worker, failed, domain.FailTranscode{Reason: "No video stream found.", Final: true})[0]

	env.deliverAll(t, gaveUp.Seq)
	got := env.rc.bodies("/all")
	if len(got) != 2 {
		t.Fatalf("%d deliveries, want 2: %+v", len(got), got)
	}
	byType := map[string]Body{}
	for _, b := range got {
		byType[b.Type] = b
	}
	dur, size := 2.5, int64(4321)
	playlist, thumb, preview := testCDN+"/"+v.ID+"/hls/master.m3u8", testCDN+"/"+v.ID+"/thumbnail.jpg", testCDN+"/"+v.ID+"/preview.mp4"
	one := 1.0
	completed := byType[domain.EventVideoCompleted]
	want := wire.Video{ID: v.ID, Filename: "clip.mp4", Status: domain.StatusCompleted, Duration: &dur, OriginalSize: 1234,
		ProcessedSize: &size, PlaylistURL: &playlist, ThumbnailURL: &thumb, PreviewURL: &preview, Resolutions: []string{"180p"},
		Collection: wire.CollectionRef{Slug: "main", Name: "Renamed"}, CreatedAt: completed.Data.Video.CreatedAt,
		UpdatedAt: domain.FormatTime(done.OccurredAt), Progress: &one, PlaybackPolicy: domain.PlaybackPublic,
		Title: "Before", Tags: []string{"t"}, Metadata: map[string]string{}, Captions: []wire.CaptionTrack{}}
	if completed.ID != done.ID || completed.CreatedAt != domain.FormatTime(done.OccurredAt) || !sameJSON(t, completed.Data.Video, want) {
		t.Fatalf("video.completed: %+v\nvideo %s\nwant  %s", completed, mustJSON(t, completed.Data.Video), mustJSON(t, want))
	}
	f := byType[domain.EventVideoFailed]
	reason := "No video stream found."
	wantFailed := wire.Video{ID: failed.ID, Filename: "bad.mp4", Status: domain.StatusFailed, OriginalSize: 1234, Resolutions: []string{},
		ErrorMessage: &reason, Collection: wire.CollectionRef{Slug: "main", Name: "Later"}, CreatedAt: f.Data.Video.CreatedAt,
		UpdatedAt: domain.FormatTime(gaveUp.OccurredAt), PlaybackPolicy: domain.PlaybackPublic,
		Title: "bad", Tags: []string{}, Metadata: map[string]string{}, Captions: []wire.CaptionTrack{}}
	if f.ID != gaveUp.ID || !sameJSON(t, f.Data.Video, wantFailed) {
		t.Fatalf("video.failed: %s\nwant %s", mustJSON(t, f.Data.Video), mustJSON(t, wantFailed))
	}
}

// An event goes to the account's subscriptions as they were at its
// position in the stream: not to one created after it (even before the
// fan-out ran), not to one deleted before it, not to another account's,
// not to one that did not ask for its kind.
func TestFanoutTakesTheSubscriptionsAtTheEvent(t *testing.T) {
	env := newFanoutEnv(t)
	env.subscribe(t, "acme", "/before", domain.EventVideoCompleted)
	gone := env.subscribe(t, "acme", "/deleted-before", domain.EventVideoCompleted)
	env.unsubscribe(t, "acme", gone)
	env.subscribe(t, "acme", "/failed-only", domain.EventVideoFailed)
	env.subscribe(t, "other", "/other-account", domain.EventVideoCompleted)
	env.createFanoutConsumer(t)

	first := env.complete(t, env.upload(t, "acme", "a.mp4"))
	env.subscribe(t, "acme", "/after", domain.EventVideoCompleted)
	second := env.complete(t, env.upload(t, "acme", "b.mp4"))

	env.deliverAll(t, second.Seq)
	for path, want := range map[string][]string{
		"/before": {first.ID, second.ID}, "/after": {second.ID},
		"/deleted-before": nil, "/failed-only": nil, "/other-account": nil,
	} {
		got := map[string]int{}
		for _, b := range env.rc.bodies(path) {
			got[b.ID]++
		}
		if len(got) != len(want) {
			t.Errorf("%s got %v, want %v", path, got, want)
		}
		for _, id := range want {
			if got[id] != 1 {
				t.Errorf("%s got event %s %d times, want once (%v)", path, id, got[id], got)
			}
		}
	}
}

// Fanning out an event again (a redelivery, or another process taking it
// over) queues nothing new: the bodies and subscriptions are those of the
// event's position, the same in every process, and the delivery queue
// drops a message id it has seen. Two processes (serve's and a worker's
// credentials) share the consumer; each subscription gets each event once.
func TestFanoutTwiceDeliversOnce(t *testing.T) {
	env := newFanoutEnv(t)
	env.subscribe(t, "acme", "/a", domain.EventVideoCompleted)
	env.subscribe(t, "acme", "/b", domain.EventVideoCompleted, domain.EventVideoFailed)
	env.createFanoutConsumer(t)
	var events []domain.Event
	for i := 0; i < 6; i++ {
		events = append(events, env.complete(t, env.upload(t, "acme", "v.mp4")))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, st := range []*eventstore.Store{env.serve, env.worker} {
		f := newTestFanout(t, st)
		wg.Add(1)
		go func() { defer wg.Done(); _ = f.Run(ctx) }()
	}
	env.fannedOut(t, events[len(events)-1].Seq)
	cancel()
	wg.Wait()
	// Again, by a fresh process, for every event.
	again := newTestFanout(t, env.worker)
	for _, e := range events {
		stored, ok, err := env.worker.Next(context.Background(), domain.StreamID{Aggregate: domain.AggVideo, ID: e.AggregateID}.Subject(e.Type), e.Seq)
		if err != nil || !ok || stored.ID != e.ID {
			t.Fatalf("read back %s: %v %v %+v", e.ID, ok, err, stored)
		}
		if err := again.fanout(context.Background(), stored, domain.EventVideoCompleted, func() {}); err != nil {
			t.Fatal(err)
		}
	}
	env.deliverAll(t, events[len(events)-1].Seq)
	for _, path := range []string{"/a", "/b"} {
		got := map[string]int{}
		for _, b := range env.rc.bodies(path) {
			got[b.ID]++
		}
		for _, e := range events {
			if got[e.ID] != 1 {
				t.Errorf("%s got %s %d times, want once", path, e.ID, got[e.ID])
			}
		}
		if len(got) != len(events) {
			t.Errorf("%s got %d events, want %d", path, len(got), len(events))
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sameJSON(t *testing.T, a, b any) bool { return mustJSON(t, a) == mustJSON(t, b) }

// The index drops subscriptions deleted below the fan-out's ack floor once
// deleted ones outnumber live ones, and still answers for any sequence: an
// event older than the pruned horizon rebuilds it from the stream.
func TestSubscriptionIndexPrunesAndStaysExact(t *testing.T) {
	env := newFanoutEnv(t)
	ctx := context.Background()
	keep := env.subscribe(t, "acme", "/keep", domain.EventVideoCompleted)
	var gone []string
	for _, p := range []string{"/a", "/b", "/c"} {
		id := env.subscribe(t, "acme", p, domain.EventVideoCompleted)
		gone = append(gone, id)
	}
	// A sequence at which all four were live.
	allLive := env.complete(t, env.upload(t, "other", "x.mp4")).Seq
	for _, id := range gone {
		env.unsubscribe(t, "acme", id)
	}
	env.createFanoutConsumer(t)
	e := env.complete(t, env.upload(t, "acme", "v.mp4"))
	env.deliverAll(t, e.Seq) // the ack floor passes e

	f := newTestFanout(t, env.worker)
	f.subs.pruneOver = 1
	ids := func(seq uint64) map[string]bool {
		t.Helper()
		subs, err := f.subs.at(ctx, "acme", seq)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, s := range subs {
			out[s.id] = true
		}
		return out
	}
	if got := ids(e.Seq); len(got) != 1 || !got[keep] {
		t.Fatalf("at %d: %v, want only %s", e.Seq, got, keep)
	}
	if len(f.subs.byID) != 1 || f.subs.horizon != e.Seq {
		t.Fatalf("after pruning: %d entries, horizon %d (want 1, %d)", len(f.subs.byID), f.subs.horizon, e.Seq)
	}
	if got := ids(allLive); len(got) != 4 {
		t.Fatalf("at %d, before the deletions: %v, want all four", allLive, got)
	}
	if got := ids(e.Seq + 1); len(got) != 1 || !got[keep] {
		t.Fatalf("at %d: %v, want only %s", e.Seq+1, got, keep)
	}
}

// video.created, video.updated (once per PATCH, even of policy and
// details together) and video.deleted (the video as it was) go to the
// subscriptions that list them.
func TestFanoutLifecycleKinds(t *testing.T) {
	env := newFanoutEnv(t)
	coll := domain.CollectionStream("acme", "main")
	do[domain.Collection](t, env.serve, coll, domain.CreateCollection{Account: "acme", Slug: "main", Name: "Main"})
	env.subscribe(t, "acme", "/life", domain.EventVideoCreated, domain.EventVideoUpdated, domain.EventVideoDeleted)
	env.subscribe(t, "acme", "/done", domain.EventVideoCompleted)
	env.createFanoutConsumer(t)

	v := env.upload(t, "acme", "clip.mp4")
	title, signed := "Launch talk", domain.PlaybackSigned
	both := do[domain.Video](t, env.serve, v, domain.UpdateVideo{Account: "acme", Policy: &signed, Details: domain.DetailsPatch{Title: &title}})
	if len(both) != 2 {
		t.Fatalf("one PATCH of both wrote %d events", len(both))
	}
	desc := "d"
	do[domain.Video](t, env.serve, v, domain.UpdateVideo{Account: "acme", Details: domain.DetailsPatch{Description: &desc}})
	gone := do[domain.Video](t, env.serve, v, domain.DeleteVideo{Account: "acme"})[0]

	env.deliverAll(t, gone.Seq)
	// Deliveries are not ordered: by event, in the stream's order.
	got := env.rc.bodies("/life")
	slices.SortFunc(got, func(a, b Body) int { return strings.Compare(a.ID, b.ID) })
	var kinds []string
	for _, b := range got {
		kinds = append(kinds, b.Type)
	}
	if want := []string{"video.created", "video.updated", "video.updated", "video.deleted"}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	if u := got[1].Data.Video; got[1].ID != both[1].ID || u.Title != "Launch talk" || u.PlaybackPolicy != domain.PlaybackSigned {
		t.Fatalf("the PATCH of both: %+v", got[1])
	}
	if d := got[3].Data.Video; got[3].ID != gone.ID || d.ID != v.ID || d.Description != "d" || d.Title != "Launch talk" {
		t.Fatalf("video.deleted: %+v", got[3])
	}
	if n := len(env.rc.bodies("/done")); n != 0 {
		t.Fatalf("%d deliveries to a subscription of video.completed only", n)
	}
}

// video.captions.ready goes once per READY track (an upload at once, a
// generated track when made), video.captions.failed once per failed
// generation, each with the track and the video listing it; a generation
// that starts sends nothing.
func TestFanoutCaptionKinds(t *testing.T) {
	env := newFanoutEnv(t)
	coll := domain.CollectionStream("acme", "main")
	do[domain.Collection](t, env.serve, coll, domain.CreateCollection{Account: "acme", Slug: "main", Name: "Main"})
	env.subscribe(t, "acme", "/subs", domain.EventVideoCaptionsReady, domain.EventVideoCaptionsFailed)
	env.createFanoutConsumer(t)

	v := env.upload(t, "acme", "clip.mp4")
	const vtt = "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nHi\n"
	up, gen, bad := "01JTRACK00000000000000000A", "01JTRACK00000000000000000B", "01JTRACK00000000000000000C"
	do[domain.Video](t, env.serve, v, domain.AddCaptionTrack{Account: "acme", Track: up, Language: "en", Label: "English", VTT: vtt, Cues: 1})
	do[domain.Video](t, env.serve, v, domain.AddCaptionTrack{Account: "acme", Track: gen, Language: "en", Label: "English (auto)", Generate: true})
	do[domain.Video](t, env.serve, v, domain.AddCaptionTrack{Account: "acme", Track: bad, Language: "fr", Label: "Français (auto)", Generate: true})
	do[domain.Video](t, env.serve, v, domain.FinishCaptionTrack{Track: gen, VTT: vtt, Cues: 1})
	last := do[domain.Video](t, env.serve, v, domain.FailCaptionTrack{Track: bad, Reason: "The video has no speech to caption."})[0]

	env.deliverAll(t, last.Seq)
	got := env.rc.bodies("/subs")
	slices.SortFunc(got, func(a, b Body) int { return strings.Compare(a.ID, b.ID) })
	var seen []string
	for _, b := range got {
		if b.Data.Track == nil || b.Data.Video == nil {
			t.Fatalf("%s without its track or video: %+v", b.Type, b)
		}
		seen = append(seen, b.Type+" "+b.Data.Track.ID+" "+string(b.Data.Track.Status))
	}
	want := []string{"video.captions.ready " + up + " READY", "video.captions.ready " + gen + " READY", "video.captions.failed " + bad + " FAILED"}
	if !slices.Equal(seen, want) {
		t.Fatalf("deliveries %v, want %v", seen, want)
	}
	if tr := got[2].Data.Track; tr.ErrorMessage == nil || *tr.ErrorMessage != "The video has no speech to caption." || len(got[2].Data.Video.Captions) != 3 {
		t.Fatalf("failed track %+v in a video with %d tracks", tr, len(got[2].Data.Video.Captions))
	}
	if tr := got[0].Data.Track; tr.URL == nil || !strings.HasSuffix(*tr.URL, "/"+v.ID+"/hls/captions/"+up+".vtt") {
		t.Fatalf("ready track's url %v", tr.URL)
	}
}
