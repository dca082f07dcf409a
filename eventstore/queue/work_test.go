package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/queue"
)

// A worker that stops leaves no job behind. Its last pull request is still
// open at the server (a pull cannot be withdrawn); a job the server sends
// there after the worker stopped is handed back at once, not held until
// AckWait (ten minutes here), and the next worker runs it.
func TestStoppedWorkerHandsBackAJobSentToIt(t *testing.T) {
	s := eventstoretest.Run(t)
	cfg := queue.WorkConfig{Durable: "w", FilterSubjects: []string{"video.*.UploadAccepted"}, AckWait: 10 * time.Minute}
	waiting := func() (pulls int, delivered uint64, pending int) {
		cons, err := s.NATS().Events.Consumer(context.Background(), cfg.Durable)
		if err != nil {
			return 0, 0, 0
		}
		info, err := cons.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return info.NumWaiting, info.Delivered.Stream, info.NumAckPending
	}

	// The first worker runs one job; its next pull is then fresh at the
	// server when the worker stops.
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- queue.New(s).Work(ctx, cfg, func(ctx context.Context, job *queue.Job) {
			ran <- job.Event.AggregateID
			if err := job.Ack(ctx); err != nil {
				t.Error(err)
			}
		})
	}()
	first := upload(t, s, "a")
	if got := receiveID(t, ran); got != first {
		t.Fatalf("first job %s, want %s", got, first)
	}
	eventstoretest.Eventually(t, "the worker's next pull", func() bool {
		pulls, _, pending := waiting()
		return pulls >= 1 && pending == 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// The server sends the next job to the stopped worker's pull, which
	// hands it back: the next worker runs it, as its second delivery, long
	// before AckWait.
	second := upload(t, s, "a")
	last, err := s.LastSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	eventstoretest.Eventually(t, "the job sent to the stopped worker's pull", func() bool {
		_, delivered, _ := waiting()
		return delivered >= last
	})

	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	again := make(chan string, 1)
	go func() {
		_ = queue.New(s).Work(ctx2, cfg, func(ctx context.Context, job *queue.Job) {
			_ = job.Ack(ctx)
			if job.Delivered != 2 {
				t.Errorf("job %s at delivery %d, want its second", job.Event.AggregateID, job.Delivered)
			}
			again <- job.Event.AggregateID
		})
	}()
	if got := receiveID(t, again); got != second {
		t.Fatalf("next worker's job %s, want %s", got, second)
	}
}

// receiveID is the next id sent on ch, failing the test after
// eventstoretest.Patience.
func receiveID(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case id := <-ch:
		return id
	case <-time.After(eventstoretest.Patience):
		t.Fatal("no job ran")
		return ""
	}
}
