package queue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/queue"
)

// A kino worker's heartbeat, written with the worker role's credentials
// (which may write only its own buckets), is listed by kino serve until it
// stops, then gone at once. Status and Conn describe the stream and the
// connection.
func TestWorkerHeartbeatsAreListedUntilTheyStop(t *testing.T) {
	srv := eventstoretest.Server(t, t.TempDir())
	serve := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	worker, err := eventstore.Open(context.Background(), eventstore.Config{URL: srv.URL(), Auth: srv.Auth(eventstore.RoleWorker), Name: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	ctx := context.Background()

	// No process has beaten yet: an empty list, bucket or not.
	if ws, err := queue.New(serve).Workers(ctx); err != nil || len(ws) != 0 {
		t.Fatalf("workers before any heartbeat: %+v, %v", ws, err)
	}
	bctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- queue.New(worker).Heartbeat(bctx, "worker", func() int { return 2 }) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	defer stop()

	var ws []queue.WorkerInfo
	deadline := time.Now().Add(10 * time.Second)
	for len(ws) == 0 {
		if ws, err = queue.New(serve).Workers(ctx); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker's heartbeat never showed")
		}
		time.Sleep(10 * time.Millisecond) // polling the bucket
	}
	w := ws[0]
	if len(ws) != 1 || w.Role != "worker" || w.Running != 2 || w.PID == 0 || w.LastSeen.IsZero() || w.Started.IsZero() {
		t.Fatalf("workers %+v", ws)
	}
	stop()
	if ws, err := queue.New(serve).Workers(ctx); err != nil || len(ws) != 0 {
		t.Fatalf("workers after the heartbeat stopped: %+v, %v", ws, err)
	}

	st, err := serve.Status(ctx)
	if err != nil || st.Name != eventstore.StreamName || st.Replicas != 1 || st.Leader == "" {
		t.Fatalf("status %+v, %v", st, err)
	}
	if c := serve.Conn(ctx); !c.Connected || c.Status != "connected" || c.URL == "" {
		t.Fatalf("conn %+v", c)
	}
}
