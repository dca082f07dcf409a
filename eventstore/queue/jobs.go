package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/internal/natsconn"
)

const (
	jobsLater = "jobs.later." // + account: jobs waiting out a retry backoff
	// BackoffDurable moves jobs whose backoff is over back to their
	// account's queue.
	BackoffDurable = "backoff"
	// accountDurable prefixes the per-account consumers: account-<slug>.
	accountDurable = "account-"
	// accountIdle is how long an account's consumer lives without pulls
	// once its last job is acknowledged; it is made again on demand.
	accountIdle = time.Hour

	headerEventSeq   = "Kino-Event-Seq"
	headerAccount    = "Kino-Account"
	headerNotBefore  = "Kino-Not-Before"
	headerHandedBack = "Kino-Handed-Back"
)

// FairConfig describes a fair work queue fed from the event stream: the
// intake durable copies each matching event into its account's queue, and
// every free slot of every process runs the job of the account with the
// fewest jobs running (ties: the one this process served least recently),
// among accounts under their limit.
type FairConfig struct {
	Intake         string   // durable on the event stream that feeds the queue, shared by every process
	FilterSubjects []string // e.g. video.*.UploadAccepted; an existing intake takes a changed list where it stands
	// Account names the account an event's job belongs to; "" refuses the
	// event (the intake drops it, a worker refuses such a job).
	Account func(domain.Event) string
	// Limit is how many jobs of account may run at once across all
	// processes (at least 1). It is called for every pick: cache it.
	Limit       func(ctx context.Context, account string) int
	Concurrency int           // jobs this process runs at once (default 1)
	AckWait     time.Duration // as in WorkConfig (default 60 s)
	// Poll is how often a free slot looks again when nothing woke it
	// (default 1 s): jobs freed on other processes and crashed workers'
	// jobs are noticed this way.
	Poll time.Duration
	Log  *slog.Logger
}

// FairWork runs handle for every job of the fair queue until ctx ends, then
// waits for running handlers to return. Jobs are those of Work: Retry puts
// the job aside for the delay (it does not count as running meanwhile).
func (s *Queues) FairWork(ctx context.Context, cfg FairConfig, handle func(ctx context.Context, job *Job)) error {
	if err := s.jobsStream(); err != nil {
		return fmt.Errorf("fair work: %w", err)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = time.Minute
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Limit == nil {
		cfg.Limit = func(context.Context, string) int { return 1 }
	}
	var intake, backoff jetstream.Consumer
	err := untilDone(ctx, cfg.Log, "fair work: consumers", func() error {
		var err error
		if intake, err = s.intakeConsumer(ctx, cfg); err != nil {
			return err
		}
		backoff, err = s.c.Jobs.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:        BackoffDurable,
			Description:    "kino: jobs waiting out a retry backoff",
			FilterSubjects: []string{jobsLater + ">"},
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        30 * time.Second,
			MaxDeliver:     -1,
			MaxAckPending:  -1,
		})
		if err != nil {
			return fmt.Errorf("fair work: consumer %s: %w", BackoffDurable, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// A new job anywhere wakes an idle slot at once.
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	sub, err := s.c.NC.Subscribe(natsconn.JobsReady+">", func(*nats.Msg) { poke() })
	if err != nil {
		return fmt.Errorf("fair work: subscribe: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.moveLoop(ctx, intake, cfg, s.intakeOne) }()
	go func() { defer wg.Done(); s.moveLoop(ctx, backoff, cfg, s.backoffOne) }()

	p := &picker{s: s, cfg: cfg, served: map[string]time.Time{}}
	slots := make(chan struct{}, cfg.Concurrency)
	ticker := time.NewTicker(cfg.Poll)
	defer ticker.Stop()
	for ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		var job *Job
		for job == nil && ctx.Err() == nil {
			if job = p.next(ctx); job == nil {
				select {
				case <-wake:
				case <-ticker.C:
				case <-ctx.Done():
				}
			}
		}
		if job == nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			handle(ctx, job)
			<-slots
			poke() // its account may be under its limit again
		}()
	}
	wg.Wait()
	return nil
}

// intakeConsumer finds or makes the intake durable. An existing durable
// of the same name (the single work queue kino had before, which every
// worker fetched from in stream order) keeps its position: it becomes the
// intake, so no event it had not yet delivered is lost or delivered twice.
func (s *Queues) intakeConsumer(ctx context.Context, cfg FairConfig) (jetstream.Consumer, error) {
	deliver := jetstream.DeliverAllPolicy
	if existing, err := s.c.Events.Consumer(ctx, cfg.Intake); err == nil {
		deliver = existing.CachedInfo().Config.DeliverPolicy
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("fair work: consumer %s: %w", cfg.Intake, err)
	}
	c, err := s.c.Events.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:        cfg.Intake,
		Description:    "kino: moves jobs into " + JobsStream,
		FilterSubjects: cfg.FilterSubjects,
		DeliverPolicy:  deliver,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        30 * time.Second,
		MaxDeliver:     -1,
		MaxAckPending:  -1,
	})
	if err != nil {
		return nil, fmt.Errorf("fair work: consumer %s: %w", cfg.Intake, err)
	}
	return c, nil
}

// moveLoop feeds one message at a time of a moving consumer (intake,
// backoff) to move, which acks or naks it.
func (s *Queues) moveLoop(ctx context.Context, cons jetstream.Consumer, cfg FairConfig, move func(context.Context, FairConfig, jetstream.Msg)) {
	var flog fetchLog
	for ctx.Err() == nil {
		msg, err := cons.Next(jetstream.FetchContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
				flog.failed(cfg.Log, "fetch job to move", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			} else {
				flog.ok(cfg.Log, "fetch job to move")
			}
			continue
		}
		flog.ok(cfg.Log, "fetch job to move")
		move(ctx, cfg, msg)
	}
}

// intakeOne copies an event into its account's queue; the video id as
// message id makes a second copy (a redelivered event) a no-op.
func (s *Queues) intakeOne(ctx context.Context, cfg FairConfig, msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		_ = msg.Nak()
		return
	}
	e := s.c.Decode(msg.Subject(), msg.Headers().Get(eventstore.HeaderEventType), msg.Data(), meta.Sequence.Stream)
	if _, refused := e.Data.(domain.Refused); refused {
		_ = msg.Term()
		return
	}
	owner := cfg.Account(e)
	if owner == "" { // not a kind of event the queue takes
		cfg.Log.Error("job refused: no account", "type", e.Type, "seq", meta.Sequence.Stream)
		_ = msg.Term()
		return
	}
	account := queueToken(owner)
	out := &nats.Msg{Subject: natsconn.JobsReady + account, Data: msg.Data(), Header: nats.Header{}}
	out.Header.Set(eventstore.HeaderEventType, msg.Headers().Get(eventstore.HeaderEventType))
	out.Header.Set(headerEventSeq, strconv.FormatUint(meta.Sequence.Stream, 10))
	out.Header.Set(headerAccount, account)
	if _, err := s.c.JS.PublishMsg(ctx, out, jetstream.WithMsgID(jobMsgID(e)), jetstream.WithExpectStream(JobsStream)); err != nil {
		cfg.Log.Warn("queue job", "video_id", e.AggregateID, "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	_ = msg.DoubleAck(ctx)
}

// jobMsgID is the message id of an event's job: a redelivered event is
// then a duplicate, dropped within the stream's window. An upload's is the
// video id, as it always was; any later job of the same video (a retry)
// is named by its own event, so it is never taken for the upload's.
func jobMsgID(e domain.Event) string {
	if _, ok := e.Data.(domain.UploadAccepted); ok {
		return e.AggregateID
	}
	return e.Type + "-" + e.ID
}

// backoffOne puts a job whose backoff is over back at the end of its
// account's queue, or hands it back until then.
func (s *Queues) backoffOne(ctx context.Context, cfg FairConfig, msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		_ = msg.Nak()
		return
	}
	h := msg.Headers()
	notBefore, err := time.Parse(time.RFC3339Nano, h.Get(headerNotBefore))
	if err == nil {
		if wait := time.Until(notBefore); wait > 0 {
			_ = msg.NakWithDelay(wait)
			return
		}
	}
	out := &nats.Msg{Subject: natsconn.JobsReady + queueToken(h.Get(headerAccount)), Data: msg.Data(), Header: nats.Header{}}
	for _, k := range []string{eventstore.HeaderEventType, headerEventSeq, headerAccount, headerHandedBack} {
		out.Header.Set(k, h.Get(k))
	}
	id := "backoff-" + strconv.FormatUint(meta.Sequence.Stream, 10)
	if _, err := s.c.JS.PublishMsg(ctx, out, jetstream.WithMsgID(id), jetstream.WithExpectStream(JobsStream)); err != nil {
		cfg.Log.Warn("requeue job after backoff", "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	_ = msg.DoubleAck(ctx)
}

// queueToken makes an account name usable as a subject token and in a
// consumer name; slugs are kept as they are.
func queueToken(account string) string {
	if domain.ValidSlug(account) {
		return account
	}
	sum := sha256.Sum256([]byte(account))
	return "x-" + hex.EncodeToString(sum[:12])
}

// picker chooses whose job a free slot runs.
type picker struct {
	s      *Queues
	cfg    FairConfig
	served map[string]time.Time // when this process last started a job of the account
	flog   fetchLog             // failed fetches, once per outage
}

type candidate struct {
	account          string
	cons             jetstream.Consumer
	running, waiting int
	served           time.Time
}

// next returns a job for a free slot, or nil when no account may run one
// now. Cost: one stream info, one consumer info per account holding jobs,
// and a fetch per account tried.
func (p *picker) next(ctx context.Context) *Job {
	info, err := p.s.c.Jobs.Info(ctx, jetstream.WithSubjectFilter(natsconn.JobsReady+">"))
	if err != nil {
		if ctx.Err() == nil {
			p.cfg.Log.Warn("jobs stream info", "err", err)
		}
		return nil
	}
	if len(p.served) > 4096 { // forget accounts that hold no jobs
		for account := range p.served {
			if _, ok := info.State.Subjects[natsconn.JobsReady+account]; !ok {
				delete(p.served, account)
			}
		}
	}
	var cands []candidate
	for subject := range info.State.Subjects {
		account := strings.TrimPrefix(subject, natsconn.JobsReady)
		limit := max(p.cfg.Limit(ctx, account), 1)
		cons, err := p.s.accountConsumer(ctx, account, limit, p.cfg.AckWait)
		if err != nil {
			if ctx.Err() == nil {
				p.cfg.Log.Warn("account job consumer", "account", account, "err", err)
			}
			continue
		}
		ci := cons.CachedInfo()
		c := candidate{account: account, cons: cons, running: ci.NumAckPending, waiting: int(ci.NumPending), served: p.served[account]}
		// An account at its limit, or with nothing new, is still tried:
		// a job left by a crashed worker (or Nak'd when its hand-back
		// could not be requeued) waits for redelivery while it still
		// counts in NumAckPending, and the server hands out those (and
		// only those) even at the limit.
		if c.waiting > 0 || c.running > 0 {
			cands = append(cands, c)
		}
	}
	// Fewest running first; among equals the one this process served
	// least recently (round-robin).
	slices.SortFunc(cands, func(a, b candidate) int {
		if a.running != b.running {
			return a.running - b.running
		}
		if c := a.served.Compare(b.served); c != 0 {
			return c
		}
		return strings.Compare(a.account, b.account)
	})
	for _, c := range cands {
		if job := p.fetch(ctx, c); job != nil {
			p.served[c.account] = time.Now()
			return job
		}
	}
	return nil
}

// fetch takes one job of the account if the server has one for it now.
func (p *picker) fetch(ctx context.Context, c candidate) *Job {
	batch, err := c.cons.FetchNoWait(1)
	if err != nil {
		if ctx.Err() == nil {
			p.flog.failed(p.cfg.Log, "fetch job", "err", err)
		}
		return nil
	}
	var msg jetstream.Msg
	for m := range batch.Messages() {
		msg = m
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && ctx.Err() == nil {
		// A permission refused, a consumer gone: say so, not idle in silence.
		p.flog.failed(p.cfg.Log, "fetch job", "account", c.account, "err", err)
	} else if ctx.Err() == nil {
		p.flog.ok(p.cfg.Log, "fetch job")
	}
	if msg == nil {
		return nil
	}
	meta, err := msg.Metadata()
	if err != nil {
		_ = msg.Nak()
		return nil
	}
	h := msg.Headers()
	handedBack, _ := strconv.Atoi(h.Get(headerHandedBack))
	job := &Job{Data: msg.Data(), Delivered: handedBack + int(meta.NumDelivered), msg: msg}
	job.retry = func(delay time.Duration) error {
		return p.s.putAside(ctx, msg, c.account, handedBack+int(meta.NumDelivered), delay)
	}
	job.release = func() error {
		return p.s.requeue(ctx, msg, c.account, handedBack+int(meta.NumDelivered))
	}
	e, err := domain.DecodeAs(h.Get(eventstore.HeaderEventType), msg.Data())
	if err != nil { // the intake only copies events it could decode: forged
		p.cfg.Log.Error("job refused: undecodable", "account", c.account, "err", err)
		_ = msg.Term()
		return nil
	}
	// Only the intake writes here (and workers, which may publish jobs.>):
	// a job is an event the queue takes (Account names its account: an
	// UploadAccepted, a TranscodeRetried) of the queue's own account, or
	// nothing.
	if owner := p.cfg.Account(e); owner == "" || queueToken(owner) != c.account {
		p.cfg.Log.Error("job refused: not a job of its queue's account", "account", c.account, "type", e.Type)
		_ = msg.Term()
		return nil
	}
	e.Seq, _ = strconv.ParseUint(h.Get(headerEventSeq), 10, 64)
	job.Event = e
	return job
}

// putAside moves a job to the backoff queue until delay has passed, then
// acknowledges it: while it waits it is not one of its account's running
// jobs (a Nak with delay would be, and could hold a free plan's only slot
// for the whole backoff).
func (s *Queues) putAside(ctx context.Context, msg jetstream.Msg, account string, delivered int, delay time.Duration) error {
	ctx = context.WithoutCancel(ctx)
	meta, err := msg.Metadata()
	if err != nil {
		return err
	}
	h := msg.Headers()
	out := &nats.Msg{Subject: jobsLater + account, Data: msg.Data(), Header: nats.Header{}}
	for _, k := range []string{eventstore.HeaderEventType, headerEventSeq, headerAccount} {
		out.Header.Set(k, h.Get(k))
	}
	out.Header.Set(headerHandedBack, strconv.Itoa(delivered))
	out.Header.Set(headerNotBefore, time.Now().Add(delay).UTC().Format(time.RFC3339Nano))
	// One copy per job message, however often this delivery is retried.
	id := "later-" + strconv.FormatUint(meta.Sequence.Stream, 10)
	if _, err := s.c.JS.PublishMsg(ctx, out, jetstream.WithMsgID(id), jetstream.WithExpectStream(JobsStream)); err != nil {
		return fmt.Errorf("put job aside: %w", err)
	}
	return msg.DoubleAck(ctx)
}

// requeue hands a job back at once: a copy goes to the end of its
// account's queue, then the job is acknowledged. A Nak would not do: the
// server keeps a Nak'd message's redelivery in memory only, so when the
// embedded server stops with the process that Nak'd (a graceful restart of
// kino serve), the restarted server redelivers it only AckWait after its
// last heartbeat; the copy is a stored message, delivered at the next pick
// of any process. Should the process die between the two steps, the job
// runs twice at worst, which the video's aggregate settles (one
// TranscodeSucceeded).
func (s *Queues) requeue(ctx context.Context, msg jetstream.Msg, account string, delivered int) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	meta, err := msg.Metadata()
	if err != nil {
		return err
	}
	h := msg.Headers()
	out := &nats.Msg{Subject: natsconn.JobsReady + account, Data: msg.Data(), Header: nats.Header{}}
	for _, k := range []string{eventstore.HeaderEventType, headerEventSeq, headerAccount} {
		out.Header.Set(k, h.Get(k))
	}
	out.Header.Set(headerHandedBack, strconv.Itoa(delivered))
	// One copy per job message, however often this delivery is handed back.
	id := "back-" + strconv.FormatUint(meta.Sequence.Stream, 10)
	if _, err := s.c.JS.PublishMsg(ctx, out, jetstream.WithMsgID(id), jetstream.WithExpectStream(JobsStream)); err != nil {
		// The job is not lost: the server redelivers it after AckWait.
		_ = msg.Nak()
		return fmt.Errorf("hand job back: %w", err)
	}
	return msg.DoubleAck(ctx)
}

// accountConsumer returns the account's consumer with fresh info, made or
// updated so that the server itself never hands out more than limit jobs
// of the account at once.
func (s *Queues) accountConsumer(ctx context.Context, account string, limit int, ackWait time.Duration) (jetstream.Consumer, error) {
	name := accountDurable + account
	c, err := s.c.Jobs.Consumer(ctx, name)
	if err == nil && c.CachedInfo().Config.MaxAckPending == limit && c.CachedInfo().Config.AckWait == ackWait {
		return c, nil
	}
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, err
	}
	return s.c.Jobs.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:           name,
		Description:       "kino: transcode jobs of account " + account,
		FilterSubjects:    []string{natsconn.JobsReady + account},
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           ackWait,
		MaxDeliver:        -1,
		MaxAckPending:     limit,
		InactiveThreshold: accountIdle,
	})
}

// jobsStream reports an error when the jobs stream was missing at Open.
func (s *Queues) jobsStream() error {
	if s.c.Jobs == nil {
		return fmt.Errorf("no stream %s: start the kino serve of this version first", JobsStream)
	}
	return nil
}

// JobsUnfinished counts the fair queue's jobs not yet acknowledged: events
// the intake has not moved yet, and jobs waiting, running or backing off.
func (s *Queues) JobsUnfinished(ctx context.Context, intake string) (int, error) {
	n := 0
	if cons, err := s.c.Events.Consumer(ctx, intake); err == nil {
		ci := cons.CachedInfo()
		n += int(ci.NumPending) + ci.NumAckPending
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return 0, fmt.Errorf("consumer %s: %w", intake, err)
	}
	if err := s.jobsStream(); err != nil {
		return 0, err
	}
	info, err := s.c.Jobs.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", JobsStream, err)
	}
	return n + int(info.State.Msgs), nil
}

// JobBacklog maps each account holding transcode jobs (waiting or running,
// not backing off) to their number.
func (s *Queues) JobBacklog(ctx context.Context) (map[string]int, error) {
	if err := s.jobsStream(); err != nil {
		return nil, err
	}
	info, err := s.c.Jobs.Info(ctx, jetstream.WithSubjectFilter(natsconn.JobsReady+">"))
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", JobsStream, err)
	}
	out := make(map[string]int, len(info.State.Subjects))
	for subject, n := range info.State.Subjects {
		out[strings.TrimPrefix(subject, natsconn.JobsReady)] = int(n)
	}
	return out, nil
}
