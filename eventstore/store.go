package eventstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/kino-video/kino/eventstore/internal/natsconn"
)

// StreamName is the JetStream stream holding every event.
const StreamName = "KINO_EVENTS"

// MediaBucket is the JetStream Object Store bucket of kino's media when
// it is kept in NATS (kino --media nats); eventstore/objects reads and
// writes it.
const MediaBucket = "KINO_MEDIA"

// Subjects of the event stream: <aggregate>.<id>.<EventType>.
var Subjects = []string{"video.>", "collection.>", "account.>", "webhook.>", "user.>"}

// Config tunes a Store. Zero values are filled by validate.
type Config struct {
	URL  string // nats://host:port
	Name string // connection name shown by the server
	Auth Auth   // credentials and TLS; the zero value sends none
	// Manage creates or updates kino's streams; only `kino serve` does.
	// Other clients (CLI, workers) look the stream up and fail when it is
	// missing, so they never change its configuration.
	Manage bool
	// Replicas of the streams on a cluster. 0 keeps what an existing stream
	// has (1 for a new one), so a restart without the flag never shrinks it.
	Replicas int
	// ReadyWait is how long Open retries while JetStream is not ready (a
	// cluster electing its leader, a stream not yet made by kino serve);
	// 0: it fails at once.
	ReadyWait time.Duration

	// Clock and ids come from the edge; tests may fix them.
	Now   func() time.Time
	NewID func() string

	// MaxAttempts bounds Execute's load-decide-append loop on conflicts.
	MaxAttempts int

	// Log gets what the store itself has to say (a refused event, an
	// outage); default slog.Default().
	Log *slog.Logger

	// AckTimeout bounds the wait for the server's answer to one append:
	// an append not acknowledged within it marks writes as failing (see
	// Health), and appends are then refused at once but for one probe per
	// ProbeEvery. Defaults 5 s and 2 s.
	AckTimeout time.Duration
	ProbeEvery time.Duration
}

func (c *Config) validate() error {
	if c.URL == "" {
		return errors.New("nats url is required")
	}
	if c.Name == "" {
		c.Name = "kino"
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.NewID == nil {
		c.NewID = func() string { return ulid.Make().String() }
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.AckTimeout <= 0 {
		c.AckTimeout = 5 * time.Second
	}
	if c.ProbeEvery <= 0 {
		c.ProbeEvery = 2 * time.Second
	}
	return nil
}

// Store appends and reads events on the KINO_EVENTS stream.
type Store struct {
	cfg       Config
	nc        *nats.Conn
	js        jetstream.JetStream
	stream    jetstream.Stream
	health    *health
	stopWatch func()             // stops watchQuorum and waits for it
	conn      *natsconn.Conn     // what the sibling packages use
	snapshots jetstream.KeyValue // SnapshotBucket; nil: aggregates are folded whole
	writers   aggregateLocks     // Execute's commands, one at a time per aggregate
}

// startQuorumWatch runs watchQuorum for kino serve on a replicated stream:
// the process that answers clients' writes and /readyz.
func (s *Store) startQuorumWatch() {
	s.stopWatch = func() {}
	if !s.cfg.Manage || s.cfg.Replicas <= 1 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.watchQuorum(ctx)
	}()
	s.stopWatch = func() { cancel(); <-done }
}

// Open connects to NATS and creates or updates the event stream.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("open event store: %w", err)
	}
	opts, err := cfg.Auth.options()
	if err != nil {
		return nil, fmt.Errorf("open event store: %w", err)
	}
	h := newHealth(cfg.Log, cfg.ProbeEvery)
	nc, err := nats.Connect(cfg.URL, append(opts,
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { h.disconnected(err) }),
		nats.ReconnectHandler(func(*nats.Conn) { h.reconnected() }),
	)...)
	if err != nil {
		if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
			return nil, fmt.Errorf("open event store: %s refused the connection: %w: %w", RedactURL(cfg.URL), ErrUnauthorized, err)
		}
		return nil, fmt.Errorf("open event store: connect %s: %w", RedactURL(cfg.URL), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("open event store: %w", err)
	}
	var st *Store
	wait := time.Duration(0)
	deadline := time.Now().Add(cfg.ReadyWait)
	for {
		st, err = setup(ctx, nc, js, cfg, h)
		if err == nil {
			st.startQuorumWatch()
			return st, nil
		}
		// On a cluster, JetStream answers only once the nodes have elected
		// a meta leader and enough peers are up for the replicas: until
		// then every step may fail, so all are retried until ReadyWait.
		if cfg.ReadyWait <= 0 || errors.Is(err, ErrUnauthorized) {
			nc.Close()
			return nil, err
		}
		if time.Now().Add(wait).After(deadline) {
			nc.Close()
			return nil, fmt.Errorf("%w (JetStream on %s not ready after %s: are enough cluster nodes up, sharing the same nats-creds?)", err, RedactURL(cfg.URL), cfg.ReadyWait)
		}
		if wait == 0 {
			cfg.Log.Info("waiting for the JetStream cluster", "err", err, "for_at_most", cfg.ReadyWait.String())
			wait = 100 * time.Millisecond
		} else {
			cfg.Log.Debug("JetStream not ready yet", "err", err)
		}
		select {
		case <-ctx.Done():
			nc.Close()
			return nil, fmt.Errorf("open event store: %w", ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

func eventsConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamName,
		Description: "kino events: every state change, the source of truth",
		Subjects:    Subjects,
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      0, // keep forever: the stream is the history
		Duplicates:  duplicateWindow,
		Replicas:    replicas,
		AllowDirect: true,
	}
}

// setup finds (or, managing, creates or updates) every stream and bucket
// of kino and returns the store using them.
func setup(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, cfg Config, h *health) (*Store, error) {
	if cfg.ReadyWait > 0 {
		// A cheap question first, answered once the cluster has a meta
		// leader: until then each request below would wait its full
		// timeout.
		probe, cancel := context.WithTimeout(ctx, time.Second)
		_, err := js.AccountInfo(probe)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("open event store: JetStream: %w", err)
		}
		if cfg.Manage && cfg.Replicas > 0 {
			createAtOnce(ctx, js, cfg)
		}
	}
	stream, err := js.Stream(ctx, StreamName)
	switch {
	case err == nil && !cfg.Manage:
	case errors.Is(err, jetstream.ErrStreamNotFound) && !cfg.Manage:
		return nil, fmt.Errorf("open event store: no stream %s on %s: start kino serve first", StreamName, RedactURL(cfg.URL))
	case err != nil && !errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, fmt.Errorf("open event store: stream %s: %w", StreamName, err)
	default:
		replicas := cfg.Replicas
		if replicas == 0 {
			replicas = 1
			if stream != nil {
				replicas = stream.CachedInfo().Config.Replicas
			}
		}
		stream, err = js.CreateOrUpdateStream(ctx, eventsConfig(replicas))
		if err != nil {
			return nil, fmt.Errorf("open event store: stream %s: %w", StreamName, err)
		}
	}
	cfg.Replicas = stream.CachedInfo().Config.Replicas
	deliveries, err := natsconn.OpenDeliveries(ctx, js, cfg.Manage, cfg.Replicas)
	if err != nil {
		return nil, err
	}
	jobs, err := natsconn.OpenJobs(ctx, js, cfg.Manage, cfg.Replicas)
	if err != nil {
		return nil, err
	}
	st := &Store{cfg: cfg, nc: nc, js: js, stream: stream, health: h, conn: newConn(nc, js, stream, cfg, h)}
	st.conn.Jobs, st.conn.Deliveries, st.conn.Decode = jobs, deliveries, st.decodeStored
	// The senders' and the progress buckets are made (kino serve) or found
	// here, so that a node rejoining its cluster is ready when Open
	// returns, and workers, whose role may not create streams, only ever
	// open them. A client that does not manage them may find them missing
	// (queue's OpenSendState and kv.OpenProgress say so to those who need them) but,
	// waiting for readiness (a cluster node starting beside a kino serve
	// still creating them), waits for them too.
	waiting := cfg.ReadyWait > 0
	if st.conn.SendLocks, st.conn.Attempts, err = st.conn.SendStateBuckets(ctx, cfg.Manage); err != nil && (cfg.Manage || waiting) {
		return nil, fmt.Errorf("open event store: %w", err)
	}
	if st.conn.Progress, err = st.conn.ProgressBucket(ctx); err != nil && (cfg.Manage || waiting || !errors.Is(err, jetstream.ErrBucketNotFound)) {
		return nil, fmt.Errorf("open event store: %w", err)
	}
	if jobs == nil && waiting {
		return nil, fmt.Errorf("open event store: no stream %s yet", natsconn.JobsStream)
	}
	// Snapshots only save reads: a client that finds no bucket (a worker
	// started before kino serve made it) folds aggregates whole.
	if st.snapshots, err = st.conn.Bucket(ctx, cfg.Manage, jetstream.KeyValueConfig{
		Bucket:      SnapshotBucket,
		Description: "kino: snapshots of aggregates' states, to decide without folding their whole history",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
	}); err != nil && cfg.Manage {
		return nil, fmt.Errorf("open event store: %w", err)
	}
	return st, nil
}

// Close drains the connection: in-flight publishes and acks finish first.
func (s *Store) Close() error {
	if s.nc.IsClosed() {
		return nil
	}
	s.health.close()
	s.stopWatch()
	done := make(chan struct{})
	s.nc.SetClosedHandler(func(*nats.Conn) { close(done) })
	if err := s.nc.Drain(); err != nil {
		s.nc.Close()
		return err
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.nc.Close()
	}
	return nil
}

// Now is the store's clock, truncated to milliseconds as events store it.
func (s *Store) Now() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// Log is where the store and the services on its connection log.
func (s *Store) Log() *slog.Logger { return s.cfg.Log }

// Manages reports whether this client creates and updates kino's streams
// and buckets (kino serve: Config.Manage).
func (s *Store) Manages() bool { return s.cfg.Manage }

// NewID returns a fresh ULID string.
func (s *Store) NewID() string { return s.cfg.NewID() }

// LastSeq is the sequence of the newest event in the stream (0 when empty).
func (s *Store) LastSeq(ctx context.Context) (uint64, error) {
	ctx, done, err := s.health.op(ctx, "stream info")
	if err != nil {
		return 0, err
	}
	defer done()
	info, err := s.stream.Info(ctx)
	if err != nil {
		if lerr := lost(ctx, "stream info"); lerr != nil {
			return 0, lerr
		}
		return 0, fmt.Errorf("stream info: %w", err)
	}
	return info.State.LastSeq, nil
}

// createAtOnce creates or updates every stream and bucket concurrently,
// ignoring errors (setup, and each service as it opens, then checks each
// in turn). On a new cluster the creation of each waits for its Raft group
// to elect a leader, seconds each: one after the other, a first start took
// half a minute. The media bucket is made by the media store that uses it
// (--media nats only).
func createAtOnce(ctx context.Context, js jetstream.JetStream, cfg Config) {
	tmp := &Store{cfg: cfg, js: js, conn: newConn(nil, js, nil, cfg, nil)}
	steps := []func(){
		func() { _, _ = js.CreateOrUpdateStream(ctx, eventsConfig(cfg.Replicas)) },
		func() { _, _ = natsconn.OpenDeliveries(ctx, js, true, cfg.Replicas) },
		func() { _, _ = natsconn.OpenJobs(ctx, js, true, cfg.Replicas) },
		func() { _, _, _ = tmp.conn.SendStateBuckets(ctx, true) },
		func() { _, _ = tmp.conn.ProgressBucket(ctx) },
		func() { _, _ = tmp.bucket(ctx, true, natsconn.RateBucketConfig(cfg.Replicas)) },
		func() { _, _ = tmp.bucket(ctx, true, natsconn.WorkersBucketConfig(cfg.Replicas)) },
		func() { _, _ = tmp.bucket(ctx, true, natsconn.DirectUploadsBucketConfig(cfg.Replicas)) },
		func() { _, _ = tmp.bucket(ctx, true, natsconn.KeyUsageBucketConfig(cfg.Replicas)) },
		// The TTL is kino serve's setting: kv.OpenSessions updates it, quickly
		// once the bucket's group has a leader.
		func() {
			_, _ = tmp.bucket(ctx, true, natsconn.SessionsBucketConfig(cfg.Replicas, natsconn.DefaultSessionTTL))
		},
	}
	var wg sync.WaitGroup
	for _, step := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			step()
		}()
	}
	wg.Wait()
}

// StreamLeader names the server leading the event stream's replicas
// ("" when it has none, or runs alone) and every server holding a replica,
// the leader included.
func (s *Store) StreamLeader(ctx context.Context) (leader string, replicas []string, err error) {
	info, err := s.stream.Info(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("stream info: %w", err)
	}
	if info.Cluster != nil {
		leader = info.Cluster.Leader
		if leader != "" {
			replicas = append(replicas, leader)
		}
		for _, p := range info.Cluster.Replicas {
			replicas = append(replicas, p.Name)
		}
	}
	return leader, replicas, nil
}

// Healthy reports an error when the NATS connection is not usable.
func (s *Store) Healthy() error {
	if st := s.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("nats connection %s", st)
	}
	return nil
}

// Abort closes the connection at once, without draining: what a crash
// looks like to the server. For tests of redelivery.
func (s *Store) Abort() {
	s.health.close()
	s.stopWatch()
	s.nc.Close()
}

// ErrUnauthorized means NATS refused the credentials (or their absence).
var ErrUnauthorized = natsconn.ErrUnauthorized

// RedactURL hides a password or token in a NATS URL (or comma-separated
// list of URLs), for errors, logs and --help.
func RedactURL(raw string) string {
	parts := strings.Split(raw, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			u.User = url.User("REDACTED")
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}

// duplicateWindow is how long the event stream remembers Nats-Msg-Ids.
const duplicateWindow = 2 * time.Minute

// untilReady is natsconn.Conn.UntilReady on the store's connection.
func (s *Store) untilReady(ctx context.Context, step func() error) error {
	return s.conn.UntilReady(ctx, step)
}

// bucket and openBucket open a lasting KV bucket on the store's
// connection (see natsconn.Conn.Bucket).
func (s *Store) bucket(ctx context.Context, create bool, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	return s.conn.Bucket(ctx, create, cfg)
}

func (s *Store) openBucket(ctx context.Context, cfg jetstream.KeyValueConfig, mode natsconn.OpenMode) (jetstream.KeyValue, error) {
	return s.conn.OpenBucket(ctx, cfg, mode)
}

// NATS is the store's connection, for eventstore's sibling packages (the
// work queues, the KV-backed services): they open their streams and
// buckets on it.
func (s *Store) NATS() *natsconn.Conn { return s.conn }

// newConn describes the store's connection for the sibling packages.
func newConn(nc *nats.Conn, js jetstream.JetStream, stream jetstream.Stream, cfg Config, h *health) *natsconn.Conn {
	c := &natsconn.Conn{
		NC: nc, JS: js, Events: stream,
		Manage: cfg.Manage, Replicas: max(cfg.Replicas, 1), ReadyWait: cfg.ReadyWait,
		DuplicateWindow: duplicateWindow, Log: cfg.Log, NewID: cfg.NewID,
		Now:      func() time.Time { return cfg.Now().UTC().Truncate(time.Millisecond) },
		Lost:     lost,
		NoQuorum: func() bool { return false },
	}
	if h != nil {
		c.Op, c.NoQuorum, c.NextReconnect = h.op, h.noQuorum, h.nextReconnect
		c.DownSince = func() time.Time { return h.snapshot().Since }
	}
	return c
}
