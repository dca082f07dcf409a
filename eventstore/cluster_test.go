package eventstore_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/natsserver"
)

// With two of three nodes gone the event stream has no quorum. The store
// finds out by itself, without an append (a node its load balancer
// dropped gets none): Health says writes fail, for as long as the quorum
// is lost (a leaderless replica still answers the stream's info, which is
// no proof of health), and appends are refused at once, before anything
// is sent, as Unavailable (503 with Retry-After, not a 500). Once the nodes
// are back it says it takes writes again, and an append goes through.
func TestAppendWithoutQuorumIsUnavailable(t *testing.T) {
	t.Parallel()
	c := eventstoretest.StartCluster(t, 3)
	ctx := context.Background()
	s := c.Open(0, 3, func(cfg *eventstore.Config) {
		cfg.AckTimeout = 2 * time.Second
		cfg.ProbeEvery = 100 * time.Millisecond
	})
	create := func(slug string) error {
		_, err := s.Append(ctx, domain.AccountStream(slug), 0, []domain.Payload{domain.AccountCreated{Plan: domain.PlanFree}})
		return err
	}
	before, err := s.Append(ctx, domain.AccountStream("before"), 0, []domain.Payload{domain.AccountCreated{Plan: domain.PlanFree}})
	if err != nil {
		t.Fatal(err)
	}
	c.Nodes[1].Shutdown()
	c.Nodes[2].Shutdown()
	lost := time.Now()
	eventstoretest.Eventually(t, "the store to see the quorum lost", func() bool { return s.Health().Writes != nil })
	t.Logf("quorum lost -> writes reported failing: %s", time.Since(lost).Round(100*time.Millisecond))
	err = create("without-quorum")
	if !domain.IsKind(err, domain.Unavailable) || !errors.Is(err, eventstore.ErrUnavailable) || !errors.Is(err, eventstore.ErrNotStored) {
		t.Fatalf("append without quorum: %v (kind %v), want Unavailable, refused before it was sent", err, domain.KindOf(err))
	}
	// It stays so, through many of the store's probes and the replica's
	// leaderless answers.
	for until := time.Now().Add(3 * time.Second); time.Now().Before(until); time.Sleep(50 * time.Millisecond) {
		if s.Health().Writes == nil || s.Writable() == nil {
			t.Fatal("the store says it takes writes again without a quorum")
		}
	}
	// A read from the leader for a client that is waiting (FailFast: an
	// HTTP request) gets the answer of a leader that has not stepped down
	// yet (with the two other nodes down no write can pass it), or
	// Unavailable: when
	// the servers say there is no leader, and when they do not answer at
	// all (in some runs), which must not hold the client until its
	// context ends.
	fctx, fcancel := context.WithTimeout(eventstore.FailFast(ctx), 20*time.Second)
	seq, err := s.LastOf(fctx, domain.AccountStream("before").Filter())
	fcancel()
	if err == nil && seq != before[0].Seq || err != nil && (!domain.IsKind(err, domain.Unavailable) || !errors.Is(err, eventstore.ErrUnavailable)) {
		t.Fatalf("a read for a waiting client without a quorum: %d %v (kind %v), want %d or Unavailable", seq, err, domain.KindOf(err), before[0].Seq)
	}
	// A read from the leader (sessions, the webhook fan-out) asked while
	// there is none waits for the next one instead of failing.
	gets, err := s.NATS().NC.SubscribeSync("$JS.API.STREAM.MSG.GET." + eventstore.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	type read struct {
		seq uint64
		err error
	}
	got := make(chan read, 1)
	go func() {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		seq, err := s.LastOf(rctx, domain.AccountStream("before").Filter())
		got <- read{seq, err}
	}()
	eventstoretest.Eventually(t, "a read asked of the leaderless stream", func() bool {
		n, _, _ := gets.Pending()
		return n > 0
	})
	if err := gets.Unsubscribe(); err != nil { // else the store's close drains it
		t.Fatal(err)
	}
	c.Start(1)
	c.Start(2)
	eventstoretest.Eventually(t, "writes to be reported working again", func() bool { return s.Health().Writes == nil })
	if err := create("after-quorum"); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.err != nil || r.seq == 0 {
		t.Fatalf("the read asked while the stream had no leader: %d %v", r.seq, r.err)
	}
}

// A node alone, its peers never up: eventstore.Open gives up after ReadyWait with an
// error that says what to check.
func TestOpenOnAClusterWithoutQuorumGivesUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := natsserver.InitCluster(dir); err != nil {
		t.Fatal(err)
	}
	self := freeAddr(t)
	e := loneNode(t, dir, self, "nats://"+self, "nats://"+freeAddr(t), "nats://"+freeAddr(t))
	_, err := eventstore.Open(context.Background(), eventstore.Config{URL: e.URL(), Auth: e.Auth(eventstore.RoleServe), Manage: true, Replicas: 3, ReadyWait: 2 * time.Second, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), "not ready after 2s") || !strings.Contains(err.Error(), "enough cluster nodes up") {
		t.Fatalf("want an error saying the cluster is not ready, got %v", err)
	}
}

// loneNode starts a cluster node on dir whose routes lead nowhere but to
// itself.
func loneNode(t *testing.T, dir, listen string, routes ...string) *natsserver.Embedded {
	t.Helper()
	e, err := natsserver.StartNode(dir, "127.0.0.1:0", &natsserver.Cluster{Listen: listen, Routes: routes, Name: "n-" + filepath.Base(dir)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	return e
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
