package natsserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/adminrpc"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/eventstore/natsserver"
	"github.com/kino-video/kino/eventstore/queue"
)

// A stranger on the machine reaches the embedded NATS port: with no
// credentials, or any credentials but the generated ones, it is refused.
func TestEmbeddedRefusesClientsWithoutItsCredentials(t *testing.T) {
	dir := t.TempDir()
	srv := eventstoretest.Server(t, dir)
	// A valid nkey seed the server does not know.
	other := t.TempDir()
	stranger := eventstoretest.Server(t, other)
	tests := []struct {
		name string
		opts func(t *testing.T) []nats.Option
	}{
		{"no credentials", func(*testing.T) []nats.Option { return nil }},
		{"user and password", func(*testing.T) []nats.Option { return []nats.Option{nats.UserInfo("kino", "kino")} }},
		{"token", func(*testing.T) []nats.Option { return []nats.Option{nats.Token("kino")} }},
		{"another server's nkey", func(t *testing.T) []nats.Option {
			o, err := nats.NkeyOptionFromSeed(stranger.Auth(eventstore.RoleServe).CredsFile)
			if err != nil {
				t.Fatal(err)
			}
			return []nats.Option{o}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, err := nats.Connect(srv.URL(), tt.opts(t)...)
			if err == nil {
				nc.Close()
				t.Fatal("connected")
			}
			if !errors.Is(err, nats.ErrAuthorization) {
				t.Fatalf("want an authorization error, got %v", err)
			}
		})
	}
	_, err := eventstore.Open(context.Background(), eventstore.Config{URL: srv.URL()})
	if !errors.Is(err, eventstore.ErrUnauthorized) {
		t.Fatalf("store without credentials: %v", err)
	}
	// The generated ones work.
	for _, role := range eventstore.Roles {
		nc, err := nats.Connect(srv.URL(), eventstoretest.Seed(t, srv, role))
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		nc.Close()
	}
}

// The seeds are generated on first start, private to kino's user, and the
// same on every later start.
func TestCredentialsAreGeneratedOnceAndPrivate(t *testing.T) {
	dir := t.TempDir()
	srv, err := natsserver.StartEmbedded(dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	if fi, err := os.Stat(filepath.Join(dir, natsserver.CredsDir)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("creds dir: %v %v", fi.Mode(), err)
	}
	first := map[string][]byte{}
	for _, role := range eventstore.Roles {
		path := natsserver.CredsFile(dir, role)
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", path, fi.Mode(), err)
		}
		if first[role], err = os.ReadFile(path); err != nil || !strings.HasPrefix(string(first[role]), "SU") {
			t.Fatalf("%s: not a user seed", path)
		}
	}
	if string(first[eventstore.RoleServe]) == string(first[eventstore.RoleWorker]) {
		t.Fatal("roles share a seed")
	}
	srv = eventstoretest.Server(t, dir)
	for role, want := range first {
		got, err := os.ReadFile(natsserver.CredsFile(dir, role))
		if err != nil || string(got) != string(want) {
			t.Fatalf("%s seed changed on restart", role)
		}
	}
	eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
}

// The worker role appends what its jobs produce and nothing else: a worker
// machine (or whoever stole its seed) cannot issue a key, change a plan,
// subscribe a webhook, or ask kino serve to replay.
func TestWorkerRoleCannotForgeAccountEventsOrCallAdmin(t *testing.T) {
	ctx := context.Background()
	srv := eventstoretest.Server(t, t.TempDir())
	serve := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	if _, err := kv.OpenProgress(ctx, serve); err != nil {
		t.Fatal(err)
	}
	// What a worker does is allowed.
	worker, err := eventstore.Open(ctx, eventstore.Config{URL: srv.URL(), Auth: srv.Auth(eventstore.RoleWorker), Name: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	hook := domain.StreamID{Aggregate: domain.AggWebhook, ID: "01JHOOK000000000000000000A"}
	if _, err := worker.Record(ctx, hook, domain.DeliveryFailed{Account: "acme", DeliveryID: "dlv_1", EventID: "e", Kind: domain.EventWebhookTest, Attempt: 1, Error: "x"}); err != nil {
		t.Fatalf("worker records a delivery attempt: %v", err)
	}
	progress, err := kv.OpenProgress(ctx, worker)
	if err != nil {
		t.Fatal(err)
	}
	if err := progress.Set(ctx, "01JVIDEO00000000000000000A", 0.5); err != nil {
		t.Fatalf("worker sets progress: %v", err)
	}
	// It takes a subscription's send lock and counts attempts in the
	// buckets kino serve made, and hears a video's deletion, which stops
	// that video's ffmpeg.
	sends, err := queue.New(worker).OpenSendState(ctx)
	if err != nil {
		t.Fatalf("worker opens the senders' buckets: %v", err)
	}
	lock, err := sends.TryLock(ctx, "01JHOOK000000000000000000A")
	if err != nil {
		t.Fatalf("worker takes a send lock: %v", err)
	}
	lock.Release(ctx)
	if err := sends.SetAttempts(ctx, "dlv_1", 1, 0); err != nil {
		t.Fatalf("worker counts an attempt: %v", err)
	}
	video := domain.StreamID{Aggregate: domain.AggVideo, ID: "01JVIDEO00000000000000000B"}
	deleted, stop, err := worker.Watch(video, domain.TypeVideoDeleted)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if _, err := serve.Record(ctx, video, domain.VideoDeleted{Account: "acme"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-deleted:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not hear the video's Deleted")
	}
	before, err := serve.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}

	violations := make(chan error, 16)
	nc, err := nats.Connect(srv.URL(), eventstoretest.Seed(t, srv, eventstore.RoleWorker), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		violations <- err
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	forged := []string{
		"account.acme." + domain.TypeKeyIssued,
		"account.acme." + domain.TypePlanChanged,
		"collection.acme.main." + domain.TypeCollectionCreated,
		"webhook.01JHOOK000000000000000000B." + domain.TypeWebhookSubscribed,
		"video.01JVIDEO00000000000000000A." + domain.TypeUploadAccepted,
	}
	for _, subject := range forged {
		t.Run(subject, func(t *testing.T) {
			// A plain publish is stored by the stream when allowed.
			if err := nc.Publish(subject, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			eventstoretest.WaitViolation(t, violations, subject)
		})
	}
	t.Run("kino.admin.replay", func(t *testing.T) {
		if err := nc.PublishRequest(adminrpc.Subject+".replay", nc.NewRespInbox(), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		eventstoretest.WaitViolation(t, violations, adminrpc.Subject+".replay")
	})
	t.Run("delete the stream", func(t *testing.T) {
		if err := nc.PublishRequest("$JS.API.STREAM.DELETE."+eventstore.StreamName, nc.NewRespInbox(), nil); err != nil {
			t.Fatal(err)
		}
		eventstoretest.WaitViolation(t, violations, "$JS.API.STREAM.DELETE."+eventstore.StreamName)
	})
	// Consumers other than a worker's own cannot be made, changed,
	// deleted, read from or acknowledged; its own (the fan-out, say) it
	// may use but not delete.
	for _, subject := range []string{
		"$JS.API.CONSUMER.DELETE." + eventstore.StreamName + "." + queue.FanoutDurable,
		"$JS.API.CONSUMER.CREATE." + eventstore.StreamName + ".other",
		"$JS.API.CONSUMER.CREATE." + eventstore.StreamName + ".other.video.>",
		"$JS.API.CONSUMER.DELETE." + queue.JobsStream + ".account-acme",
		"$JS.API.CONSUMER.MSG.NEXT." + eventstore.StreamName + ".other",
		"$JS.ACK." + eventstore.StreamName + ".other.1.7.1.1700000000000000000.0",
		// Nor can it touch the API nodes' rate limits.
		"$KV." + kv.RateBucket + ".YWNjdDphY21l",
	} {
		t.Run(subject, func(t *testing.T) {
			if err := nc.PublishRequest(subject, nc.NewRespInbox(), []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			eventstoretest.WaitViolation(t, violations, subject)
		})
	}
	if after, err := serve.LastSeq(ctx); err != nil || after != before {
		t.Fatalf("stream moved from %d to %d (%v)", before, after, err)
	}
}

// Only kino serve answers kino.admin.>: the operator's CLI may call it
// but not pose as the server.
func TestAdminRoleCannotAnswerAdminCalls(t *testing.T) {
	ctx := context.Background()
	srv := eventstoretest.Server(t, t.TempDir())
	serve := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	admin, err := eventstore.Open(ctx, eventstore.Config{URL: srv.URL(), Auth: srv.Auth(eventstore.RoleAdmin), Name: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = adminrpc.Serve(actx, admin, func(context.Context, string, json.RawMessage, func(any)) (any, error) { return "forged", nil })
	}()
	if _, err := adminrpc.Call(ctx, serve, "replay", nil, func(json.RawMessage) {}); !errors.Is(err, adminrpc.ErrNoAdmin) {
		t.Fatalf("call answered by the admin role: %v", err)
	}
}

// NATS grants subjects, not bodies: the worker role may write
// video.*.TranscodeFailed, and a stolen worker seed stored a KeyIssued for
// another account under that subject. Every reader checks the subject
// against the body, so such a message is refused wherever it is read:
// following the stream, scanning, loading the aggregate.
func TestForgedEventUnderAnAllowedSubjectIsRefused(t *testing.T) {
	ctx := context.Background()
	srv := eventstoretest.Server(t, t.TempDir())
	serve := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	nc, err := nats.Connect(srv.URL(), eventstoretest.Seed(t, srv, eventstore.RoleWorker))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	video := domain.StreamID{Aggregate: domain.AggVideo, ID: "01JVIDEO00000000000000000C"}
	body, err := domain.Encode(domain.Event{ID: "01JFORGED000000000000000001", Type: domain.TypeKeyIssued, Version: 1,
		AggregateID: "bob", OccurredAt: time.Now().UTC(),
		Data: domain.KeyIssued{KeyID: "k1", Hash: strings.Repeat("ab", 32), Prefix: "svc_live_EVIL", Label: "forged"}})
	if err != nil {
		t.Fatal(err)
	}
	msg := nats.NewMsg(video.Subject(domain.TypeTranscodeFailed))
	msg.Header.Set(eventstore.HeaderEventType, domain.TypeKeyIssued)
	msg.Data = body
	reply, err := nc.RequestMsg(msg, 5*time.Second)
	if err != nil || strings.Contains(string(reply.Data), "error") {
		t.Fatalf("the server was expected to store it (the subject is allowed): %v %s", err, reply.Data)
	}
	// And one that is no event at all: refused too, not a halt of every
	// reader (the projector, a replay, kino serve's start).
	junk := nats.NewMsg(video.Subject(domain.TypeTranscodeFailed))
	junk.Header.Set(eventstore.HeaderEventType, domain.TypeTranscodeFailed)
	junk.Data = []byte("not json at all")
	if reply, err := nc.RequestMsg(junk, 5*time.Second); err != nil || strings.Contains(string(reply.Data), "error") {
		t.Fatalf("the server was expected to store it: %v", err)
	}
	// A genuine event after them.
	if _, err := serve.Record(ctx, domain.StreamID{Aggregate: domain.AggAccount, ID: "bob"}, domain.AccountCreated{Plan: domain.PlanFree}); err != nil {
		t.Fatal(err)
	}

	var seen []string
	tailCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = serve.Tail(tailCtx, 1, func(e domain.Event, caughtUp bool) error {
		seen = append(seen, e.Type)
		if caughtUp {
			return errors.New("done")
		}
		return nil
	})
	if len(seen) != 3 || seen[0] != "Refused" || seen[1] != "Refused" || seen[2] != domain.TypeAccountCreated {
		t.Fatalf("the stream read as %v (%v)", seen, err)
	}
	var keys int
	if err := serve.Scan(ctx, []string{"video.>", "account.>"}, func(e domain.Event) error {
		if _, ok := e.Data.(domain.KeyIssued); ok {
			keys++
		}
		return nil
	}); err != nil || keys != 0 {
		t.Fatalf("a scan found %d KeyIssued (%v)", keys, err)
	}
	events, last, err := serve.Load(ctx, video)
	if err != nil || len(events) != 0 || last != 2 {
		t.Fatalf("the video loads as %v, last %d (%v): want no event and last 2, so its next append expects the right sequence", events, last, err)
	}
}
