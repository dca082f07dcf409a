package natsconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Every KV bucket kino uses is opened once, when a service starts, and
// used for the life of the process. A bucket can vanish under it: the
// buckets whose content may be lost (progress, send locks, heartbeats)
// live in memory on a single server, so a restart of that server (an
// operator's, or Heal's after a full disk) wipes them, and a server whose
// store directory was lost comes back without any. A handle to a vanished
// bucket fails every call with "no responders" or "stream not found" for
// good. So every bucket handle kino holds is a lastingKV: a call that
// fails because its bucket is gone opens the bucket again (creating it
// with its configuration, for a process allowed to) and is tried once
// more. A bucket that merely has no leader (a cluster without quorum)
// fails the same way, so the re-open is bounded in time and tried at
// most once per reopenEvery, not once per call.

// OpenMode says what opening a bucket may do when it is missing or
// different.
type OpenMode int

const (
	OpenOnly       OpenMode = iota // never create: processes that do not manage kino's streams
	CreateMissing                  // create a missing bucket; leave an existing one as it is
	CreateOrUpdate                 // create, or update an existing one to the configuration
)

// reopenEvery is how often a gone bucket may be opened again, and
// reopenTimeout how long one attempt may take.
const (
	reopenEvery   = time.Second
	reopenTimeout = 2 * time.Second
)

// Bucket opens a KV bucket, creating it (when create is set) only when it
// does not exist, so that processes without the right to change it can
// still use it. The handle outlives the bucket's disappearance (see
// lastingKV).
func (c *Conn) Bucket(ctx context.Context, create bool, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	mode := OpenOnly
	if create {
		mode = CreateMissing
	}
	return c.OpenBucket(ctx, cfg, mode)
}

// OpenBucket opens the bucket cfg names as mode allows and wraps it in a
// lastingKV that opens it the same way again when it is gone.
func (c *Conn) OpenBucket(ctx context.Context, cfg jetstream.KeyValueConfig, mode OpenMode) (jetstream.KeyValue, error) {
	first := true
	open := func(ctx context.Context) (kv jetstream.KeyValue, created bool, err error) {
		kv, err = c.JS.KeyValue(ctx, cfg.Bucket)
		switch {
		case errors.Is(err, jetstream.ErrBucketNotFound) && mode != OpenOnly:
			kv, err = c.JS.CreateOrUpdateKeyValue(ctx, cfg)
			created = err == nil
		case err == nil && first && mode == CreateOrUpdate:
			kv, err = c.JS.CreateOrUpdateKeyValue(ctx, cfg)
		}
		if err != nil {
			return nil, false, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
		}
		return kv, created, nil
	}
	kv, _, err := open(ctx)
	if err != nil {
		return nil, err
	}
	first = false
	return &lastingKV{name: cfg.Bucket, open: open, log: c.Log, kv: kv, noQuorum: c.NoQuorum}, nil
}

// bucketGone reports whether err says a bucket's stream does not answer:
// it is gone, or (on a cluster) has no leader now.
func bucketGone(err error) bool {
	return errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound) ||
		errors.Is(err, nats.ErrStreamNotFound) || errors.Is(err, nats.ErrBucketNotFound)
}

// lastingKV is a KV bucket handle that opens its bucket again when a call
// finds it gone, and retries that call once on the new handle.
type lastingKV struct {
	name string
	// open opens the bucket again, creating it when it is missing (for a
	// process allowed to): created says it did.
	open func(context.Context) (kv jetstream.KeyValue, created bool, err error)
	log  *slog.Logger
	// noQuorum is true while the store knows the event stream to have no
	// quorum: the buckets, on the same nodes, then have no leader either
	// and exist all the same.
	noQuorum func() bool

	mu       sync.Mutex
	kv       jetstream.KeyValue
	nextOpen time.Time // no re-open before
}

func (b *lastingKV) current() jetstream.KeyValue {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.kv
}

// reopen opens the bucket again after a call failed with err, when err
// says the bucket does not answer and no other re-open was tried within
// reopenEvery. It returns the new handle when the bucket had to be made
// again, or nil when the call's error stands (the bucket exists but has no
// leader now, or cannot be made).
func (b *lastingKV) reopen(ctx context.Context, err error) jetstream.KeyValue {
	if err == nil || !bucketGone(err) || ctx.Err() != nil || b.noQuorum() {
		return nil
	}
	b.mu.Lock()
	now := time.Now()
	if now.Before(b.nextOpen) {
		b.mu.Unlock()
		return nil
	}
	b.nextOpen = now.Add(reopenEvery)
	b.mu.Unlock()
	octx, cancel := context.WithTimeout(ctx, reopenTimeout)
	defer cancel()
	kv, created, oerr := b.open(octx)
	if oerr != nil || !created {
		b.log.Debug("bucket does not answer", "bucket", b.name, "err", err, "open_err", oerr)
		return nil
	}
	b.mu.Lock()
	b.kv = kv
	b.mu.Unlock()
	b.log.Info("bucket was gone (its NATS server restarted without it); made again", "bucket", b.name, "err", err)
	return kv
}

// lasting runs op on b's bucket, and once more on a fresh handle when
// the bucket was gone.
func lasting[T any](ctx context.Context, b *lastingKV, op func(jetstream.KeyValue) (T, error)) (T, error) {
	v, err := op(b.current())
	if kv := b.reopen(ctx, err); kv != nil {
		return op(kv)
	}
	return v, err
}

// lasting0 is lasting for an op that returns only an error.
func lasting0(ctx context.Context, b *lastingKV, op func(jetstream.KeyValue) error) error {
	_, err := lasting(ctx, b, func(kv jetstream.KeyValue) (struct{}, error) { return struct{}{}, op(kv) })
	return err
}

var _ jetstream.KeyValue = (*lastingKV)(nil)

func (b *lastingKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	return lasting(ctx, b, func(kv jetstream.KeyValue) (jetstream.KeyValueEntry, error) { return kv.Get(ctx, key) })
}

func (b *lastingKV) GetRevision(ctx context.Context, key string, revision uint64) (jetstream.KeyValueEntry, error) {
	return lasting(ctx, b, func(kv jetstream.KeyValue) (jetstream.KeyValueEntry, error) {
		return kv.GetRevision(ctx, key, revision)
	})
}

func (b *lastingKV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	return lasting(ctx, b, func(kv jetstream.KeyValue) (uint64, error) { return kv.Put(ctx, key, value) })
}

func (b *lastingKV) PutString(ctx context.Context, key string, value string) (uint64, error) {
	return lasting(ctx, b, func(kv jetstream.KeyValue) (uint64, error) { return kv.PutString(ctx, key, value) })
}

func (b *lastingKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	return lasting(ctx, b, func(kv jetstream.KeyValue) (uint64, error) { return kv.Create(ctx, key, value, opts...) })
}

func (b *lastingKV) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	return lasting(ctx, b, func(kv jetstream.KeyValue) (uint64, error) { return kv.Update(ctx, key, value, revision) })
}

func (b *lastingKV) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	return lasting0(ctx, b, func(kv jetstream.KeyValue) error { return kv.Delete(ctx, key, opts...) })
}

func (b *lastingKV) Purge(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	return lasting0(ctx, b, func(kv jetstream.KeyValue) error { return kv.Purge(ctx, key, opts...) })
}

func (b *lastingKV) Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return lasting(ctx, b, func(kv jetstream.KeyValue) (jetstream.KeyWatcher, error) { return kv.Watch(ctx, keys, opts...) })
}

func (b *lastingKV) WatchAll(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return lasting(ctx, b, func(kv jetstream.KeyValue) (jetstream.KeyWatcher, error) { return kv.WatchAll(ctx, opts...) })
}

func (b *lastingKV) WatchFiltered(ctx context.Context, keys []string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return lasting(ctx, b, func(kv jetstream.KeyValue) (jetstream.KeyWatcher, error) {
		return kv.WatchFiltered(ctx, keys, opts...)
	})
}

func (b *lastingKV) Keys(ctx context.Context, opts ...jetstream.WatchOpt) ([]string, error) {
	return lasting(ctx, b, func(kv jetstream.KeyValue) ([]string, error) { return kv.Keys(ctx, opts...) })
}

func (b *lastingKV) ListKeys(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyLister, error) {
	return lasting(ctx, b, func(kv jetstream.KeyValue) (jetstream.KeyLister, error) { return kv.ListKeys(ctx, opts...) })
}

func (b *lastingKV) ListKeysFiltered(ctx context.Context, filters ...string) (jetstream.KeyLister, error) {
	return lasting(ctx, b, func(kv jetstream.KeyValue) (jetstream.KeyLister, error) {
		return kv.ListKeysFiltered(ctx, filters...)
	})
}

func (b *lastingKV) History(ctx context.Context, key string, opts ...jetstream.WatchOpt) ([]jetstream.KeyValueEntry, error) {
	return lasting(ctx, b, func(kv jetstream.KeyValue) ([]jetstream.KeyValueEntry, error) { return kv.History(ctx, key, opts...) })
}

func (b *lastingKV) Bucket() string { return b.name }

func (b *lastingKV) PurgeDeletes(ctx context.Context, opts ...jetstream.KVPurgeOpt) error {
	return lasting0(ctx, b, func(kv jetstream.KeyValue) error { return kv.PurgeDeletes(ctx, opts...) })
}

func (b *lastingKV) Status(ctx context.Context) (jetstream.KeyValueStatus, error) {
	return lasting(ctx, b, func(kv jetstream.KeyValue) (jetstream.KeyValueStatus, error) { return kv.Status(ctx) })
}
