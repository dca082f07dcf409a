package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
)

// WorkConfig describes a durable consumer whose events are jobs with side
// effects (ffmpeg, webhook delivery). Each process runs Concurrency jobs at
// a time; the durable is shared, so more processes mean more workers.
type WorkConfig struct {
	Stream         string   // "" for the event stream (jobs carry a decoded Event), or DeliveriesStream
	Durable        string   // consumer name, shared by every worker process
	FilterSubjects []string // e.g. video.*.UploadAccepted
	Concurrency    int      // jobs this process runs at once (default 1)
	// MaxAckPending caps jobs in flight across all processes (0: no cap).
	// In-flight work is bounded by each process's goroutines, which fetch
	// one job at a time; a cap would also count jobs waiting out a retry
	// backoff, so a few hundred failing webhooks of one account could stall
	// everyone's for hours.
	MaxAckPending int
	// OnlyNew starts a new consumer at the stream's end instead of its
	// beginning: for side effects that must not replay history (webhooks
	// for videos finished before delivery existed).
	OnlyNew bool
	// AckWait is how long a job may go without Ack/InProgress before the
	// server hands it to another worker (default 60 s): a crashed worker's
	// job is redelivered after it.
	AckWait time.Duration
	Log     *slog.Logger
}

// Job is one delivered event. The handler must end it with exactly one of
// Ack, Retry or Release.
type Job struct {
	Event     domain.Event // on the event stream
	Data      []byte       // the raw message body
	Delivered int          // 1 on the first delivery
	msg       jetstream.Msg
	retry     func(delay time.Duration) error // how a fair queue's job waits out a backoff
	release   func() error                    // how a fair queue's job is handed back
}

// Header returns a header of the job's message.
func (j *Job) Header(key string) string { return j.msg.Headers().Get(key) }

// InProgress tells the server the job is alive; call it well within AckWait.
func (j *Job) InProgress() error { return j.msg.InProgress() }

// Ack ends the job: it will not be delivered again.
func (j *Job) Ack(ctx context.Context) error { return j.msg.DoubleAck(ctx) }

// Retry hands the job back to be delivered again after delay.
func (j *Job) Retry(delay time.Duration) error {
	if j.retry != nil {
		return j.retry(delay)
	}
	return j.msg.NakWithDelay(delay)
}

// Release hands the job back at once, for another worker (shutdown).
func (j *Job) Release() error {
	if j.release != nil {
		return j.release()
	}
	return j.msg.Nak()
}

// Work runs handle for every job of the durable consumer until ctx ends,
// then waits for running handlers to return. Handlers get ctx: when it is
// cancelled they should stop their work and Release the job.
func (s *Queues) Work(ctx context.Context, cfg WorkConfig, handle func(ctx context.Context, job *Job)) error {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.MaxAckPending <= 0 {
		cfg.MaxAckPending = -1
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	stream := s.c.Events
	if cfg.Stream == DeliveriesStream {
		stream = s.c.Deliveries
	}
	deliver := jetstream.DeliverAllPolicy
	if cfg.OnlyNew {
		deliver = jetstream.DeliverNewPolicy
	}
	var cons jetstream.Consumer
	err := untilDone(ctx, cfg.Log, "work "+cfg.Durable+": consumer", func() error {
		// Where a consumer starts is fixed when it is created (the server
		// refuses to change it): an existing one keeps its own.
		if existing, err := stream.Consumer(ctx, cfg.Durable); err == nil {
			deliver = existing.CachedInfo().Config.DeliverPolicy
		} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("work %s: consumer: %w", cfg.Durable, err)
		}
		var err error
		cons, err = stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:        cfg.Durable,
			Description:    "kino worker " + cfg.Durable,
			FilterSubjects: cfg.FilterSubjects,
			DeliverPolicy:  deliver,
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        cfg.AckWait,
			MaxDeliver:     -1, // attempts are counted by the domain, so a job is never dropped silently
			MaxAckPending:  cfg.MaxAckPending,
		})
		if err != nil {
			return fmt.Errorf("work %s: consumer: %w", cfg.Durable, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for i := 0; i < cfg.Concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.workLoop(ctx, cons, cfg, handle)
		}()
	}
	wg.Wait()
	return nil
}

func (s *Queues) workLoop(ctx context.Context, cons jetstream.Consumer, cfg WorkConfig, handle func(context.Context, *Job)) {
	var flog fetchLog
	for ctx.Err() == nil {
		// One message per fetch and no prefetching: a job waiting in a
		// client buffer would age towards AckWait while another runs.
		msg, err := cons.Next(jetstream.FetchContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
				flog.ok(cfg.Log, "fetch job", "consumer", cfg.Durable)
				continue
			}
			flog.failed(cfg.Log, "fetch job", "consumer", cfg.Durable, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		flog.ok(cfg.Log, "fetch job", "consumer", cfg.Durable)
		meta, err := msg.Metadata()
		if err != nil {
			cfg.Log.Error("job metadata", "consumer", cfg.Durable, "err", err)
			_ = msg.Nak()
			continue
		}
		job := &Job{Data: msg.Data(), Delivered: int(meta.NumDelivered), msg: msg}
		if cfg.Stream == "" {
			e := s.c.Decode(msg.Subject(), msg.Headers().Get(eventstore.HeaderEventType), msg.Data(), meta.Sequence.Stream)
			if _, refused := e.Data.(domain.Refused); refused {
				_ = msg.Term()
				continue
			}
			job.Event = e
		}
		handle(ctx, job)
	}
}

// Unfinished counts a work consumer's jobs not yet acknowledged: waiting
// or in flight.
func (s *Queues) Unfinished(ctx context.Context, stream, durable string) (int, error) {
	info, err := s.consumerInfo(ctx, stream, durable)
	if err != nil {
		return 0, err
	}
	return int(info.NumPending) + info.NumAckPending, nil
}

// AckFloor is the stream sequence up to which a work consumer has every
// job acknowledged: none of those is delivered again.
func (s *Queues) AckFloor(ctx context.Context, stream, durable string) (uint64, error) {
	info, err := s.consumerInfo(ctx, stream, durable)
	if err != nil {
		return 0, err
	}
	return info.AckFloor.Stream, nil
}

// consumerInfo is the state of work consumer durable on stream (the event
// stream, or DeliveriesStream).
func (s *Queues) consumerInfo(ctx context.Context, stream, durable string) (*jetstream.ConsumerInfo, error) {
	st := s.c.Events
	if stream == DeliveriesStream {
		st = s.c.Deliveries
	}
	cons, err := st.Consumer(ctx, durable)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", durable, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", durable, err)
	}
	return info, nil
}

// untilDone runs start until it succeeds or ctx ends. A worker makes its
// consumers once, when it starts: given up on a timeout (a cluster node
// rejoining, a leader being elected), the worker would run on and take no
// job until restarted. The first failure is logged, then it retries with
// a growing pause (at most 5 s).
func untilDone(ctx context.Context, log *slog.Logger, what string, start func() error) error {
	wait := 100 * time.Millisecond
	for {
		err := start()
		if err == nil {
			return nil
		}
		if errors.Is(err, eventstore.ErrUnauthorized) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) {
			return err
		}
		if wait == 100*time.Millisecond {
			log.Warn("cannot start yet; retrying", "what", what, "err", err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// fetchLog logs a work loop's failed fetches once per outage: the first
// failure, then nothing until a fetch succeeds again, which is logged with
// the outage's length. (On a cluster without quorum every loop fails
// several times a second.)
type fetchLog struct {
	mu    sync.Mutex
	since time.Time // zero while fetches succeed
}

func (f *fetchLog) failed(log *slog.Logger, msg string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.since.IsZero() {
		f.since = time.Now()
		log.Warn(msg+"; retrying, logged again when it works", args...)
	}
}

func (f *fetchLog) ok(log *slog.Logger, msg string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.since.IsZero() {
		log.Info(msg+" works again", append(args, "outage", time.Since(f.since).Round(time.Millisecond))...)
		f.since = time.Time{}
	}
}
