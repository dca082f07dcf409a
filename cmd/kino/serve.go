package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/adminrpc"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/eventstore/natsserver"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/accounts"
	"github.com/kino-video/kino/transport/dashboard"
	"github.com/kino-video/kino/transport/diskspace"
	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/httpapi"
	"github.com/kino-video/kino/transport/httpapi/admin"
	"github.com/kino-video/kino/transport/httpapi/player"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/metrics"
	"github.com/kino-video/kino/transport/playback"
	"github.com/kino-video/kino/transport/s3"
	"github.com/kino-video/kino/transport/seal"
	"github.com/kino-video/kino/transport/transcoder"
	"github.com/kino-video/kino/transport/webhook"
)

// Config is everything `kino serve` is configured with.
type Config struct {
	Addr       string    // HTTP listen address
	Data       string    // data directory
	BaseURL    string    // public base of the API, ending in /v1
	CDNURL     string    // public base of media
	NATSListen string    // embedded server's listen address
	NATSURL    string    // an existing NATS to use instead of embedding one
	Replicas   int       // stream replicas on a NATS cluster (0: see clusterReplicas)
	Media      string    // media backend: "dir" (default), "nats" or "s3"
	S3         s3.Config // with Media "s3": the bucket
	// MediaRedirect: /cdn redirects GETs of media bytes to presigned
	// URLs of the bucket (Media "s3").
	MediaRedirect bool
	MediaCache    int  // MiB of local copies of objects /cdn serves (nats)
	Dev           bool // bootstrap a dev account, collection and key on an empty store
	LogLevel      string
	Plans         domain.Plans
	Stdout        io.Writer // where --dev prints the key
	Log           *slog.Logger
	Now           func() time.Time // the API's clock (rate-limit windows); tests fix it
	Workers       WorkerConfig
	AdminToken    string // operator token for /v1/admin/*; empty: those routes answer 404

	// Upload and request limits of the HTTP API (zero: httpapi's defaults).
	MaxUploads            int            // uploads in flight on this node
	UploadIdleTimeout     time.Duration  // an upload body with no progress for this long ends (408)
	AuthFailuresPerMinute int            // requests without a valid key per client address and minute
	TrustedProxies        []netip.Prefix // peers whose X-Forwarded-For is believed
	FrameAncestors        []string       // origins that may frame /play, besides kino's own

	DiskReserve diskspace.Reserve // free space kept on the data directory's disk: uploads eating into it get 507
	MaxReadLag  uint64            // events the read models may trail the stream by before /readyz says not ready
	MetricsAddr string            // where /metrics is served; "": nowhere

	NATSAuth      eventstore.Auth // credentials for NATSURL (the embedded server's are generated)
	SecretKeyFile string          // key sealing webhook secrets; "" is <Data>/secret.key (or KINO_SECRET_KEY)

	// Sessions of the dashboard and the admin interface: idle lifetime
	// (--session-ttl) and absolute lifetime (--session-max-age).
	SessionTTL    time.Duration
	SessionMaxAge time.Duration

	// Cluster makes the embedded NATS a node of a cluster (nil: alone);
	// ReadyWait bounds the wait at start for its JetStream.
	Cluster   *natsserver.Cluster
	ReadyWait time.Duration

	TusExpiry time.Duration // an unfinished tus upload lives this long after its last bytes (at most 7× after creation)
}

// adminReplayer adapts the projector to the API's admin endpoint.
type adminReplayer struct{ p *projections.Projector }

func (a adminReplayer) Replay(ctx context.Context, verify bool, progress func(admin.ReplayProgress)) (any, error) {
	return replay(ctx, a.p, verify, func(v any) {
		if p, ok := v.(replayProgress); ok {
			progress(admin.ReplayProgress{Events: p.Applied, Total: p.Total, EventsPerSecond: p.EventsPerSecond})
		}
	})
}

// WorkerConfig is the configuration of the background workers shared by
// `kino serve` and `kino worker`.
type WorkerConfig struct {
	Senders        int             // webhook deliveries sent at once by this process (0: none)
	WebhookBackoff []time.Duration // waits before retries of a failed delivery
	WebhookTimeout time.Duration   // a receiver must answer within it
	WebhookAckWait time.Duration   // a silent sender loses its job after this (0: timeout + 30 s)
	AllowPrivate   bool            // deliver to loopback/private addresses
	Secrets        webhook.Opener  // opens sealed webhook secrets (needed when Senders > 0)
	Transcoders    int             // transcode jobs run at once by this process (0: none)
	Attempts       int             // transcode attempts before a video is FAILED
	Backoff        []time.Duration // waits between transcode attempts
	AckWait        time.Duration   // silence after which a job goes to another worker
	Stall          time.Duration   // kill ffmpeg after this long without progress
	Lanes          string          // how ladders split into two ffmpeg processes: auto, one, two
	FFmpeg         FFmpegConfig    // confinement of ffmpeg and the limits on its inputs
	// TranscodeConcurrency: videos of one account transcoding at once
	// across all workers, by plan.
	TranscodeConcurrency map[domain.Plan]int
	// CaptionsEngine is the speech recognition of generated captions
	// (auto, pocketsphinx, none); AutoCaptions the plans whose videos get
	// them when they complete (captions.go).
	CaptionsEngine string
	AutoCaptions   []domain.Plan
}

// workerFlags registers the worker flags on fs; parse fills cfg.
func workerFlags(fs *pflag.FlagSet, cfg *WorkerConfig) (parse func() error) {
	var backoff string
	fs.IntVar(&cfg.Transcoders, "workers", envInt("KINO_WORKERS", 1), "transcode jobs this process runs at once (env KINO_WORKERS)")
	fs.IntVar(&cfg.Attempts, "transcode-attempts", envInt("KINO_TRANSCODE_ATTEMPTS", 3), "failed transcode attempts before a video is FAILED; attempts cut off by a shutdown or crash do not count (env KINO_TRANSCODE_ATTEMPTS)")
	fs.StringVar(&backoff, "transcode-backoff", env("KINO_TRANSCODE_BACKOFF", "10s,1m,5m"), "waits before each retry of a failed transcode; the last repeats (env KINO_TRANSCODE_BACKOFF)")
	fs.DurationVar(&cfg.AckWait, "transcode-ack-wait", envDuration("KINO_TRANSCODE_ACK_WAIT", time.Minute), "a transcode whose process stops answering (killed, cut off) goes to another worker after this; running jobs say they are alive every third of it (env KINO_TRANSCODE_ACK_WAIT)")
	fs.DurationVar(&cfg.Stall, "ffmpeg-stall-timeout", envDuration("KINO_FFMPEG_STALL_TIMEOUT", 2*time.Minute), "kill ffmpeg when it reports no progress and writes no output for this long (env KINO_FFMPEG_STALL_TIMEOUT)")
	fs.StringVar(&cfg.Lanes, "ladder-lanes", env("KINO_LADDER_LANES", string(transcoder.LanesAuto)), "run heavy ladders (about 1080p25 and up) as two ffmpeg processes, the rungs of 360p and below first, so videos play within seconds while the rest encodes (auto); one: never (saves a second decode of the source on machines that encode faster than real time); two: every ladder (env KINO_LADDER_LANES)")
	parseFFmpeg := ffmpegFlags(fs, &cfg.FFmpeg)
	parseCaptions := captionFlags(fs, cfg)
	concurrency := map[domain.Plan]*int{}
	for _, plan := range []domain.Plan{domain.PlanFree, domain.PlanPro, domain.PlanBusiness} {
		n := new(int)
		name, envName := "transcode-concurrency-"+string(plan), "KINO_TRANSCODE_CONCURRENCY_"+strings.ToUpper(string(plan))
		fs.IntVar(n, name, envInt(envName, domain.DefaultPlans()[plan].TranscodeConcurrency),
			fmt.Sprintf("videos of one %s account transcoding at once across all workers; give every kino serve and kino worker the same value (env %s)", plan, envName))
		concurrency[plan] = n
	}
	var webhookBackoff string
	fs.IntVar(&cfg.Senders, "webhook-workers", envInt("KINO_WEBHOOK_WORKERS", 4), "webhook deliveries this process sends at once (env KINO_WEBHOOK_WORKERS)")
	fs.StringVar(&webhookBackoff, "webhook-backoff", env("KINO_WEBHOOK_BACKOFF", "10s,30s,2m,10m,30m,1h,3h,6h"), "waits before each retry of a failed webhook delivery; its length is the number of retries (env KINO_WEBHOOK_BACKOFF)")
	fs.DurationVar(&cfg.WebhookTimeout, "webhook-timeout", envDuration("KINO_WEBHOOK_TIMEOUT", 10*time.Second), "a webhook receiver must answer within this (env KINO_WEBHOOK_TIMEOUT)")
	fs.BoolVar(&cfg.AllowPrivate, "webhooks-allow-private", envBool("KINO_WEBHOOKS_ALLOW_PRIVATE"), "deliver webhooks to loopback, private and link-local addresses (env KINO_WEBHOOKS_ALLOW_PRIVATE)")
	return func() error {
		var err error
		if cfg.Backoff, err = parseDurations(backoff); err != nil {
			return fmt.Errorf("--transcode-backoff: %w", err)
		}
		if cfg.WebhookBackoff, err = parseDurations(webhookBackoff); err != nil {
			return fmt.Errorf("--webhook-backoff: %w", err)
		}
		if cfg.WebhookTimeout <= 0 || cfg.Senders < 0 {
			return errors.New("--webhook-timeout must be positive and --webhook-workers >= 0")
		}
		if cfg.Transcoders < 0 || cfg.Attempts < 1 {
			return errors.New("--workers must be >= 0 and --transcode-attempts >= 1")
		}
		switch transcoder.Lanes(cfg.Lanes) {
		case "", transcoder.LanesAuto, transcoder.LanesOne, transcoder.LanesTwo:
		default:
			return fmt.Errorf("--ladder-lanes %q: want %s, %s or %s", cfg.Lanes, transcoder.LanesAuto, transcoder.LanesOne, transcoder.LanesTwo)
		}
		cfg.TranscodeConcurrency = map[domain.Plan]int{}
		for plan, n := range concurrency {
			if *n < 1 {
				return fmt.Errorf("--transcode-concurrency-%s must be >= 1", plan)
			}
			cfg.TranscodeConcurrency[plan] = *n
		}
		if err := parseCaptions(); err != nil {
			return err
		}
		return parseFFmpeg()
	}
}

// parseDurations reads "10s,1m,5m".
func parseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, part := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("want a comma-separated list of durations like 10s,1m,5m (got %q)", s)
		}
		out = append(out, d)
	}
	return out, nil
}

func newServeCmd() *cobra.Command {
	var cfg Config
	var maxFree, maxPro, maxBusiness string
	var quotaFree, quotaPro, quotaBusiness string
	var uploadsFree, uploadsPro, uploadsBusiness int
	var adminTokenFile, trustedProxies, frameAncestors, diskReserve string
	var parseWorkers func() error
	var natsAuth natsAuthFlags
	var cluster clusterFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the whole service: embedded NATS, projector, HTTP API and media",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Stdout = cmd.OutOrStdout()
			if err := parseWorkers(); err != nil {
				return err
			}
			var err error
			if cfg.NATSAuth, err = natsAuth.auth(cfg.Data, eventstore.RoleServe, cfg.NATSURL, false); err != nil {
				return err
			}
			if cfg.Cluster, err = cluster.cluster(); err != nil {
				return err
			}
			if cfg.Cluster != nil && cfg.NATSURL != "" {
				return errors.New("--nats-cluster clusters the embedded NATS; with --nats, kino uses that server (or cluster) instead")
			}
			cfg.ReadyWait = cluster.readyWait
			cfg.Plans = domain.DefaultPlans()
			for plan, raw := range map[domain.Plan]string{domain.PlanFree: maxFree, domain.PlanPro: maxPro, domain.PlanBusiness: maxBusiness} {
				var n int64
				n, err = parseSize(raw)
				if err != nil {
					return fmt.Errorf("--max-upload-%s: %w", plan, err)
				}
				l := cfg.Plans[plan]
				l.MaxUploadBytes = n
				cfg.Plans[plan] = l
			}
			for plan, raw := range map[domain.Plan]string{domain.PlanFree: quotaFree, domain.PlanPro: quotaPro, domain.PlanBusiness: quotaBusiness} {
				var n int64
				if strings.TrimSpace(raw) != "0" {
					if n, err = parseSize(raw); err != nil {
						return fmt.Errorf("--storage-quota-%s: %w", plan, err)
					}
				}
				l := cfg.Plans[plan]
				l.StorageBytes = n
				cfg.Plans[plan] = l
			}
			for plan, n := range map[domain.Plan]int{domain.PlanFree: uploadsFree, domain.PlanPro: uploadsPro, domain.PlanBusiness: uploadsBusiness} {
				if n < 1 {
					return fmt.Errorf("--concurrent-uploads-%s must be at least 1 (got %d)", plan, n)
				}
				l := cfg.Plans[plan]
				l.ConcurrentUploads = n
				cfg.Plans[plan] = l
			}
			if cfg.MaxUploads < 1 || cfg.UploadIdleTimeout <= 0 || cfg.AuthFailuresPerMinute < 1 {
				return errors.New("--max-uploads and --auth-failures-per-minute must be at least 1, and --upload-idle-timeout positive")
			}
			if cfg.TrustedProxies, err = httpapi.ParseTrustedProxies(trustedProxies); err != nil {
				return fmt.Errorf("--trusted-proxies: %w", err)
			}
			if cfg.DiskReserve, err = diskspace.ParseReserve(diskReserve); err != nil {
				return fmt.Errorf("--disk-reserve: %w", err)
			}
			cfg.FrameAncestors = strings.FieldsFunc(frameAncestors, func(r rune) bool { return r == ',' || r == ' ' })
			fromFlag := cmd.Flags().Changed("admin-token")
			if cfg.AdminToken, err = adminToken(cfg.AdminToken, adminTokenFile); err != nil {
				return err
			}
			level, err := parseLevel(cfg.LogLevel)
			if err != nil {
				return err
			}
			cfg.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			if fromFlag {
				cfg.Log.Warn("--admin-token on the command line is visible to every local user (ps, /proc); use --admin-token-file or KINO_ADMIN_TOKEN_FILE")
			}
			m := &Main{Config: cfg}
			if err := m.Run(cmd.Context()); err != nil {
				m.Close()
				return err
			}
			<-cmd.Context().Done()
			cfg.Log.Info("shutting down")
			return m.Close()
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.Addr, "addr", env("KINO_ADDR", ":8080"), "HTTP listen address (env KINO_ADDR)")
	fs.StringVar(&cfg.Data, "data", env("KINO_DATA", "./data"), "data directory (env KINO_DATA)")
	fs.StringVar(&cfg.BaseURL, "base-url", env("KINO_BASE_URL", ""), "public API base ending in /v1, for tus upload Locations, direct upload URLs, set-password links and the start-up log; https makes session cookies Secure. Unset: tus Locations are paths, direct upload URLs and set-password links name the scheme and host the request reached, and the start-up log names the --addr address when it is not a wildcard, else http://localhost:<port>/v1 (env KINO_BASE_URL)")
	fs.StringVar(&cfg.CDNURL, "cdn-url", env("KINO_CDN_URL", ""), "public media base written into video records and webhook bodies (env KINO_CDN_URL). Unset: /cdn under --base-url's site when that is set; else API answers name this server's /cdn at the scheme and host the request reached (https over TLS, or from a --trusted-proxies peer sending X-Forwarded-Proto: https), so the LAN address works, and webhook bodies name the --addr address when it is not a wildcard, else http://localhost:<port>/cdn")
	fs.StringVar(&cfg.NATSListen, "nats-listen", env("KINO_NATS_LISTEN", "127.0.0.1:4222"), "listen address of the embedded NATS server (env KINO_NATS_LISTEN)")
	fs.StringVar(&cfg.NATSURL, "nats", env("KINO_NATS_URL", ""), "use this NATS server instead of embedding one, with the credentials of the --nats-* flags (env KINO_NATS_URL)")
	hideURLSecret(fs, "nats")
	natsAuth.register(fs)
	secretKeyFlag(fs, &cfg.SecretKeyFile)
	mediaFlag(fs, &cfg.Media, &cfg.S3)
	mediaCacheFlag(fs, &cfg.MediaCache)
	fs.BoolVar(&cfg.MediaRedirect, "media-redirect", envBool("KINO_MEDIA_REDIRECT"), "with --media s3: /cdn answers GETs of segments, stills, previews and downloads with a redirect to a presigned bucket URL (10 minutes long; the redirect is kept a minute by the browser) after its checks, so the bytes leave from the bucket; the bucket needs a CORS rule for players on other origins (env KINO_MEDIA_REDIRECT)")
	cluster.register(fs)
	fs.IntVar(&cfg.Replicas, "replicas", envInt("KINO_REPLICAS", envInt("KINO_NATS_REPLICAS", 0)), "replicas of kino's streams and buckets; 0: with --nats-cluster one per node in --nats-routes up to 3, else what an existing stream has (1 for a new one) (env KINO_REPLICAS)")
	fs.IntVar(&cfg.Replicas, "nats-replicas", cfg.Replicas, "old name of --replicas (env KINO_NATS_REPLICAS)")
	_ = fs.MarkDeprecated("nats-replicas", "use --replicas")
	fs.BoolVar(&cfg.Dev, "dev", envBool("KINO_DEV"), "on an empty store, create account dev (business), collection default and a key, and print the key (env KINO_DEV)")
	// The token's default is read from KINO_ADMIN_TOKEN in RunE, never
	// here, so --help cannot show it.
	fs.StringVar(&cfg.AdminToken, "admin-token", "", fmt.Sprintf("operator token for the /v1/admin routes (accounts, keys, health, replay), at least %d characters; unset disables it; prefer --admin-token-file, as ps shows flags (env KINO_ADMIN_TOKEN)", httpapi.MinAdminTokenLen))
	fs.StringVar(&adminTokenFile, "admin-token-file", env("KINO_ADMIN_TOKEN_FILE", ""), "file holding the operator token (surrounding whitespace ignored) (env KINO_ADMIN_TOKEN_FILE)")
	fs.IntVar(&cfg.MaxUploads, "max-uploads", envInt("KINO_MAX_UPLOADS", 64), "uploads in flight on this server, all accounts together; more get 503 (env KINO_MAX_UPLOADS)")
	fs.IntVar(&uploadsFree, "concurrent-uploads-free", envInt("KINO_CONCURRENT_UPLOADS_FREE", 2), "uploads one free-plan account may have in flight; more get 429 (env KINO_CONCURRENT_UPLOADS_FREE)")
	fs.IntVar(&uploadsPro, "concurrent-uploads-pro", envInt("KINO_CONCURRENT_UPLOADS_PRO", 8), "uploads one pro-plan account may have in flight (env KINO_CONCURRENT_UPLOADS_PRO)")
	fs.IntVar(&uploadsBusiness, "concurrent-uploads-business", envInt("KINO_CONCURRENT_UPLOADS_BUSINESS", 16), "uploads one business-plan account may have in flight (env KINO_CONCURRENT_UPLOADS_BUSINESS)")
	fs.DurationVar(&cfg.TusExpiry, "tus-expiry", envDuration("KINO_TUS_EXPIRY", 24*time.Hour), "an unfinished resumable (tus) upload is removed this long after its last bytes arrived, and at the latest 7 times this after its creation (env KINO_TUS_EXPIRY)")
	fs.DurationVar(&cfg.UploadIdleTimeout, "upload-idle-timeout", envDuration("KINO_UPLOAD_IDLE_TIMEOUT", 30*time.Second), "end an upload whose body makes no progress for this long (408; the partial file is removed) (env KINO_UPLOAD_IDLE_TIMEOUT)")
	fs.IntVar(&cfg.AuthFailuresPerMinute, "auth-failures-per-minute", envInt("KINO_AUTH_FAILURES_PER_MINUTE", 60), "requests without a valid API key one client address may send in any minute; more get 429 (env KINO_AUTH_FAILURES_PER_MINUTE)")
	fs.StringVar(&trustedProxies, "trusted-proxies", env("KINO_TRUSTED_PROXIES", ""), "comma-separated addresses or CIDR prefixes of reverse proxies whose X-Forwarded-For names the client; empty: X-Forwarded-For is ignored (env KINO_TRUSTED_PROXIES)")
	fs.StringVar(&frameAncestors, "play-frame-ancestors", env("KINO_PLAY_FRAME_ANCESTORS", ""), "origins (https://example.com, comma-separated) that may embed /play in a frame, besides kino itself (env KINO_PLAY_FRAME_ANCESTORS)")
	fs.DurationVar(&cfg.SessionTTL, "session-ttl", envDuration("KINO_SESSION_TTL", accounts.DefaultSessionTTL), "a dashboard or admin session unused for this long ends (env KINO_SESSION_TTL)")
	fs.DurationVar(&cfg.SessionMaxAge, "session-max-age", envDuration("KINO_SESSION_MAX_AGE", accounts.DefaultSessionMaxAge), "a session ends this long after its login, used or not (env KINO_SESSION_MAX_AGE)")
	fs.StringVar(&cfg.LogLevel, "log-level", env("KINO_LOG_LEVEL", "info"), "debug, info, warn or error (env KINO_LOG_LEVEL)")
	fs.StringVar(&maxFree, "max-upload-free", env("KINO_MAX_UPLOAD_FREE", "1GiB"), "largest upload on the free plan (env KINO_MAX_UPLOAD_FREE)")
	fs.StringVar(&maxPro, "max-upload-pro", env("KINO_MAX_UPLOAD_PRO", "10GiB"), "largest upload on the pro plan (env KINO_MAX_UPLOAD_PRO)")
	fs.StringVar(&maxBusiness, "max-upload-business", env("KINO_MAX_UPLOAD_BUSINESS", "50GiB"), "largest upload on the business plan (env KINO_MAX_UPLOAD_BUSINESS)")
	fs.StringVar(&quotaFree, "storage-quota-free", env("KINO_STORAGE_QUOTA_FREE", "10GiB"), "storage quota of a free-plan account: its videos' originals and outputs together; uploads that would pass it get 413; 0 for none (env KINO_STORAGE_QUOTA_FREE)")
	fs.StringVar(&quotaPro, "storage-quota-pro", env("KINO_STORAGE_QUOTA_PRO", "1TiB"), "storage quota of a pro-plan account; 0 for none (env KINO_STORAGE_QUOTA_PRO)")
	fs.StringVar(&quotaBusiness, "storage-quota-business", env("KINO_STORAGE_QUOTA_BUSINESS", "10TiB"), "storage quota of a business-plan account; 0 for none (env KINO_STORAGE_QUOTA_BUSINESS)")
	fs.StringVar(&diskReserve, "disk-reserve", env("KINO_DISK_RESERVE", "1GiB"), "free space kept on the data directory's disk (a size like 1GiB, or a percentage like 5%; 0 for none): uploads that would eat into it get 507, so the event store never runs dry; after a full disk, the embedded NATS server's restart waits for no more than this beyond what its store needs (env KINO_DISK_RESERVE)")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", env("KINO_METRICS_ADDR", ""), "serve Prometheus metrics on GET /metrics at this address (e.g. 127.0.0.1:9090), apart from the API: keep it private; unset: none (env KINO_METRICS_ADDR)")
	fs.Uint64Var(&cfg.MaxReadLag, "ready-max-lag", uint64(envInt("KINO_READY_MAX_LAG", 1000)), "events the read models may trail the stream by before GET /readyz answers 503 (env KINO_READY_MAX_LAG)")
	parseWorkers = workerFlags(fs, &cfg.Workers)
	return cmd
}

// adminToken is the operator token: --admin-token (or KINO_ADMIN_TOKEN),
// or the contents of --admin-token-file, not both; at least
// httpapi.MinAdminTokenLen characters.
func adminToken(flag, file string) (string, error) {
	token := flag
	if token == "" {
		token = os.Getenv("KINO_ADMIN_TOKEN")
	}
	if file != "" {
		if token != "" {
			return "", errors.New("give the admin token once: --admin-token/KINO_ADMIN_TOKEN or --admin-token-file/KINO_ADMIN_TOKEN_FILE")
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--admin-token-file: %w", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return "", fmt.Errorf("--admin-token-file: %s is empty", file)
		}
	}
	if n := utf8.RuneCountInString(token); token != "" && n < httpapi.MinAdminTokenLen {
		return "", fmt.Errorf("the admin token must be at least %d characters (it has %d); make one with: openssl rand -hex 32", httpapi.MinAdminTokenLen, n)
	}
	return token, nil
}

// parseSize reads "1GiB", "512MiB", "300KiB" or a byte count.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size must be a positive number of bytes, KiB, MiB, GiB or TiB (got %q)", s)
	}
	return n * mult, nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level: %w", err)
	}
	return l, nil
}

// Main is one running kino service. Run starts it; Close stops it in the
// order the package doc gives. End-to-end tests drive it on :0 and a temp dir.
type Main struct {
	Config

	nats      *natsserver.Embedded
	secrets   *seal.Key
	store     *eventstore.Store
	db        *projections.DB
	projector *projections.Projector
	progress  *kv.Progress
	media     mediaStore
	tasks     []*task // background loops, stopped in reverse order of start
	http      *http.Server
	httpDone  chan error

	metrics         *metrics.Metrics // nil without --metrics-addr
	metricsListener net.Listener
	metricsServer   *http.Server
	metricsDone     chan error
	listener        net.Listener
	natsURL         string          // the NATS in use: the embedded one, or --nats
	natsAuth        eventstore.Auth // kino serve's credentials on it
	limits          *kv.RateLimits
	transcoder      *transcoder.Transcoder // nil with --workers 0
	users           *accounts.Users
	DevKey          string // the key --dev created, if it created one
	devAccount      string // the account --dev created, if it created one
	// publicBase is --base-url as given ("" when it was not: tus Locations
	// are then paths, right behind any proxy).
	publicBase string
	// publicCDN is --cdn-url as given ("" when it was not: API answers then
	// name the request's own origin, origin.go).
	publicCDN string
}

// URL is the HTTP address the service listens on.
func (m *Main) URL() string { return "http://" + m.listener.Addr().String() }

// NATSURL is the NATS server in use.
func (m *Main) NATSClientURL() string {
	if m.nats != nil {
		return m.nats.URL()
	}
	return m.Config.NATSURL
}

// Run starts every part, in the order of its steps, and returns once the
// API is listening. A step that fails ends the start; Close stops what the
// earlier ones started.
func (m *Main) Run(ctx context.Context) error {
	m.defaults()
	for _, step := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"listen", m.listen},                // both ports first: a busy one fails at once, before --dev prints a key
		{"metrics listen", m.listenMetrics}, // --metrics-addr, when given
		{"data directory", m.openData},      // the directory and the key sealing webhook secrets
		{"nats", m.startNATS},               // the embedded server, unless --nats
		{"event store", m.openStore},        // streams and buckets created or updated
		{"read models", m.openReadModels},   // projections.db, the projector, caught up
		{"media", m.openMedia},              // --media dir|nats|s3, and its sweep
		{"progress", m.openProgress},        // KINO_PROGRESS and its watcher
		// Transcoders check ffmpeg and its user's access to the media
		// before --dev creates (and prints, once) its key and link.
		{"workers", m.startWorkers},   // webhook senders and transcoders
		{"dev", m.devBootstrap},       // --dev on an empty store
		{"urls", m.publicURLs},        // default --base-url and --cdn-url from the bound port
		{"dev user", m.devUser},       // --dev on an empty store: a dashboard user's one-time link
		{"fan-out", m.startFanout},    // webhook fan-out
		{"heartbeat", m.heartbeat},    // KINO_WORKERS: this process, for GET /v1/admin/health
		{"operator", m.serveOperator}, // kino.admin.> (kino replay --nats)
		{"metrics", m.serveMetrics},   // /metrics on --metrics-addr
		{"http", m.serveHTTP},         // the API, last
	} {
		if err := step.run(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (m *Main) defaults() {
	if m.Log == nil {
		m.Log = slog.Default()
	}
	if m.Plans == nil {
		m.Plans = domain.DefaultPlans()
	}
}

func (m *Main) listen(context.Context) error {
	var err error
	if m.listener, err = net.Listen("tcp", m.Addr); err != nil {
		return fmt.Errorf("listen %s: %w (choose another address with --addr or KINO_ADDR)", m.Addr, err)
	}
	return nil
}

func (m *Main) openData(context.Context) error {
	// Others may pass through (ffmpeg's user must reach media/.work) but
	// not list what is inside.
	if err := os.MkdirAll(m.Data, 0o711); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	var err error
	// A cluster node never makes its own key: webhook secrets sealed on one
	// node are opened on another, so every node has kino cluster init's.
	if m.secrets, err = secretKey(m.SecretKeyFile, m.Data, m.Cluster == nil); err != nil {
		return err
	}
	if m.Workers.Secrets == nil {
		m.Workers.Secrets = m.secrets
	}
	return nil
}

func (m *Main) startNATS(context.Context) error {
	m.natsURL, m.natsAuth = m.Config.NATSURL, m.NATSAuth
	if m.natsURL != "" {
		return nil
	}
	srv, err := startNATS(m.Data, m.NATSListen, m.Cluster, m.Log)
	if errors.Is(err, natsserver.ErrAddressInUse) {
		return fmt.Errorf("%w: choose another address with --nats-listen or KINO_NATS_LISTEN (or --nats-cluster for the cluster port)", err)
	} else if err != nil {
		return err
	}
	m.nats, m.natsURL, m.natsAuth = srv, srv.URL(), srv.Auth(eventstore.RoleServe)
	if err := writeNATSURL(m.Data, srv.URL()); err != nil {
		m.Log.Warn("record the NATS address for the operator commands", "file", filepath.Join(m.Data, natsURLFile), "err", err)
	}
	// The reserve the API keeps is free space kino counts as a healthy
	// disk: a restart after a full disk never waits for more than that
	// beyond what the store needs.
	m.start("nats-heal", func(ctx context.Context) error {
		return srv.Heal(ctx, natsserver.HealConfig{Reserve: m.DiskReserve.Bytes, ReservePercent: m.DiskReserve.Percent, Log: m.Log.With("component", "nats")})
	})
	return nil
}

func (m *Main) openStore(ctx context.Context) error {
	replicas, readyWait := m.Replicas, time.Duration(0)
	if m.nats != nil && m.Cluster != nil {
		readyWait = m.ReadyWait
		if replicas == 0 {
			replicas = clusterReplicas(m.Cluster)
		}
	}
	var err error
	m.store, err = eventstore.Open(ctx, eventstore.Config{URL: m.natsURL, Auth: m.natsAuth, Name: "kino serve", Manage: true, Replicas: replicas, ReadyWait: readyWait, Log: m.Log.With("component", "eventstore")})
	if err != nil {
		return err
	}
	if m.limits, err = kv.OpenRateLimits(ctx, m.store); err != nil {
		return err
	}
	m.users, err = openUsers(ctx, m.store, accounts.UsersConfig{SessionTTL: m.SessionTTL, SessionMaxAge: m.SessionMaxAge})
	return err
}

func (m *Main) openReadModels(ctx context.Context) error {
	var err error
	if m.db, err = projections.OpenDB(filepath.Join(m.Data, "projections.db")); err != nil {
		return err
	}
	if m.projector, err = projections.NewProjector(m.db, m.store, m.Log.With("component", "projector")); err != nil {
		return err
	}
	if m.metrics != nil {
		m.projector.Observe(m.metrics.Observe)
	}
	m.start("projector", m.projector.Run)
	return m.catchUp(ctx)
}

func (m *Main) openMedia(ctx context.Context) error {
	if m.MediaRedirect && m.Media != mediaS3 {
		return fmt.Errorf("--media-redirect needs --media s3 (got %q): only a bucket hands out presigned URLs", m.Media)
	}
	var err error
	if m.media, err = openMedia(ctx, m.Media, m.S3, m.store, m.Data, m.MediaCache); err != nil {
		return err
	}
	if objects, ok := m.media.(*media.Bucket); ok {
		// The local part now, before uploads; the bucket's reconcile pass
		// lists every object, so it runs beside serving, now and hourly.
		if _, err := objects.SweepLocal(); err != nil {
			return err
		}
		m.start("media-reconcile", func(ctx context.Context) error {
			return reconcileMedia(ctx, objects, m.db.HasVideo, m.Log.With("component", "media"))
		})
		return nil
	}
	if removed, err := m.media.Sweep(ctx, m.db.HasVideo); err != nil {
		return err
	} else if len(removed) > 0 {
		m.Log.Info("removed leftovers of interrupted uploads and deletions", "count", len(removed))
	}
	return nil
}

// reconcileEvery is how often kino serve removes objects of deleted or
// never-accepted videos from the media bucket; a pass that takes longer
// than reconcileTimeout (a cluster without quorum) is given up until the
// next.
const (
	reconcileEvery   = time.Hour
	reconcileTimeout = 2 * time.Minute
)

func reconcileMedia(ctx context.Context, objects *media.Bucket, live func(string) (bool, error), log *slog.Logger) error {
	for {
		pass, cancel := context.WithTimeout(ctx, reconcileTimeout)
		removed, err := objects.Reconcile(pass, live)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			log.Warn("media reconcile pass failed; next in an hour", "err", err, "removed", len(removed))
		case len(removed) > 0:
			log.Info("removed objects of deleted or never-accepted videos", "count", len(removed))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(reconcileEvery):
		}
	}
}

func (m *Main) openProgress(ctx context.Context) error {
	var err error
	if m.progress, err = kv.OpenProgress(ctx, m.store); err != nil {
		return err
	}
	m.start("progress", m.progress.Follow)
	return nil
}

func (m *Main) publicURLs(context.Context) error {
	local := localOrigin(m.listener.Addr())
	m.publicBase = m.BaseURL
	if m.BaseURL == "" {
		m.BaseURL = local + "/v1"
	}
	m.publicCDN = strings.TrimRight(m.CDNURL, "/")
	if m.CDNURL == "" {
		// The API then answers with /cdn under --base-url's site, or at
		// the request's origin; webhook bodies have no request.
		m.CDNURL = siteOf(m.BaseURL) + "/cdn"
	}
	m.CDNURL = strings.TrimRight(m.CDNURL, "/")
	return nil
}

func (m *Main) startWorkers(context.Context) error {
	return startWorkers(m, m.store, m.media, m.progress, m.Workers, m.Log)
}

func (m *Main) startFanout(context.Context) error {
	return startFanout(m, m.store, m.CDNURL, m.Log)
}

func (m *Main) heartbeat(context.Context) error {
	startHeartbeat(m, m.store, "serve")
	return nil
}

// startHeartbeat keeps this process's entry in KINO_WORKERS (role serve or
// worker) as a task of m, with the transcodes it runs.
func startHeartbeat(m *Main, store *eventstore.Store, role string) {
	m.start("heartbeat", func(ctx context.Context) error {
		return queue.New(store).Heartbeat(ctx, role, func() int {
			if m.transcoder == nil {
				return 0
			}
			return m.transcoder.Running()
		})
	})
}

// serveOperator answers operator requests over NATS (kino replay --nats).
func (m *Main) serveOperator(context.Context) error {
	log, projector := m.Log, m.projector
	m.start("admin", func(ctx context.Context) error {
		return adminrpc.Serve(ctx, m.store, func(ctx context.Context, op string, raw json.RawMessage, send func(any)) (any, error) {
			if op != "replay" {
				return nil, fmt.Errorf("unknown operation %q", op)
			}
			var req replayRequest
			if len(raw) > 0 {
				if err := json.Unmarshal(raw, &req); err != nil {
					return nil, err
				}
			}
			log.Info("replay requested over NATS", "verify", req.Verify)
			return replay(ctx, projector, req.Verify, send)
		})
	})
	return nil
}

func (m *Main) serveHTTP(ctx context.Context) error {
	log := m.Log
	direct, err := kv.OpenDirectUploads(ctx, m.store)
	if err != nil {
		return err
	}
	ringStore, err := kv.OpenPlaybackKeys(ctx, m.store)
	if err != nil {
		return err
	}
	// Made (or opened) now: a secret key that cannot open the ring stops
	// the start, rather than every signed request later. A ring that
	// cannot be read yet (a cluster's new bucket still electing its
	// leader) is read again at the first request that needs it.
	ring := playback.NewRing(ringStore, m.secrets, nil)
	if _, _, err := ring.Current(ctx); errors.Is(err, seal.ErrOpen) {
		return fmt.Errorf("playback keys: %w", err)
	} else if err != nil {
		m.Log.Warn("playback keys not readable yet; read again when a token is issued or checked", "err", err)
	}
	tus, err := tusDir(m.Data)
	if err != nil {
		return err
	}
	queues := queue.New(m.store)
	api, err := httpapi.New(httpapi.Config{
		Store: m.store, Queues: queues, DB: m.db, Projector: m.projector, Media: m.media, Progress: m.progress,
		Webhooks: webhook.Tester{Store: m.store, Queue: queues}, Redeliver: webhook.Redeliverer{Store: m.store, Queue: queues, CDNURL: m.CDNURL},
		Secrets: m.secrets, Users: m.users, EventServer: m.eventServer(),
		Plans: m.Plans, Log: log.With("component", "http"), Now: m.Now, MaxReadLag: m.MaxReadLag, Metrics: m.metrics,
		Origin: httpapi.Origin{CDNURL: m.publicCDN, Local: localOrigin(m.listener.Addr()),
			BaseURL: m.publicBase, PublicURL: siteOf(m.publicBase), MediaRedirect: m.MediaRedirect},
		Uploads: httpapi.Uploads{MaxInFlight: m.MaxUploads, IdleTimeout: m.UploadIdleTimeout,
			DiskDirs: []string{m.Data, filepath.Join(m.Data, "media")}, DiskReserve: m.DiskReserve,
			TusDir: tus, TusExpiry: m.TusExpiry, Direct: direct},
		Playback: httpapi.Playback{FrameAncestors: m.FrameAncestors, Keys: ring},
		Limits: httpapi.Limits{Ledger: m.limits, AuthFailuresPerMinute: m.AuthFailuresPerMinute,
			TrustedProxies: m.TrustedProxies},
		Admin:    httpapi.Admin{Token: m.AdminToken, Replayer: adminReplayer{m.projector}},
		Captions: httpapi.Captions{Languages: captionLanguages(m.Workers)},
	})
	if err != nil {
		return err
	}
	// The dashboard's pages, after the API's routes (exact paths: /v1, /cdn,
	// /play, /assets, /auth stay the API's).
	pages, err := dashboard.New(dashboard.Config{API: api.Router(), CDNURL: pageCDN(m.publicCDN, m.publicBase), HLSJS: player.AssetsBuilt(),
		CaptionLanguages: captionLanguages(m.Workers), Log: log.With("component", "dashboard")})
	if err != nil {
		return err
	}
	pages.Register(api.Router())
	m.start("tus-sweep", func(ctx context.Context) error { api.SweepUploads(ctx); return nil })
	m.http = &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ConnContext:       respond.WithConn,
	}
	m.httpDone = make(chan error, 1)
	go func() { m.httpDone <- m.http.Serve(m.listener) }()
	log.Info("kino serving", "api", m.BaseURL, "cdn", m.CDNURL, "listen", m.listener.Addr().String(), "nats", eventstore.RedactURL(m.natsURL))
	return nil
}

// tusDir is this node's directory of unfinished tus uploads: under the
// media directory, so the last byte commits with a rename, in a
// subdirectory named by this node's id (<data>/node-id, made on the first
// start), so nodes that share a media directory never touch each other's
// partial uploads, nor sweep them at start.
func tusDir(data string) (string, error) {
	path := filepath.Join(data, "node-id")
	b, err := os.ReadFile(path)
	id := strings.TrimSpace(string(b))
	if errors.Is(err, fs.ErrNotExist) {
		raw := make([]byte, 8)
		_, _ = rand.Read(raw)
		id = hex.EncodeToString(raw)
		err = os.WriteFile(path, []byte(id+"\n"), 0o600)
	}
	if err != nil {
		return "", fmt.Errorf("node id: %w", err)
	}
	if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
		return "", fmt.Errorf("node id: %s holds %q, not 16 hex digits (remove it to make a new one; unfinished tus uploads of the old id are then lost)", path, id)
	}
	return filepath.Join(data, "media", ".tus", id), nil
}

// eventServer is the embedded server's health for the API, nil (not a
// typed nil) with an external NATS.
func (m *Main) eventServer() httpapi.ServerHealth {
	if m.nats == nil {
		return nil
	}
	return m.nats
}

// startNATS starts the embedded NATS server, as a node of cluster when it
// is not nil (kino serve and kino worker alike).
func startNATS(data, listen string, cluster *natsserver.Cluster, log *slog.Logger) (*natsserver.Embedded, error) {
	srv, err := natsserver.StartNode(data, listen, cluster)
	if err != nil {
		return nil, err
	}
	if host, _, _ := net.SplitHostPort(listen); host != "127.0.0.1" && host != "localhost" && host != "::1" {
		log.Warn("the embedded NATS server listens beyond loopback without TLS: it takes only kino's nkeys, but events (and the API's traffic with it) cross the network in clear", "listen", listen)
	}
	attrs := []any{"url", srv.URL(), "store", filepath.Join(data, "nats"), "credentials", filepath.Join(data, natsserver.CredsDir)}
	if cluster != nil {
		attrs = append(attrs, "name", srv.Name(), "cluster", srv.ClusterAddr(), "routes", len(cluster.Routes), "route_tls", cluster.CertFile != "")
	}
	log.Info("embedded NATS started", attrs...)
	return srv, nil
}

// task is a background loop of the service.
type task struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
}

func (t *task) stop() {
	t.cancel()
	<-t.done
}

// start runs fn until Close. An error that ends it early is logged: the
// service keeps answering, and /healthz reports a stopped projector.
func (m *Main) start(name string, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	t := &task{name: name, cancel: cancel, done: make(chan struct{})}
	m.tasks = append(m.tasks, t)
	go func() {
		defer close(t.done)
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			m.Log.Error("background task stopped", "task", name, "err", err)
		}
	}()
}

// catchUp waits until the read models include every event stored before
// start, so the first requests (and the media sweep) see all of them.
func (m *Main) catchUp(ctx context.Context) error {
	last, err := m.store.LastSeq(ctx)
	if err != nil {
		return err
	}
	if applied := m.projector.Applied(); applied < last {
		m.Log.Info("catching up read models", "applied", applied, "stream_last", last)
	}
	return m.projector.WaitFor(ctx, last)
}

// devBootstrap runs accounts.DevBootstrap on an empty store, waits for
// the read models to include it and prints the key.
func (m *Main) devBootstrap(ctx context.Context) error {
	if !m.Dev {
		return nil
	}
	dev, created, err := accounts.DevBootstrap(ctx, m.store)
	if err != nil || !created {
		return err
	}
	if err := m.catchUp(ctx); err != nil {
		return err
	}
	m.DevKey = dev.Key
	m.devAccount = dev.Account
	m.Log.Info("dev bootstrap: account dev (business), collection default, one key", "key_id", dev.KeyID)
	if m.Stdout != nil {
		fmt.Fprintf(m.Stdout, "kino --dev: created account %q (plan business), collection %q and this API key (shown once):\n%s\n", dev.Account, dev.Collection, dev.Key)
	}
	return nil
}

// DevUserEmail is the dashboard user kino serve --dev creates in its
// account on an empty store.
const DevUserEmail = "dev@kino.localhost"

// devUser gives --dev's account a dashboard user and prints the one-time
// link that sets its password, so a first run reaches the dashboard
// without the CLI. It runs once the public URL is known.
func (m *Main) devUser(ctx context.Context) error {
	if m.devAccount == "" || m.users == nil {
		return nil
	}
	res, token, err := m.users.CreateUser(ctx, accounts.NewUser{Email: DevUserEmail, Account: m.devAccount})
	if err != nil {
		return err
	}
	if err := m.projector.WaitFor(ctx, res.LastSeq()); err != nil {
		return err
	}
	if m.Stdout != nil {
		fmt.Fprintf(m.Stdout, "dashboard: open this one-time link (24 h) to set the password of %s, a user of account %q:\n%s\n",
			DevUserEmail, m.devAccount, passwordLink(siteOf(m.BaseURL), token))
	}
	return nil
}

// The workers, the API and the user service declare what they use of the
// event store, the work queues and the buckets; these are the types wired
// into them here.
var (
	_ transcoder.Store      = (*eventstore.Store)(nil)
	_ transcoder.Jobs       = (*queue.Queues)(nil)
	_ transcoder.Progress   = (*kv.Progress)(nil)
	_ webhook.Store         = (*eventstore.Store)(nil)
	_ webhook.Queue         = (*queue.Queues)(nil)
	_ webhook.IDClock       = (*eventstore.Store)(nil)
	_ httpapi.Store         = (*eventstore.Store)(nil)
	_ admin.Queues          = (*queue.Queues)(nil)
	_ accounts.Events       = (*eventstore.Store)(nil)
	_ accounts.SessionStore = (*kv.Sessions)(nil)
)

// startWorkers runs the webhook senders and the transcoders of this
// process (none when their count is 0) as tasks of m.
func startWorkers(m *Main, store *eventstore.Store, mediaStore mediaStore, progress *kv.Progress, cfg WorkerConfig, log *slog.Logger) error {
	queues := queue.New(store)
	if cfg.Senders > 0 {
		d, err := webhook.NewDeliverer(webhook.Config{
			Store: store, Queue: queues, Log: log.With("component", "webhook"), Backoff: cfg.WebhookBackoff,
			Timeout: cfg.WebhookTimeout, AllowPrivate: cfg.AllowPrivate, Workers: cfg.Senders, AckWait: cfg.WebhookAckWait,
			Secrets: cfg.Secrets,
		})
		if err != nil {
			return err
		}
		m.start("webhook-delivery", d.Run)
	}
	if cfg.Transcoders == 0 {
		return nil
	}
	if err := findFFmpeg(cfg.FFmpeg.Dir); err != nil {
		return err
	}
	ffmpegUser, err := cfg.FFmpeg.user()
	if err != nil {
		return err
	}
	cfg.FFmpeg.logConfinement(log, ffmpegUser)
	plans := cfg.FFmpeg.plans()
	for plan, n := range cfg.TranscodeConcurrency {
		l := plans[plan]
		l.TranscodeConcurrency = n
		plans[plan] = l
	}
	speech, err := speechEngine(cfg, ffmpeg.Jail{User: ffmpegUser, Limits: cfg.FFmpeg.Limits, Tools: cfg.FFmpeg.Dir}, mediaStore.WorkRoot(), log)
	if err != nil {
		return err
	}
	tc, err := transcoder.New(transcoder.Config{
		Speech: speech, AutoCaptions: cfg.AutoCaptions,
		Store: store, Jobs: queues, Media: mediaStore, Progress: progress, Log: log.With("component", "transcoder"),
		Workers: cfg.Transcoders, MaxAttempts: cfg.Attempts, Backoff: cfg.Backoff, AckWait: cfg.AckWait, Stall: cfg.Stall,
		Lanes: transcoder.Lanes(cfg.Lanes), Plans: plans, Bounds: cfg.FFmpeg.Bounds, User: ffmpegUser, Limits: cfg.FFmpeg.Limits, Tools: cfg.FFmpeg.Dir,
	})
	if err != nil {
		return err
	}
	m.transcoder = tc
	m.start("transcoder", tc.Run)
	return nil
}

// startFanout runs the webhook fan-out (webhook-fanout) as a task of m.
// It reads only the event stream, so kino serve and kino worker both run
// it; cdnURL must be the API's --cdn-url.
func startFanout(m *Main, store *eventstore.Store, cdnURL string, log *slog.Logger) error {
	fanout, err := webhook.NewFanout(webhook.Config{Store: store, Queue: queue.New(store), Log: log.With("component", "webhook-fanout"), CDNURL: cdnURL})
	if err != nil {
		return err
	}
	m.start("webhook-fanout", fanout.Run)
	return nil
}

// Close stops the service: HTTP first (in-flight requests get 10 s), then
// the projector, the read models, the NATS connection and the embedded
// server. It is safe to call on a partly started Main.
func (m *Main) Close() error {
	var errs []error
	errs = append(errs, m.closeMetrics())
	if m.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := m.http.Shutdown(ctx); err != nil {
			// Requests still running after the grace period (a slow upload)
			// are cut off; their handlers clean up what they started.
			m.Log.Warn("requests still running after 10 s; closing their connections", "err", err)
			_ = m.http.Close()
		}
		cancel()
		if err := <-m.httpDone; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
		m.http = nil
	} else if m.listener != nil {
		_ = m.listener.Close() // a start that failed before serving
	}
	// Workers first (ffmpeg is killed, jobs handed back), the projector last.
	for i := len(m.tasks) - 1; i >= 0; i-- {
		m.tasks[i].stop()
	}
	m.tasks = nil
	if m.db != nil {
		errs = append(errs, m.db.Close())
		m.db = nil
	}
	if m.store != nil {
		errs = append(errs, m.store.Close())
		m.store = nil
	}
	if m.nats != nil {
		m.nats.Shutdown()
		m.nats = nil
	}
	return errors.Join(errs...)
}
