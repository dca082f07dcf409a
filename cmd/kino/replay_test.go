package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/projections"
)

// dumpReadModels dumps the read models of a stopped service's data dir.
func dumpReadModels(t *testing.T, data string) []byte {
	t.Helper()
	db, err := projections.OpenDB(filepath.Join(data, "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var buf bytes.Buffer
	if err := db.Dump(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// runCLI runs kino with args (no --nats added) and returns stdout and the
// exit status.
func runCLI(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

// scenario exercises every kind of event: accounts, plans, keys (one
// revoked), collections (created, renamed, deleted), uploads that complete,
// fail and are deleted, webhooks (one deleted) with logged deliveries.
func scenario(t *testing.T, h *harness) {
	t.Helper()
	key := h.account("acme", domain.PlanPro)
	other := h.account("other", domain.PlanFree)
	h.mustCLI("accounts", "set-plan", "other", "business")
	spare := lastLine(h.mustCLI("keys", "create", "acme", "--label", "spare"))
	for _, line := range strings.Split(h.mustCLI("keys", "list", "acme"), "\n") {
		if strings.Contains(line, "spare") {
			h.mustCLI("keys", "revoke", strings.Fields(line)[0])
		}
	}
	wantError(t, h.do("GET", "/v1/videos", spare, nil), 401, "Invalid API key")
	for _, c := range []struct{ key, slug string }{{key, "main"}, {key, "old"}, {other, "main"}} {
		wantStatus(t, h.do("POST", "/v1/collections", c.key, map[string]string{"slug": c.slug, "name": strings.ToUpper(c.slug)}), 201)
	}
	wantStatus(t, h.do("PATCH", "/v1/collections/main", key, map[string]string{"name": "Main videos"}), 200)
	wantStatus(t, h.do("DELETE", "/v1/collections/old", key, nil), 200)
	rc := newReceiver(t, 500)
	hook, _ := h.subscribe(key, rc.srv.URL, "video.completed", "video.failed")
	gone, _ := h.subscribe(other, rc.srv.URL, "video.completed")
	wantStatus(t, h.do("DELETE", "/v1/webhooks/"+gone, other, nil), 200)

	good := h.uploadID(key, "main", "good.mp4", clip(t))
	bad := h.uploadID(key, "main", "bad.mp4", notAVideo(1200))
	doomed := h.uploadID(other, "main", "doomed.mp4", clip(t))
	h.waitStatus(key, good, domain.StatusCompleted)
	h.waitStatus(key, bad, domain.StatusFailed)
	h.waitStatus(other, doomed, domain.StatusCompleted)
	wantStatus(t, h.do("DELETE", "/v1/videos/"+doomed, other, nil), 200)
	h.waitJobsDone()
	h.waitDeliveriesDone()
	if l := h.deliveries(key, hook); len(l.Deliveries) < 3 {
		t.Fatalf("scenario: %d delivery attempts logged", len(l.Deliveries))
	}
	h.settle()
}

func TestReplayOfflineRebuildsByteForByte(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	h := start(t, data, withTranscoder, withWebhooks)
	scenario(t, h)
	h.stop()
	before := dumpReadModels(t, data)
	if len(before) < 1000 {
		t.Fatalf("dump is suspiciously small:\n%s", before)
	}

	if err := os.Remove(filepath.Join(data, "projections.db")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI("replay", "--data", data)
	if code != 0 || !strings.Contains(out, "rebuilt the read models from") {
		t.Fatalf("kino replay: exit %d\n%s%s", code, out, errOut)
	}
	if after := dumpReadModels(t, data); !bytes.Equal(before, after) {
		t.Fatalf("rebuilt read models differ:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if _, err := os.Stat(filepath.Join(data, "projections.db.rebuild")); !os.IsNotExist(err) {
		t.Fatal("side file left behind")
	}

	out, errOut, code = runCLI("replay", "--data", data, "--verify")
	if code != 0 || !strings.Contains(out, "match") {
		t.Fatalf("kino replay --verify: exit %d\n%s%s", code, out, errOut)
	}
	// Tamper with one record: verify must notice and fail.
	b, err := bolt.Open(filepath.Join(data, "projections.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Update(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket([]byte("accounts")).Cursor().First()
		return tx.Bucket([]byte("accounts")).Put(k, []byte(`{"slug":"acme","plan":"gold"}`))
	}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	out, _, code = runCLI("replay", "--data", data, "--verify")
	if code == 0 || !strings.Contains(out, "difference: accounts") {
		t.Fatalf("verify of a tampered file: exit %d\n%s", code, out)
	}

	// The service starts on the rebuilt file and answers as before.
	h = start(t, data)
	if got := h.do("GET", "/v1/collections", "", nil); got.status != 401 {
		t.Fatal(got.status)
	}
}

func TestReplayOnlineWhileClientsRead(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), benchPlans, func(c *Config) { c.AdminToken = "operator-secret-0123456789abcdef" })
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	var ids []string
	for i := 0; i < 20; i++ {
		ids = append(ids, h.uploadID(key, "main", "c.mp4", clip(t)))
	}
	// Enough history that a rebuild takes a while: renames touch every
	// video of the collection.
	coll := domain.CollectionStream("acme", "main")
	for i := 0; i < 2000; i++ {
		if _, err := h.m.store.Record(context.Background(), coll, domain.CollectionRenamed{Account: "acme", Slug: "main", Name: fmt.Sprintf("Main %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	h.settle()

	// Readers hammer the API for the whole rebuild; not one request may fail.
	stop := make(chan struct{})
	var reads, failures atomic.Int64
	var firstFailure atomic.Value
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				path := "/v1/videos?limit=100"
				if i%2 == 1 {
					path = "/v1/videos/" + ids[i%len(ids)]
				}
				resp := h.do("GET", path, key, nil)
				reads.Add(1)
				if resp.status != 200 || (i%2 == 0 && bytes.Count(resp.body, []byte(`"id"`)) != len(ids)) {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, string(resp.body))
				}
			}
		}()
	}
	for i := 0; i < 2; i++ {
		out, errOut, code := runCLI("replay", "--nats", h.nats, "--data", h.data)
		if code != 0 || !strings.Contains(out, "rebuilt the read models") {
			t.Fatalf("kino replay --nats: exit %d\n%s%s", code, out, errOut)
		}
	}
	out, errOut, code := runCLI("replay", "--nats", h.nats, "--data", h.data, "--verify")
	close(stop)
	wg.Wait()
	if code != 0 || !strings.Contains(out, "match") {
		t.Fatalf("kino replay --nats --verify: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("%d reads during 3 rebuilds", reads.Load())
	if failures.Load() > 0 || reads.Load() == 0 {
		t.Fatalf("%d of %d reads failed during the rebuild; first: %v", failures.Load(), reads.Load(), firstFailure.Load())
	}
	if _, err := os.Stat(filepath.Join(h.data, "projections.db.rebuild")); !os.IsNotExist(err) {
		t.Fatal("side file left behind")
	}

	// The projector follows the stream again after the swap.
	id := h.uploadID(key, "main", "after.mp4", clip(t))
	wantStatus(t, h.do("GET", "/v1/videos/"+id, key, nil), 200)

	// The same over HTTP, for operators with the token.
	wantError(t, h.do("POST", "/v1/admin/replay", key, nil), 401, "Invalid API key")
	wantError(t, h.do("POST", "/v1/admin/replay", "", nil), 401, "Missing API key")
	const token = "operator-secret-0123456789abcdef"
	// POST starts it (202); GET follows it until it is done.
	adminReplay := func(body any) replayResult {
		t.Helper()
		wantStatus(t, h.do("POST", "/v1/admin/replay", token, body), 202)
		var result replayResult
		eventstoretest.EventuallyEvery(t, "the replay done", 20*time.Millisecond, func() (bool, string) {
			r := h.do("GET", "/v1/admin/replay", token, nil)
			wantStatus(t, r, 200)
			var st struct {
				State  string       `json:"state"`
				Events uint64       `json:"events"`
				Total  uint64       `json:"total"`
				Result replayResult `json:"result"`
			}
			if err := json.Unmarshal(r.body, &st); err != nil {
				t.Fatal(err)
			}
			switch st.State {
			case "done":
				if st.Events != st.Total || st.Total == 0 {
					t.Fatalf("done at %d of %d events: %s", st.Events, st.Total, r.body)
				}
				result = st.Result
				return true, ""
			case "running":
				return false, string(r.body)
			default:
				t.Fatalf("replay: %s", r.body)
			}
			return false, ""
		})
		return result
	}
	if res := adminReplay(`{"verify":true}`); !res.Verified || len(res.Differences) != 0 || res.Applied == 0 {
		t.Fatalf("admin verify: %+v", res)
	}
	if res := adminReplay(nil); res.Verified || res.Applied == 0 {
		t.Fatalf("admin rebuild: %+v", res)
	}
}

func TestAdminReplayIsOffWithoutAToken(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir())
	wantError(t, h.do("POST", "/v1/admin/replay", "anything", nil), 404, "Not found")
}

func TestVideoEventsAudit(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withTranscoder)
	key := h.account("acme", domain.PlanBusiness)
	other := h.account("other", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	id := h.uploadID(key, "main", "c.mp4", clip(t))
	h.waitStatus(key, id, domain.StatusCompleted)
	wantStatus(t, h.do("DELETE", "/v1/videos/"+id, key, nil), 200)
	wantError(t, h.do("GET", "/v1/videos/"+id, key, nil), 404, "Not found")

	r := h.do("GET", "/v1/videos/"+id+"/events", key, nil)
	wantStatus(t, r, 200)
	var body struct {
		Events []struct {
			Seq        uint64         `json:"seq"`
			ID         string         `json:"id"`
			Type       string         `json:"type"`
			Version    int            `json:"version"`
			OccurredAt string         `json:"occurredAt"`
			Data       map[string]any `json:"data"`
		} `json:"events"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	var types []string
	for i, e := range body.Events {
		types = append(types, e.Type)
		if i > 0 && e.Seq <= body.Events[i-1].Seq {
			t.Fatalf("not oldest first: %s", r.body)
		}
		if !domain.ValidID(e.ID) || e.Version != 1 || e.Data == nil {
			t.Fatalf("event %+v", e)
		}
		checkTimestamp(t, "occurredAt", e.OccurredAt)
	}
	if strings.Join(types, ",") != "UploadAccepted,TranscodeStarted,TranscodePlayable,TranscodeSucceeded,Deleted" {
		t.Fatalf("history %v", types)
	}
	if body.Events[0].Data["filename"] != "c.mp4" {
		t.Fatalf("data %v", body.Events[0].Data)
	}
	for _, secret := range []string{"hash", "secret", key} {
		if bytes.Contains(r.body, []byte(secret)) {
			t.Fatalf("history shows %q: %s", secret, r.body)
		}
	}
	wantError(t, h.do("GET", "/v1/videos/"+id+"/events", other, nil), 404, "Not found")
	wantError(t, h.do("GET", "/v1/videos/01ARZ3NDEKTSV4RRFFQ69G5FAV/events", key, nil), 404, "Not found")
}

// TestReplayHelpShowsNoNATSDefault: without --nats, kino replay works
// offline, so its --help must not claim a default NATS URL.
func TestReplayHelpShowsNoNATSDefault(t *testing.T) {
	t.Setenv("KINO_NATS_URL", "")
	out, errOut, code := runCLI("replay", "--help")
	if code != 0 {
		t.Fatalf("kino replay --help: exit %d\n%s%s", code, out, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "--nats ") && strings.Contains(line, "default") {
			t.Fatalf("kino replay --help gives --nats a default:\n%s", line)
		}
	}
	if !strings.Contains(out, "offline") {
		t.Fatalf("kino replay --help does not say that without --nats it rebuilds offline:\n%s", out)
	}
}

// TestReplayOfflineRefusesARunningServe: the offline path sees a running
// kino serve's lock on the read models, before it opens the NATS store a
// second time, and says to replay online.
func TestReplayOfflineRefusesARunningServe(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	start(t, data)
	out, errOut, code := runCLI("replay", "--data", data)
	if code == 0 || !strings.Contains(errOut, "a kino serve is using") || !strings.Contains(errOut, "--nats") {
		t.Fatalf("kino replay --data on a running serve: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(data, "projections.db.rebuild")); !os.IsNotExist(err) {
		t.Fatal("side file left behind")
	}
}
