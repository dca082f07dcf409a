package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/kino-video/kino/transport/metrics"

	"github.com/kino-video/kino/transport/httpapi/keys"

	"github.com/kino-video/kino/transport/httpapi/drain"

	"github.com/kino-video/kino/transport/httpapi/captions"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/accounts"
	"github.com/kino-video/kino/transport/diskspace"
	"github.com/kino-video/kino/transport/httpapi/admin"
	"github.com/kino-video/kino/transport/httpapi/cdn"
	"github.com/kino-video/kino/transport/httpapi/player"
	"github.com/kino-video/kino/transport/httpapi/probes"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/httpapi/webhooks"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/playback"
	"github.com/kino-video/kino/transport/ratelimit"
	"github.com/kino-video/kino/transport/tus"
)

// Projector is what the API needs of the projector: to wait until the read
// models include a write.
type Projector interface {
	WaitFor(ctx context.Context, seq uint64) error
	Err() error      // non-nil once the projector has stopped on an error
	Applied() uint64 // the last stream sequence in the read models
}

// ProgressSource tells how far a PROCESSING video has come (0..1), and
// how fast, as its worker reports it.
type ProgressSource interface {
	Live(videoID string) (kv.ProgressReport, bool)
}

// WebhookTester sends test deliveries.
type WebhookTester = webhooks.Tester

// Sealer seals a webhook's signing secret for its id before it is stored
// (webhooks.Sealer).
type Sealer = webhooks.Sealer

// Redeliverer queues a delivery that gave up once more, as a new delivery
// (webhook.Redeliverer), and records it; first is its first attempt.
type Redeliverer = webhooks.Redeliverer

// Media is what the API needs of the media store (media.Dir, a directory,
// or media.Bucket, an object store such as JetStream's): a local file to
// receive an upload into, storing it as a video's original, opening a
// video's file for /cdn, and deleting a video's files.
type Media interface {
	Incoming() (*os.File, error)
	Commit(ctx context.Context, tmpPath, id, ext string) error
	Open(ctx context.Context, id, rel string) (*media.File, error)
	Remove(ctx context.Context, id string) error
}

// Store is what the API needs of the event store (an *eventstore.Store):
// the log its commands run on, ids, whether writes can land now, and what
// the operator's endpoints read.
type Store interface {
	admin.Store
	LastSeq(ctx context.Context) (uint64, error)
	LastOf(ctx context.Context, filter string) (uint64, error)
	Healthy() error
	Writable() error
	Health() eventstore.Health
}

// Config wires the API: the services it calls, then one documented group
// per concern. validate fills the defaults.
type Config struct {
	Store     Store
	Queues    admin.Queues // the operator's view of the work queues
	DB        *projections.DB
	Projector Projector
	Media     Media
	Progress  ProgressSource // nil: PROCESSING videos report 0
	Webhooks  WebhookTester  // nil: POST /v1/webhooks/{id}/test answers 503
	Redeliver Redeliverer    // nil: POST .../deliveries/{deliveryId}/redeliver answers 503
	Secrets   Sealer         // seals webhook secrets; nil: POST /v1/webhooks fails
	// Users is the user service: logins, browser sessions, the keys' last
	// use. Nil: /auth/* answer 503 and only API keys authenticate.
	Users *accounts.Users
	// EventServer is the embedded NATS server's health (nil with an
	// external NATS): while it reports a fault, writes are refused (503)
	// and /readyz and /healthz say so.
	EventServer ServerHealth
	Plans       domain.Plans
	Log         *slog.Logger
	Now         func() time.Time

	// SettleTimeout bounds how long a write waits for the read models to
	// include it before answering (the write is durable either way).
	// Default 5 s.
	SettleTimeout time.Duration
	// MaxReadLag is how many events the read models may be behind the
	// stream before /readyz reports this node not ready. Default 1000.
	MaxReadLag uint64

	Origin   Origin
	Uploads  Uploads
	Playback Playback
	Limits   Limits
	Admin    Admin
	Captions Captions

	// Metrics records each answer and the uploads accepted; nil: none.
	Metrics *metrics.Metrics
}

// Captions says what generated captions this kino offers.
type Captions struct {
	// Languages are the BCP 47 languages the workers' speech recognition
	// engine generates captions in; none: POST
	// /v1/videos/{id}/captions/generate is refused (400).
	Languages []string
}

// Origin is where the API and its media are reached from outside.
type Origin struct {
	// CDNURL is the public base of media ({cdn_url}) written into video
	// records; files are served under /cdn by this server either way.
	// Empty: each answer uses this server's /cdn at the origin the request
	// reached (origin.go).
	CDNURL string
	// Local (scheme://host[:port]) stands in for the request's origin when
	// its Host header is not a plain host[:port] (origin.go). Default
	// http://localhost.
	Local string
	// BaseURL is the API's public base, ending in /v1, written into tus
	// Location headers and direct upload URLs. Empty: Locations are paths
	// and direct upload URLs use the request's Host.
	BaseURL string
	// PublicURL is the site's public base (e.g. https://kino.example.com):
	// set-password links start with it, and when it is https session
	// cookies are Secure. Default: the request's own host.
	PublicURL string
	// MediaRedirect makes /cdn answer a GET of a segment, still, preview
	// or download with a redirect to a short-lived presigned URL of the
	// object store, after its checks, instead of serving the bytes
	// itself. Media must presign (a media.Bucket on S3).
	MediaRedirect bool
}

// presigner is a media store that can give /cdn URLs to redirect to.
type presigner interface {
	cdn.Redirector
	CanPresign() bool
}

// Uploads bounds uploads (POST /v1/videos, tus, direct) and says where
// unfinished ones are kept.
type Uploads struct {
	// MaxInFlight bounds uploads in flight (each holds a 1 MiB buffer);
	// more get 503 with Retry-After. Default 64. Each account is also
	// bounded by its plan's ConcurrentUploads (more get 429).
	MaxInFlight int
	// IdleTimeout ends an upload whose body makes no progress for this
	// long: 408, and the partial file is removed. Any other request body
	// must arrive whole within it. Default 30 s.
	IdleTimeout time.Duration
	// DiskDirs are directories whose file systems keep DiskReserve free
	// (the NATS store, the media directory): an upload that would eat into
	// it is refused with 507, so the event store never runs dry. None: no
	// reserve.
	DiskDirs    []string
	DiskReserve diskspace.Reserve
	// TusDir holds this node's unfinished tus uploads (a file of bytes and
	// a file of state each); it must be on the media store's file system,
	// so the last byte commits with a rename. Empty: tus answers 503.
	TusDir string
	// TusExpiry is how long an unfinished tus upload lives after its last
	// PATCH (or its creation). Default 24 h.
	TusExpiry time.Duration
	// Direct keeps direct upload URLs (kv.DirectUploads). Nil:
	// POST /v1/uploads answers 503.
	Direct tus.DirectUploadStore
}

// Playback configures signed playback and the /play page.
type Playback struct {
	// Keys sign and check kino's playback tokens (HS256): the ring kept
	// in NATS, which workers cannot read (playback.Ring). Nil: kino issues
	// and accepts none (customer-signed tokens still work).
	Keys playback.KeyRing
	// FrameAncestors are origins, besides kino's own, that may embed
	// /play in a frame (CSP frame-ancestors).
	FrameAncestors []string
}

// Limits are the request limits that are not a plan's.
type Limits struct {
	// Ledger shares the rate limits (per account, and per address for
	// requests without a valid key) with the other API nodes on the same
	// NATS (kv.RateLimits). Nil: each process counts alone.
	Ledger ratelimit.Ledger
	// AuthFailuresPerMinute bounds the requests without a valid API key
	// (missing or wrong) that one client address may send in any minute;
	// more get 429. Default 60.
	AuthFailuresPerMinute int
	// LoginsPerAddress and LoginsPerUser bound login attempts per client
	// address and per email tried, in any minute, across API nodes; more
	// get 429. Defaults 20 and 10.
	LoginsPerAddress int
	LoginsPerUser    int
	// TrustedProxies are the peers whose X-Forwarded-For is believed when
	// telling client addresses apart. Empty: the peer's own address.
	TrustedProxies []netip.Prefix
}

// Admin enables the /v1/admin routes for operators.
type Admin struct {
	// Token is the operators' bearer token (Authorization: Bearer
	// <token>, not an API key), at least MinAdminTokenLen characters.
	// Empty: /v1/admin answers 404.
	Token string
	// Replayer runs POST /v1/admin/replay.
	Replayer admin.Replayer
}

func (c *Config) validate() error {
	if c.Store == nil || c.Queues == nil || c.DB == nil || c.Projector == nil || c.Media == nil {
		return errors.New("httpapi: store, queues, db, projector and media are required")
	}
	if c.Plans == nil {
		c.Plans = domain.DefaultPlans()
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.SettleTimeout <= 0 {
		c.SettleTimeout = 5 * time.Second
	}
	if c.MaxReadLag == 0 {
		c.MaxReadLag = 1000
	}
	for _, o := range c.Playback.FrameAncestors {
		if err := player.CheckOrigin(o); err != nil {
			return fmt.Errorf("httpapi: frame ancestor: %w", err)
		}
	}
	if n := utf8.RuneCountInString(c.Admin.Token); c.Admin.Token != "" && n < MinAdminTokenLen {
		return fmt.Errorf("httpapi: the admin token must be at least %d characters (got %d)", MinAdminTokenLen, n)
	}
	if err := c.Origin.validate(); err != nil {
		return err
	}
	c.Uploads.validate()
	c.Limits.validate()
	return nil
}

func (o *Origin) validate() error {
	o.CDNURL = strings.TrimRight(o.CDNURL, "/")
	if o.Local == "" {
		o.Local = "http://localhost"
	}
	if u, err := url.Parse(o.Local); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.User != nil {
		return fmt.Errorf("httpapi: local origin %q is not an origin like http://localhost:8080", o.Local)
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	if o.PublicURL != "" {
		u, err := url.Parse(o.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("httpapi: public url %q is not a URL like https://kino.example.com", o.PublicURL)
		}
	}
	return nil
}

func (u *Uploads) validate() {
	if u.MaxInFlight <= 0 {
		u.MaxInFlight = 64
	}
	if u.IdleTimeout <= 0 {
		u.IdleTimeout = 30 * time.Second
	}
	if u.TusExpiry <= 0 {
		u.TusExpiry = 24 * time.Hour
	}
}

func (l *Limits) validate() {
	if l.AuthFailuresPerMinute <= 0 {
		l.AuthFailuresPerMinute = 60
	}
	if l.LoginsPerAddress <= 0 {
		l.LoginsPerAddress = 20
	}
	if l.LoginsPerUser <= 0 {
		l.LoginsPerUser = 10
	}
}

// MinAdminTokenLen is the shortest admin token accepted.
const MinAdminTokenLen = 24

// Server is the HTTP API.
type Server struct {
	cfg      Config
	limiter  *ratelimit.Limiter // requests per account
	failures *ratelimit.Limiter // requests without a valid key per client address
	lastSeq  lastSeqCache
	own      ownWrites // writes answered before the read models had them
	uploads  uploadSlots
	disk     diskspace.Guard
	tus      *tus.FileStore // nil: no TusDir
	// tusUploads serves tus and direct upload URLs; tusRetryEvery is how
	// often pending tus uploads are tried again (tus.RetryEvery);
	// tusAccepting, in tests only, is called as a complete upload is
	// accepted.
	tusUploads    *tus.Handler
	tusRetryEvery time.Duration
	tusAccepting  func(id string)
	tokens        playback.Tokens
	cdn           *cdn.Handler      // /cdn
	probes        *probes.Probes    // /healthz, /readyz
	admin         *admin.Handler    // the operator's /v1/admin
	webhooks      *webhooks.Handler // /v1/webhooks
	captions      *captions.Handler // /v1/videos/{id}/captions
	keys          *keys.Handler     // /v1/keys, /v1/signing-keys
	pages         *player.Pages     // /play and its assets
	router        *mux.Router
	// Logins: attempts per client address and per email; cross-origin
	// checks of cookie-authenticated requests.
	loginAddrs, loginUsers *ratelimit.Limiter
	cop                    *http.CrossOriginProtection
}

// New builds the API's routes.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	node := make([]byte, 8)
	_, _ = rand.Read(node)
	limitLog := cfg.Log.With("component", "ratelimit")
	s := &Server{cfg: cfg, router: mux.NewRouter(),
		limiter:  ratelimit.NewShared(cfg.Limits.Ledger, "acct:", hex.EncodeToString(node), limitLog),
		failures: ratelimit.NewShared(cfg.Limits.Ledger, "addr:", hex.EncodeToString(node), limitLog),
		uploads: uploadSlots{global: cfg.Uploads.MaxInFlight, perAccount: make(map[string]int),
			ledger: cfg.Limits.Ledger, node: hex.EncodeToString(node), now: cfg.Now, log: limitLog},
		disk: diskspace.NewGuard(cfg.Uploads.DiskDirs, cfg.Uploads.DiskReserve, 8<<20),

		loginAddrs:    ratelimit.NewShared(cfg.Limits.Ledger, "login-addr:", hex.EncodeToString(node), limitLog),
		loginUsers:    ratelimit.NewShared(cfg.Limits.Ledger, "login-user:", hex.EncodeToString(node), limitLog),
		cop:           http.NewCrossOriginProtection(),
		tusRetryEvery: tus.RetryEvery,
		tokens:        playback.Tokens{Ring: cfg.Playback.Keys, Keys: cfg.DB, Now: cfg.Now}}
	s.router.Use(routeLabel)
	if cfg.Origin.PublicURL != "" {
		u, _ := url.Parse(cfg.Origin.PublicURL)
		if err := s.cop.AddTrustedOrigin(u.Scheme + "://" + u.Host); err != nil {
			return nil, fmt.Errorf("httpapi: public url: %w", err)
		}
	}
	mediaBase := cfg.Origin.CDNURL // what cdnURL names, when it is not the page's own origin
	if mediaBase == "" {
		mediaBase = cfg.Origin.PublicURL
	}
	var err error
	if s.pages, err = player.New(playHost{s}, mediaBase, cfg.Playback.FrameAncestors); err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	if cfg.Uploads.TusDir != "" {
		store, err := tus.OpenFileStore(cfg.Uploads.TusDir)
		if err != nil {
			return nil, err
		}
		s.tus = store
	}
	var largest int64
	for _, l := range cfg.Plans {
		largest = max(largest, l.MaxUploadBytes)
	}
	s.tusUploads = tus.NewHandler(tus.Config{Store: s.tus, Direct: cfg.Uploads.Direct, Media: cfg.Media,
		Host: uploadHost{s}, Log: cfg.Log, Now: cfg.Now, NewID: cfg.Store.NewID, Expiry: cfg.Uploads.TusExpiry,
		BaseURL: cfg.Origin.BaseURL, MaxSize: largest, Accepting: func(id string) {
			if s.tusAccepting != nil {
				s.tusAccepting(id)
			}
		}})
	var redirect cdn.Redirector
	if cfg.Origin.MediaRedirect {
		p, ok := cfg.Media.(presigner)
		if !ok || !p.CanPresign() {
			return nil, errors.New("httpapi: media redirects need a media store that presigns URLs (--media s3)")
		}
		redirect = p
	}
	s.cdn = cdn.New(cdn.Config{Videos: cfg.DB, Media: cfg.Media, Redirect: redirect, Tokens: s.tokens,
		Logger: func(r *http.Request) *slog.Logger { return logger(r, cfg.Log) }})
	s.webhooks = webhooks.New(webhooks.Config{Store: cfg.Store, DB: cfg.DB, Secrets: cfg.Secrets, Tester: cfg.Webhooks,
		Redeliver: cfg.Redeliver, Now: cfg.Now, Host: webhookHost{s}})
	s.keys = keys.New(keys.Config{Host: keyHost{s}, DB: cfg.DB})
	s.captions = captions.New(captions.Config{Host: captionHost{s}, DB: cfg.DB, Languages: cfg.Captions.Languages})
	s.admin = admin.New(admin.Config{Store: cfg.Store, Queues: cfg.Queues, DB: cfg.DB, Projector: cfg.Projector, Plans: cfg.Plans,
		Replayer: cfg.Admin.Replayer, Host: adminHost{s}, Now: cfg.Now})
	s.probes = probes.New(probes.Config{Checks: s.readyChecks(), Live: s.live, Log: cfg.Log})
	s.routes()
	return s, nil
}

// Handler is the API's http.Handler. requestLog wraps the whole router (not
// mux middleware, which skips unmatched routes), so 404s and 405s get a
// request id and a log line too.
func (s *Server) Handler() http.Handler {
	return s.requestLog(drain.Bodies(s.cfg.Uploads.IdleTimeout, s.tusMethodOverride(s.router)))
}

// Router lets other transports (media serving) add their routes.
func (s *Server) Router() *mux.Router { return s.router }

// handle adapts a handler that returns an error.
func (s *Server) handle(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			respond.Error(w, logger(r, s.cfg.Log), err)
		}
	})
}

type ctxKey int

const (
	ctxLog ctxKey = iota
	ctxAccount
	ctxStatus
)

func logger(r *http.Request, fallback *slog.Logger) *slog.Logger {
	return loggerFrom(r.Context(), fallback)
}

func loggerFrom(ctx context.Context, fallback *slog.Logger) *slog.Logger {
	if l, ok := ctx.Value(ctxLog).(*lazyLog); ok {
		return l.logger()
	}
	return fallback
}

// withLog is ctx whose logger adds args to ctx's (or to fallback).
func withLog(ctx context.Context, fallback *slog.Logger, args ...any) context.Context {
	l := &lazyLog{base: fallback, args: args}
	if parent, ok := ctx.Value(ctxLog).(*lazyLog); ok {
		l.parent = parent
	}
	return context.WithValue(ctx, ctxLog, l)
}

// lazyLog is a request's logger, made the first time something logs: most
// requests log nothing (the access line is at debug level), and each
// slog With copies and formats its handler's attributes.
type lazyLog struct {
	parent *lazyLog // nil: base
	base   *slog.Logger
	args   []any
	once   sync.Once
	l      *slog.Logger
}

func (z *lazyLog) logger() *slog.Logger {
	z.once.Do(func() {
		l := z.base
		if z.parent != nil {
			l = z.parent.logger()
		}
		z.l = l.With(z.args...)
	})
	return z.l
}

// writesTo reports whether w is sw or wraps it.
func writesTo(w http.ResponseWriter, sw *statusWriter) bool {
	for {
		if w == http.ResponseWriter(sw) {
			return true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return false
		}
		w = u.Unwrap()
	}
}

// statusWriter remembers the status for the access log, and the template
// of the route that answered for the metrics.
type statusWriter struct {
	http.ResponseWriter
	status   int
	bytes    int64
	answered time.Time // when the status went out
	route    string    // "": no route matched
}

// routeLabel is a mux middleware: it notes the template of the route
// that matched on the request's statusWriter, so the metrics name it
// without routing the request a second time. Only the request's own
// writer is labelled: a call the dashboard makes through the router
// inside a page's request (its own writer, the page's context) is not
// the page.
func routeLabel(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sw, ok := r.Context().Value(ctxStatus).(*statusWriter); ok && writesTo(w, sw) {
			if route := mux.CurrentRoute(r); route != nil {
				if t, err := route.GetPathTemplate(); err == nil {
					sw.route = t
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status, w.answered = code, time.Now()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status, w.answered = http.StatusOK, time.Now()
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// ReadFrom keeps the zero-copy path of the writer below (sendfile of a
// file served from /cdn) while counting the bytes.
func (w *statusWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.status == 0 {
		w.status, w.answered = http.StatusOK, time.Now()
	}
	n, err := respond.ReadFrom(w.ResponseWriter, r)
	w.bytes += n
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// requestLog gives each request an id (X-Request-Id) and a logger carrying
// it, recovers panics, and logs one line per request. It never logs
// headers, so keys stay out of logs.
func (s *Server) requestLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := newRequestID()
		w.Header().Set("X-Request-Id", id)
		sw := &statusWriter{ResponseWriter: w}
		// A client waits: the event store answers at once while NATS is
		// unreachable (503), rather than when it is back.
		ctx := eventstore.FailFast(context.WithValue(withLog(r.Context(), s.cfg.Log, "request_id", id), ctxStatus, sw))
		start := time.Now()
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log := loggerFrom(ctx, s.cfg.Log)
				log.Error("panic", "panic", fmt.Sprint(p))
				if sw.status == 0 {
					respond.Error(sw, log, domain.E("", domain.Internal, ""))
				}
			}
			if s.cfg.Log.Enabled(ctx, slog.LevelDebug) {
				loggerFrom(ctx, s.cfg.Log).Debug("request", "method", r.Method, "path", redactPath(r.URL.Path), "status", sw.status,
					"bytes", sw.bytes, "duration_ms", time.Since(start).Milliseconds())
			}
			if s.cfg.Metrics != nil {
				answered := sw.answered
				if answered.IsZero() {
					answered = time.Now()
				}
				route := sw.route
				if route == "" {
					route = "unmatched"
				}
				s.cfg.Metrics.Request(route, metricMethod(r.Method), sw.status, answered.Sub(start))
			}
		}()
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// metricMethod is r's method as a metric's label: one of HTTP's, else
// "other" (a client may send any token as a method).
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// writeTimeout bounds a command's load-decide-append.
const writeTimeout = 30 * time.Second

// execute runs a command for a request. It does not stop when the client
// goes away: an append that may already have landed must finish, or the
// handler could not tell whether to keep or undo what goes with it (the
// stored file of an upload, the files of a deletion).
func execute[S eventstore.Aggregate[S]](r *http.Request, s eventstore.Log, id domain.StreamID, cmd any) (eventstore.Result[S], error) {
	return executeIn[S](r.Context(), s, id, cmd)
}

// executeIn is execute under ctx, for work that is not a request's
// (kino accepting a complete tus upload by itself).
func executeIn[S eventstore.Aggregate[S]](ctx context.Context, s eventstore.Log, id domain.StreamID, cmd any) (eventstore.Result[S], error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	return eventstore.Execute[S](ctx, s, id, cmd)
}

// settle waits until the read models include seq: for a handler whose
// answer reads the read models back, and for writes that take access away
// (a revoked key, a stricter playback policy, a deleted video), which
// requests not made as the account (a playback token, a public URL) must
// see at once. Other writes end with wrote. The write is durable
// regardless; a slow projector only costs freshness, so a timeout is
// logged, not returned.
func (s *Server) settle(r *http.Request, seq uint64) { s.settleFor(r, callerOf(r).Account, seq) }

// settleFor is settle for a write to account, which need not be the
// caller's (an operator's change to an account, a password set from a
// link). Still behind after a timeout, the write is noted for account:
// its next requests wait for it and look at their key or session again
// (an operator's, anyAccount, wait for every account's).
func (s *Server) settleFor(r *http.Request, account string, seq uint64) {
	s.settleIn(r.Context(), seq)
	s.settledFor(account, seq)
}

// settleIn is settle under ctx, for work that is not a request's.
func (s *Server) settleIn(ctx context.Context, seq uint64) {
	if seq == 0 {
		return
	}
	log := loggerFrom(ctx, s.cfg.Log)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SettleTimeout)
	defer cancel()
	if err := s.cfg.Projector.WaitFor(ctx, seq); err != nil {
		log.Warn("read models behind a write", "seq", seq, "err", err)
	}
}

func atoiParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	raw, ok := r.URL.Query()[name]
	if !ok {
		return def, nil
	}
	if len(raw) != 1 {
		return 0, errBadRequest("%s must be given once", name)
	}
	n, err := strconv.Atoi(raw[0])
	if err != nil || n < lo || n > hi {
		if hi == int(^uint(0)>>1) {
			return 0, errBadRequest("%s must be an integer >= %d (got %q)", name, lo, raw[0])
		}
		return 0, errBadRequest("%s must be an integer from %d to %d (got %q)", name, lo, hi, raw[0])
	}
	return n, nil
}
