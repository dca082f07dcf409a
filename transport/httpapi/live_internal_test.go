package httpapi

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/transport/wire"
)

// A PENDING video shows its place among its account's PENDING videos
// (other accounts' do not count); a PROCESSING one its progress, speed
// and time left as its worker reports them; every other status none of
// these.
func TestVideoLiveFields(t *testing.T) {
	t.Parallel()
	var progress *kv.Progress
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	a := newTestAPI(t, func(c *Config) {
		var err error
		if progress, err = kv.OpenProgress(ctx, c.Store.(*eventstore.Store)); err != nil {
			t.Fatal(err)
		}
		go func() { _ = progress.Follow(ctx) }()
		c.Progress = progress
	})
	key := a.account("acme", domain.PlanPro)
	other := a.account("other", domain.PlanPro)
	upload := func(key string) string {
		t.Helper()
		r := a.upload(key, "a.mp4", video(100))
		var up wire.Uploaded
		if err := json.Unmarshal(r.body, &up); err != nil || r.status != 202 {
			t.Fatalf("upload: %d %s", r.status, r.body)
		}
		return up.Video.ID
	}
	get := func(id string) wire.Video {
		t.Helper()
		r := a.do("GET", "/v1/videos/"+id, key, "")
		var v wire.Video
		if err := json.Unmarshal(r.body, &v); err != nil || r.status != 200 {
			t.Fatalf("get: %d %s", r.status, r.body)
		}
		return v
	}
	pos := func(v wire.Video) int {
		if v.QueuePosition == nil {
			return 0
		}
		return *v.QueuePosition
	}
	upload(other)
	ids := []string{upload(key), upload(key), upload(key)}
	upload(other)
	for i, id := range ids {
		if got := pos(get(id)); got != i+1 {
			t.Fatalf("video %d: queuePosition %d, want %d", i, got, i+1)
		}
	}
	// The list answer (newest first) agrees.
	r := a.do("GET", "/v1/videos", key, "")
	var list wire.Videos
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Videos) != 3 {
		t.Fatalf("list: %s", r.body)
	}
	for i, v := range list.Videos {
		if pos(v) != 3-i {
			t.Fatalf("listed %s at queuePosition %d, want %d", v.ID, pos(v), 3-i)
		}
	}

	// The first starts: it leaves the queue, the others move up.
	res, err := eventstore.Execute[domain.Video](ctx, a.store, videoStream(ids[0]), domain.StartTranscode{Worker: "w"})
	if err != nil {
		t.Fatal(err)
	}
	a.settle(res.LastSeq())
	if v := get(ids[0]); v.Status != domain.StatusProcessing || v.QueuePosition != nil || v.Speed != nil || v.ETA != nil || *v.Progress != 0 {
		t.Fatalf("processing, nothing reported yet: %+v", v)
	}
	if pos(get(ids[1])) != 1 || pos(get(ids[2])) != 2 {
		t.Fatalf("after the first started: %d %d", pos(get(ids[1])), pos(get(ids[2])))
	}
	speed, eta := 1.9, 31.0
	if err := progress.Report(ctx, ids[0], kv.ProgressReport{Progress: 0.42, Speed: &speed, ETA: &eta}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		v := get(ids[0])
		if v.Speed != nil {
			if *v.Progress != 0.42 || *v.Speed != 1.9 || v.ETA == nil || *v.ETA != 31 || v.QueuePosition != nil {
				t.Fatalf("processing with a report: %+v", v)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the report never showed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Completed: none of them.
	res, err = eventstore.Execute[domain.Video](ctx, a.store, videoStream(ids[0]), domain.CompleteTranscode{
		Duration: 1, Width: 320, Height: 180, Resolutions: []string{"180p"}, ProcessedSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	a.settle(res.LastSeq())
	if v := get(ids[0]); v.Speed != nil || v.ETA != nil || v.QueuePosition != nil {
		t.Fatalf("completed: %+v", v)
	}

	// The walk is bounded: past the bound, no position.
	var seqs []uint64
	for _, id := range ids[1:] {
		v, _, err := a.s.cfg.DB.Video(id)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, v.CreatedSeq)
	}
	if q, err := a.s.cfg.DB.QueuePositions("acme", seqs, 1); err != nil || q[0] != 1 || q[1] != 0 {
		t.Fatalf("bounded positions: %v %v", q, err)
	}
}
