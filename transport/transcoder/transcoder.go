package transcoder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/media"
)

// outage is an attempt cut off because NATS (the event store, or the media
// bucket) was out of reach: an interruption, not a failure of the video.
type outage struct{ err error }

func (o outage) Error() string { return "NATS out of reach: " + o.err.Error() }
func (o outage) Unwrap() error { return o.err }

// Durable is the name of the transcoder's intake consumer on the event
// stream (the single work queue of earlier versions, which it replaces in
// place); the jobs themselves wait in queue.JobsStream.
const Durable = queue.TranscodeIntake

// Media is what the transcoder needs of the media store (media.Dir, a
// directory, or media.Bucket, an object store such as JetStream's): the
// local directory for the attempts' work directories, the original put
// into a local file (a link or a copy), publishing the outputs made in a
// work directory (checked first: no links, no special files; it fails if
// the video was deleted), and removing a video's outputs or files.
type Media interface {
	WorkRoot() string
	Fetch(ctx context.Context, id, ext, dst string) error
	Publish(ctx context.Context, id, workDir string) error
	PublishFiles(ctx context.Context, id, dir string, rels []string) error // progressive.go
	RemoveOutputs(ctx context.Context, id string) error
	Remove(ctx context.Context, id string) error
}

// Store is what the transcoder needs of the event log (eventstore.Store):
// the video's and account's events read and commands executed on them
// (eventstore.Execute, Current), and a watch for a video's Deleted event
// that fires as soon as it is appended (cancelling that video's ffmpeg).
type Store interface {
	eventstore.Log
	Watch(id domain.StreamID, eventType string) (fired <-chan struct{}, stop func(), err error)
	NewID() string // an event or track id (a ULID)
}

// Jobs is the transcode work queue (queue.Queues): fair across accounts,
// each job handed to handle until it is acked, retried or released.
type Jobs interface {
	FairWork(ctx context.Context, cfg queue.FairConfig, handle func(ctx context.Context, job *queue.Job)) error
}

// Progress is where a running job's progress goes (kv.Progress), read by
// the API while the video transcodes.
type Progress interface {
	Report(ctx context.Context, videoID string, r kv.ProgressReport) error
	Clear(ctx context.Context, videoID string) error
}

// Config configures a Transcoder; validate fills the defaults.
type Config struct {
	Store    Store
	Jobs     Jobs
	Media    Media
	Progress Progress
	Log      *slog.Logger

	Workers     int // jobs this process runs at once (default 1)
	MaxAttempts int // failed attempts before a video is FAILED (default 3)
	// MaxCrashes is how many attempts may die with their worker before a
	// video is FAILED (default 5): interruptions do not use up attempts,
	// but a file that kills kino every time must end somewhere.
	MaxCrashes int
	Backoff    []time.Duration // wait before attempt n+1 after a transient failure; the last repeats (default 10s, 1m, 5m)
	AckWait    time.Duration   // silence after which a job goes to another worker (default 60s; heartbeats every third of it)
	Stall      time.Duration   // kill ffmpeg after this long without progress (default 2m)
	Name       string          // worker name recorded in TranscodeStarted (default host:pid)
	Plans      domain.Plans    // per-plan TranscodeConcurrency and MaxDuration (default domain.DefaultPlans)

	// Bounds are the picture, frame-rate and gap limits checked at probe
	// time (default ffmpeg.DefaultBounds()); the duration limit is the
	// account's plan's, from Plans.
	Bounds *ffmpeg.Bounds
	// User runs ffmpeg and ffprobe as this unprivileged user (kino must be
	// root); nil runs them as kino's user.
	User *ffmpeg.User
	// Tools is the directory of the ffmpeg and ffprobe it runs ("": found
	// on PATH).
	Tools string
	// Limits are the resource limits of every ffmpeg and ffprobe process
	// (util-linux prlimit on Linux); CPU 0 is derived from each run's
	// wall-clock cap.
	Limits ffmpeg.RLimits

	// Lanes is how ladders split into two ffmpeg processes (ffmpeg/lanes.go):
	// LanesAuto (the default) splits the heavy ones, LanesOne none,
	// LanesTwo every ladder of two rungs or more.
	Lanes Lanes

	// Scratch is the directory of the attempts' work directories (default
	// Media.WorkRoot()); see scratch.go.
	Scratch string
	// Fetch puts a video's original into a work directory (default
	// Media.Fetch).
	Fetch FetchFunc

	// Speech makes generated captions (captions.go); nil: requests for
	// them fail ("no speech recognition engine").
	Speech Speech
	// AutoCaptions are the plans whose videos get captions generated
	// when they complete with audio, in Speech's first language.
	AutoCaptions []domain.Plan

	// hooks are set by tests only (export_test.go).
	hooks hooks
}

// hooks let a test act at points of its own transcoder's attempts; each
// one unset is skipped. Being the transcoder's, not the package's, they
// leave the transcoders of tests running beside it alone.
type hooks struct {
	// beforeEncode and afterEncode run on the work directory before
	// ffmpeg starts, and between the encode and the check of its outputs.
	beforeEncode, afterEncode func(work string)
	// beforeMerge runs when the lanes are done, before their masters are
	// merged.
	beforeMerge func(work string)
	// earlyTick replaces the early publisher's ticker: every receive is
	// one pass; earlyPass runs at the start of every pass.
	earlyTick <-chan time.Time
	earlyPass func(work string)
}

func (c *Config) validate() error {
	if c.Store == nil || c.Jobs == nil || c.Media == nil || c.Progress == nil {
		return errors.New("transcoder: store, jobs, media and progress are required")
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	switch c.Lanes {
	case "":
		c.Lanes = LanesAuto
	case LanesAuto, LanesOne, LanesTwo:
	default:
		return fmt.Errorf("transcoder: lanes %q: want %s, %s or %s", c.Lanes, LanesAuto, LanesOne, LanesTwo)
	}
	if c.Workers <= 0 {
		c.Workers = 1
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 3
	}
	if c.MaxCrashes <= 0 {
		c.MaxCrashes = 5
	}
	if c.Scratch == "" {
		c.Scratch = c.Media.WorkRoot()
	}
	if c.Fetch == nil {
		c.Fetch = fetchFrom(c.Media)
	}
	if len(c.Backoff) == 0 {
		c.Backoff = []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute}
	}
	if c.AckWait <= 0 {
		c.AckWait = time.Minute
	}
	if c.Stall <= 0 {
		c.Stall = 2 * time.Minute
	}
	if c.Plans == nil {
		c.Plans = domain.DefaultPlans()
	}
	if c.Name == "" {
		host, _ := os.Hostname()
		c.Name = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if c.Bounds == nil {
		b := ffmpeg.DefaultBounds()
		c.Bounds = &b
	}
	if c.User != nil {
		if err := reachable(c.Scratch, c.User); err != nil {
			return fmt.Errorf("transcoder: ffmpeg runs as %s: %w", c.User.Name, err)
		}
	}
	if c.Limits != (ffmpeg.RLimits{}) && runtime.GOOS == "linux" {
		if _, err := exec.LookPath("prlimit"); err != nil {
			return fmt.Errorf("transcoder: ffmpeg's resource limits need prlimit (util-linux) on PATH: %w", err)
		}
	}
	return nil
}

// Transcoder runs transcode jobs.
type Transcoder struct {
	cfg     Config
	plans   planCache
	scratch *scratch
	running atomic.Int64 // jobs in handle now
}

// Running is the number of jobs this transcoder is working on now (its
// heartbeat reports it: queue.Heartbeat).
func (t *Transcoder) Running() int { return int(t.running.Load()) }

// New checks cfg, makes the scratch directory and builds a Transcoder.
// It also checks that an ffmpeg started as every run starts it dies with
// the thread that started it, so with kino, and refuses otherwise
// (ffmpeg.CheckDiesWithParent).
func New(cfg Config) (*Transcoder, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	sc, err := openScratch(cfg.Scratch, cfg.User, cfg.Fetch)
	if err != nil {
		return nil, err
	}
	if err := ffmpeg.CheckDiesWithParent(context.Background(), ffmpeg.Jail{Dir: sc.root, User: cfg.User, Limits: cfg.Limits, Tools: cfg.Tools}); err != nil {
		return nil, fmt.Errorf("transcoder: %w", err)
	}
	return &Transcoder{cfg: cfg, scratch: sc}, nil
}

// Run works on jobs until ctx ends; running ffmpeg processes are killed
// and their jobs handed back for another worker. Jobs wait in one queue
// per account, and a free slot serves the account with the fewest videos
// transcoding, within its plan's TranscodeConcurrency (see fair.go).
//
// Meanwhile it removes the work directories of attempts no process runs
// any more, at once and every minute (scratch.go).
func (t *Transcoder) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); t.scratch.sweepLoop(ctx, t.cfg.Log) }()
	return t.cfg.Jobs.FairWork(ctx, queue.FairConfig{
		Intake:         Durable,
		FilterSubjects: intakeFilters,
		Account:        jobAccount,
		Limit:          t.limit,
		Concurrency:    t.cfg.Workers,
		AckWait:        t.cfg.AckWait,
		Log:            t.cfg.Log,
	}, t.handle)
}

func videoStream(id string) domain.StreamID {
	return domain.VideoStream(id)
}

// handle runs one job to its end: Ack when the video reached a final state
// (or no longer exists), Retry after a transient failure, Release on
// shutdown.
func (t *Transcoder) handle(ctx context.Context, job *queue.Job) {
	t.running.Add(1)
	defer t.running.Add(-1)
	switch req := job.Event.Data.(type) {
	case domain.CaptionTrackRequested:
		t.generateCaptions(ctx, job, req)
		return
	case domain.ThumbnailRequested:
		t.remakeThumbnail(ctx, job, req)
		return
	}
	id := job.Event.AggregateID
	log := t.cfg.Log.With("video_id", id, "delivery", job.Delivered)
	ack := func() {
		if err := job.Ack(context.WithoutCancel(ctx)); err != nil {
			log.Warn("ack transcode job", "err", err)
		}
	}

	// Watch for a delete before starting, so none is missed: one that
	// lands after this kills ffmpeg at once.
	deleted, stopWatch, err := t.cfg.Store.Watch(videoStream(id), domain.TypeVideoDeleted)
	if err != nil {
		t.handBack(ctx, log, job, 1, err)
		return
	}
	defer stopWatch()

	start, err := eventstore.Execute[domain.Video](ctx, t.cfg.Store, videoStream(id),
		domain.StartTranscode{Worker: t.cfg.Name, MaxAttempts: t.cfg.MaxAttempts, MaxCrashes: t.cfg.MaxCrashes})
	switch {
	case domain.IsKind(err, domain.NotFound): // deleted before we got to it
		t.removeFiles(log, id)
		ack()
		return
	case domain.IsKind(err, domain.Conflict) && !errors.Is(err, eventstore.ErrConcurrency): // already COMPLETED or FAILED
		ack()
		return
	case err != nil:
		t.handBack(ctx, log, job, 1, err)
		return
	}
	if start.State.Status == domain.StatusFailed { // failures or crashes exhausted
		log.Warn("transcode given up", "attempts", start.State.Attempts, "failed", start.State.Failures, "crashed", start.State.Crashes)
		t.removeOutputs(ctx, log, id) // a FAILED video serves none, and a retry starts clean
		ack()
		return
	}
	attempt := start.State.Attempts
	failures := start.State.Failures // failed attempts before this one
	log = log.With("attempt", attempt)
	log.Info("transcode started")
	began := time.Now()

	// The job's own context ends when the video is deleted: ffmpeg's
	// process group is killed and the work directory removed.
	jobCtx, cancelJob := context.WithCancelCause(ctx)
	defer cancelJob(nil)
	go func() {
		select {
		case <-deleted:
			cancelJob(errDeleted)
		case <-jobCtx.Done():
		}
	}()
	stopBeat := t.heartbeat(jobCtx, job, id, cancelJob)
	if attempt > 1 {
		// An earlier attempt may have published a growing playlist that
		// a player still follows: removed, not shrunk under it (an EVENT
		// playlist only ever grows; hls.js would start the viewer again
		// from 0:00). The video has no playlistUrl until this attempt is
		// playable.
		if err := t.cfg.Media.RemoveOutputs(jobCtx, id); err != nil && !domain.IsKind(err, domain.NotFound) {
			log.Warn("remove an earlier attempt's outputs", "err", err)
		}
	}
	done, err := t.transcode(jobCtx, log, id, start.State)
	stopBeat()
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(jobCtx), errDeleted) {
		err = domain.E("transcode", domain.NotFound, "video deleted")
	}
	if err == nil {
		_, err = eventstore.Execute[domain.Video](ctx, t.cfg.Store, videoStream(id), done)
	}
	if err != nil {
		// Whatever comes next (another attempt after a backoff, FAILED, a
		// deletion), this attempt's progress means nothing any more.
		t.clearProgress(id)
	}
	switch {
	case err == nil:
		log.Info("transcode succeeded", "duration_s", done.Duration, "resolutions", done.Resolutions,
			"bytes", done.ProcessedSize, "took_ms", time.Since(began).Milliseconds())
		t.clearProgress(id)
		if done.HasAudio {
			t.autoCaptions(ctx, log, id, start.State.Account)
		}
		ack()
	case ctx.Err() != nil:
		log.Info("transcode interrupted by shutdown; handing the job back")
		// Recorded, so that the next attempt knows this one did not fail
		// (and not crash). Should it not land, the next delivery records a
		// crash instead.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_, ierr := eventstore.Execute[domain.Video](rctx, t.cfg.Store, videoStream(id), domain.InterruptTranscode{Reason: domain.InterruptShutdown})
		cancel()
		if ierr != nil && !domain.IsKind(ierr, domain.NotFound) {
			log.Warn("record interrupted transcode", "err", ierr)
		}
		if rerr := job.Release(); rerr != nil {
			log.Warn("release transcode job", "err", rerr)
		}
	case domain.IsKind(err, domain.NotFound): // deleted while we worked
		log.Info("video deleted during transcode; outputs removed")
		t.removeFiles(log, id)
		ack()
	case errors.As(err, new(outage)):
		// Not the video's failure: NATS was out of reach. Recorded as an
		// interruption, retried after the backoff.
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, ierr := eventstore.Execute[domain.Video](rctx, t.cfg.Store, videoStream(id), domain.InterruptTranscode{Reason: domain.InterruptOutage})
		cancel()
		if ierr != nil && !domain.IsKind(ierr, domain.NotFound) {
			log.Warn("record interrupted transcode", "err", ierr)
		}
		t.handBack(ctx, log, job, 1, err)
	case domain.IsKind(err, domain.Unsupported):
		t.fail(ctx, log, job, id, userMessage(err), true)
	default:
		final := failures+1 >= t.cfg.MaxAttempts
		reason := fmt.Sprintf("Processing failed: %s.", transientReason(err))
		if final {
			reason = fmt.Sprintf("Processing failed after %s: %s.", attempts(failures+1), transientReason(err))
		}
		log.Warn("transcode attempt failed", "err", err, "final", final)
		t.fail(ctx, log, job, id, reason, final)
	}
}

// fail records a failed attempt; a final one ends the job, others come
// back after the backoff for that attempt.
func (t *Transcoder) fail(ctx context.Context, log *slog.Logger, job *queue.Job, id, reason string, final bool) {
	res, err := eventstore.Execute[domain.Video](ctx, t.cfg.Store, videoStream(id), domain.FailTranscode{Reason: reason, Final: final})
	switch {
	case domain.IsKind(err, domain.NotFound):
		t.removeFiles(log, id)
		final = true
	case domain.IsKind(err, domain.Conflict) && !errors.Is(err, eventstore.ErrConcurrency):
		final = true
	case err != nil:
		t.handBack(ctx, log, job, res.State.Failures+1, err)
		return
	}
	if final {
		log.Info("transcode failed", "reason", reason)
		// An earlier attempt may have published outputs before it died: a
		// FAILED video serves none.
		if err := t.cfg.Media.RemoveOutputs(context.WithoutCancel(ctx), id); err != nil {
			log.Warn("remove outputs of a failed video", "err", err)
		}
		if err := job.Ack(context.WithoutCancel(ctx)); err != nil {
			log.Warn("ack transcode job", "err", err)
		}
		return
	}
	t.handBack(ctx, log, job, res.State.Failures, nil)
}

// handBack returns the job for a later attempt after the backoff for
// failed attempt number attempt (1-based); the last backoff repeats.
func (t *Transcoder) handBack(ctx context.Context, log *slog.Logger, job *queue.Job, attempt int, cause error) {
	if ctx.Err() != nil {
		_ = job.Release()
		return
	}
	delay := t.cfg.Backoff[min(max(attempt, 1), len(t.cfg.Backoff))-1]
	if cause != nil {
		log.Warn("transcode job handed back", "err", cause, "retry_in", delay)
	}
	if err := job.Retry(delay); err != nil {
		log.Warn("retry transcode job", "err", err)
	}
}

// errDeleted is the cause of a job's context ended by its video's deletion.
var errDeleted = errors.New("video deleted")

// heartbeat keeps the job alive while ffmpeg runs and, should the Deleted
// event have slipped past the watch (a NATS reconnect), checks the video at
// each beat and cancels the job when it is gone.
func (t *Transcoder) heartbeat(ctx context.Context, job *queue.Job, id string, cancel context.CancelCauseFunc) (stop func()) {
	ticker := time.NewTicker(t.cfg.AckWait / 3)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-quit:
				ticker.Stop()
				return
			case <-ticker.C:
				_ = job.InProgress()
				if domain.IsKind(t.checkDeleted(ctx, id, nil), domain.NotFound) {
					cancel(errDeleted)
				}
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

// transcode makes every output in a work directory, then publishes it under
// the video's directory, and returns the command that records it.
func (t *Transcoder) transcode(ctx context.Context, log *slog.Logger, id string, v domain.Video) (domain.CompleteTranscode, error) {
	ext, account, download, thumbAt := v.Ext, v.Account, v.Download, v.ThumbnailTime
	var done domain.CompleteTranscode
	bounds, err := t.bounds(ctx, account)
	if err != nil {
		return done, err
	}
	attemptDir, src, err := t.scratch.make(ctx, id, ext)
	if err != nil {
		// Transient: a worker whose media directory is not (yet) the shared
		// one, or a mount that is briefly gone, must not fail the video.
		return done, t.checkDeleted(ctx, id, err)
	}
	defer func() {
		if err := attemptDir.Remove(); err != nil {
			log.Warn("remove work directory", "err", err)
		}
	}()
	work := attemptDir.Dir
	// The demuxer comes from the file's bytes; ffmpeg reads the input by
	// its name inside the work directory.
	in, err := ffmpeg.OpenInput(src, media.InputName(ext))
	if err != nil {
		return done, err
	}
	jail := ffmpeg.Jail{Dir: work, User: t.cfg.User, Limits: t.cfg.Limits, Tools: t.cfg.Tools}

	info, err := ffmpeg.Probe(ctx, in, ffmpeg.ProbeOptions{Jail: jail, Bounds: bounds})
	if err != nil {
		return done, err
	}
	// Progress and every time cap go by the length kino trusts: what the
	// file claims, never more than the video it holds, within the plan.
	length := info.Length()
	rungs := ffmpeg.Ladder(info)
	report := t.progressReporter(ctx, id, length)
	report(0)                                    // before the fast path's checks, which encode samples
	x := extras(ctx, log, in, info, rungs, jail) // storyboard, fast path: outputs.go
	rungs = x.Fast.Rungs(rungs)                  // the encoded rungs step down from the copied one
	report(0)                                    // again: the ladder's speed is measured from here, not from before the checks
	opts := func(lo, hi float64) ffmpeg.RunOptions {
		return ffmpeg.RunOptions{Duration: length, StallTimeout: t.cfg.Stall, Jail: jail,
			OnProgress: func(f float64) { report(lo + (hi-lo)*f) }}
	}
	if h := t.cfg.hooks.beforeEncode; h != nil {
		h(work)
	}
	// The small outputs (thumbnail, preview, storyboard) start once the
	// video is playable, or the ladder is over: beside the ladder's first
	// segments they halved its speed on 2 cores, and so put off playback
	// (docs/performance.md); after that they fill the gaps the ladder's
	// encoders leave on the cores.
	split := t.split(info, rungs, x.Extras)                                 // progressive.go
	early := t.publishEarly(ctx, log, id, work, info, rungs, split, x.Fast) // progressive.go
	defer early.stop()
	g, gctx := errgroup.WithContext(ctx)
	ladderDone := make(chan struct{})
	lanes := ladderLanes(rungs, split, x.Extras)
	progress := lanesProgress{f: make([]float64, len(lanes)), report: report}
	var running sync.WaitGroup
	for i, l := range lanes {
		running.Add(1)
		g.Go(func() error {
			defer running.Done()
			o := opts(0, 1)
			o.OnProgress = func(f float64) { progress.set(i, f) }
			if l.x.Lane != "" {
				o.Jail.Nice = ffmpeg.HighLaneNice
			}
			// Only the ladder's own output keeps it alive, not its neighbours'.
			o.OutputDir = filepath.Join(work, media.HLSDir)
			if err := ffmpeg.Run(gctx, ffmpeg.LadderArgs(in, media.HLSDir, info, l.rungs, l.x), o); err != nil {
				return fmt.Errorf("hls: %w", err)
			}
			return nil
		})
	}
	g.Go(func() error {
		running.Wait()
		defer close(ladderDone)
		if gctx.Err() != nil {
			return nil // a lane failed: its error is the group's
		}
		if split > 0 {
			if h := t.cfg.hooks.beforeMerge; h != nil {
				h(work)
			}
			if err := mergeLanes(work); err != nil {
				return err
			}
		}
		return checkWhole(work, info, rungs) // whole.go
	})
	var animated bool
	g.Go(func() error {
		select {
		case <-early.playableNow():
		case <-ladderDone:
		case <-gctx.Done():
			return gctx.Err()
		}
		var err error
		var tiled bool
		if animated, tiled, err = stills(gctx, log, in, work, info, thumbAt, x.storyboard, opts(0, 0)); err != nil || tiled {
			return err
		}
		return storyboardPass(gctx, log, in, work, info, x, opts(0, 0)) // outputs.go
	})
	if err := g.Wait(); err != nil {
		if errors.Is(err, ffmpeg.ErrPictureTooLarge) {
			// The stream grew past the picture limit after the headers
			// Probe read: its big frames were refused, not decoded.
			return done, bounds.FrameTooLarge("transcode", err)
		}
		return done, err
	}
	if err := early.finish(ctx); err != nil {
		return done, err
	}
	if h := t.cfg.hooks.afterEncode; h != nil {
		h(work)
	}
	res := make([]string, len(rungs))
	for i, r := range rungs {
		res[i] = r.Name
	}
	if err := verifyOutputs(work, res, info.HasAudio); err != nil {
		return done, err
	}
	if err := measureBandwidth(work, ffmpeg.OutputRate(info)); err != nil { // bandwidth.go
		// The outputs are whole (verified): a master with ffmpeg's
		// estimates, or without a copied variant's CODECS, plays, and
		// encoding again would measure the same.
		log.Warn("the master playlist is not all measured", "err", err)
	}
	held, _ := ladderSeconds(work, rungs, info.HasAudio) // whole.go
	extra, err := finishOutputs(ctx, log, work, info, rungs, x, download, opts(1, 1))
	if err != nil {
		return done, err
	}
	if err := os.Remove(filepath.Join(work, in.Path)); err != nil {
		return done, err
	}
	size, err := media.Size(work)
	if err != nil {
		return done, err
	}
	if err := t.checkDeleted(ctx, id, nil); err != nil {
		return done, err
	}
	if err := t.cfg.Media.Publish(ctx, id, work); err != nil {
		if eventstore.IsUnavailable(err) {
			return done, outage{err}
		}
		return done, t.checkDeleted(ctx, id, fmt.Errorf("publish: %v", err))
	}
	log.Debug("outputs published", "rungs", len(rungs))
	return domain.CompleteTranscode{Duration: heldDuration(info, held), Width: info.Width, Height: info.Height,
		HasAudio: info.HasAudio, Resolutions: res, ProcessedSize: size,
		Storyboard: extra.storyboard, Download: extra.download, Animated: animated, ThumbnailTime: thumbAt}, nil
}

// bounds are the probe-time limits for a video of account: the configured
// ones, with the duration of the account's plan.
func (t *Transcoder) bounds(ctx context.Context, account string) (ffmpeg.Bounds, error) {
	b := *t.cfg.Bounds
	plan, err := t.plan(ctx, account) // fresh: a plan raised a moment ago counts
	if err != nil {
		return b, err
	}
	b.MaxDuration, b.Plan = t.cfg.Plans.Limits(plan).MaxDuration, string(plan)
	return b, nil
}

// stills makes the thumbnail (at asked, or kino's choice when nil), the
// preview and the animated preview of in, in the work directory opts'
// jail runs in, and with them, when it can, the storyboard sb plans;
// animated reports whether the animated preview was made (it is optional:
// a failure is logged), tiled whether the storyboard's tiles were made and
// laid out (or left out, logged): when not, storyboardPass makes them.
func stills(ctx context.Context, log *slog.Logger, in ffmpeg.Input, work string, info ffmpeg.Info, asked *float64, sb ffmpeg.Storyboard, opts ffmpeg.RunOptions) (animated, tiled bool, err error) {
	opts.OnProgress = nil
	at := ffmpeg.ThumbnailAt(info, asked)
	if made, err := stillsAtOnce(ctx, log, in, work, info, at, sb, opts); made || err != nil {
		if made && sb.Count > 0 {
			assembleStoryboard(log, work, sb, nil) // outputs.go
		}
		return made, made && sb.Count > 0, err
	}
	if err := thumbnail(ctx, in, work, info, at, opts); err != nil {
		return false, false, err
	}
	preview := opts
	preview.Duration = min(opts.Duration, 6) // the preview is the first 6 s
	preview.OutputDir = filepath.Join(work, media.PreviewName)
	if err := ffmpeg.Run(ctx, ffmpeg.PreviewArgs(in, media.PreviewName, info), preview); err != nil {
		return false, false, fmt.Errorf("preview: %w", err)
	}
	return animatedPreview(ctx, log, in, work, info, at, opts), false, nil
}

// stillsAtOnce makes the three stills, and the storyboard's tiles when sb
// plans any, in one ffmpeg pass (ffmpeg.StillsArgs) and reports whether it
// made all of them. When it did not (an output empty, a seek past the last
// frame, the pass failed), it leaves none of them for stills to make one
// by one, as before, with their fallbacks and each one's own errors. It
// returns an error only for a cancelled ctx and for what would only happen
// again one by one: a picture over the decoders' cap, a stall of a pass
// without the storyboard.
func stillsAtOnce(ctx context.Context, log *slog.Logger, in ffmpeg.Input, work string, info ffmpeg.Info, at float64, sb ffmpeg.Storyboard, opts ffmpeg.RunOptions) (bool, error) {
	names := []string{media.ThumbnailName, media.PreviewName, media.AnimatedName}
	made := names // what must not be empty: the stills, and the first tile when planned
	if sb.Count > 0 {
		made = append(slices.Clip(names), ffmpeg.TileFile(0))
	} else {
		opts.Duration = min(opts.Duration, 6) // the longest output is the preview's first 6 s
	}
	opts.OutputDir = filepath.Join(work, media.PreviewName)
	err := ffmpeg.Run(ctx, ffmpeg.StillsArgs(in, info, at, media.ThumbnailName, media.PreviewName, media.AnimatedName, sb, "."), opts)
	drops := func() {
		drop(work, names...)
		for k := range sb.Count {
			drop(work, ffmpeg.TileFile(k))
		}
	}
	if ctx.Err() != nil {
		drops()
		return false, ctx.Err()
	}
	// A stall of the stills alone would stall again one by one; with the
	// storyboard in the pass it may be the storyboard's, which only leaves
	// the storyboard out: the one-by-one passes tell which.
	if errors.Is(err, ffmpeg.ErrPictureTooLarge) || (errors.Is(err, ffmpeg.ErrStalled) && sb.Count == 0) {
		drops()
		return false, fmt.Errorf("stills: %w", err)
	}
	for _, name := range made {
		if err != nil {
			break
		}
		if fi, serr := os.Stat(filepath.Join(work, name)); serr != nil || fi.Size() == 0 {
			err = fmt.Errorf("%s: ffmpeg wrote nothing", name)
		}
	}
	if err != nil {
		log.Debug("stills one by one", "err", err)
		drops()
		return false, nil
	}
	return true, nil
}

// thumbnail makes thumbnail.jpg of in at at seconds in work.
func thumbnail(ctx context.Context, in ffmpeg.Input, work string, info ffmpeg.Info, at float64, opts ffmpeg.RunOptions) error {
	opts.OnProgress = nil
	opts.OutputDir = filepath.Join(work, media.ThumbnailName) // its own output, not the ladder's
	if err := ffmpeg.Run(ctx, ffmpeg.ThumbnailArgsAt(in, media.ThumbnailName, info, at), opts); err != nil {
		return fmt.Errorf("thumbnail: %w", err)
	}
	thumb := filepath.Join(work, media.ThumbnailName)
	if _, err := os.Stat(thumb); err != nil {
		// The seek went past the last frame (durations lie): take the first.
		if err := ffmpeg.Run(ctx, ffmpeg.ThumbnailArgsAt(in, media.ThumbnailName, info, 0), opts); err != nil {
			return fmt.Errorf("thumbnail: %w", err)
		}
		if _, err := os.Stat(thumb); err != nil {
			return fmt.Errorf("thumbnail: ffmpeg wrote no frame: %w", err)
		}
	}
	return nil
}

// animatedPreview makes preview.webp of in from at seconds in work, and
// reports whether it did: a failure (other than a cancelled ctx, which the
// caller sees itself) is logged and leaves no file.
func animatedPreview(ctx context.Context, log *slog.Logger, in ffmpeg.Input, work string, info ffmpeg.Info, at float64, opts ffmpeg.RunOptions) bool {
	opts.OnProgress = nil
	opts.Duration = min(opts.Duration, 3)
	opts.OutputDir = filepath.Join(work, media.AnimatedName)
	err := ffmpeg.Run(ctx, ffmpeg.AnimatedArgs(in, media.AnimatedName, info, at), opts)
	if err == nil {
		if fi, serr := os.Stat(filepath.Join(work, media.AnimatedName)); serr != nil || fi.Size() == 0 {
			err = fmt.Errorf("ffmpeg wrote no animation")
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("animated preview left out", "err", err)
		}
		drop(work, media.AnimatedName)
		return false
	}
	return true
}

// checkDeleted returns a NotFound error when the video was deleted, and
// otherwise err.
func (t *Transcoder) checkDeleted(ctx context.Context, id string, err error) error {
	events, _, lerr := t.cfg.Store.Load(ctx, videoStream(id))
	if lerr != nil {
		return errors.Join(err, lerr)
	}
	if v := domain.Fold[domain.Video](events); v.Deleted {
		return domain.E("transcode", domain.NotFound, "video deleted")
	}
	return err
}

func (t *Transcoder) clearProgress(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = t.cfg.Progress.Clear(ctx, id)
}

func (t *Transcoder) removeFiles(log *slog.Logger, id string) {
	if err := t.cfg.Media.Remove(context.Background(), id); err != nil {
		log.Error("remove video files", "err", err)
	}
}

// userMessage is the client-facing sentence of an Unsupported error.
func userMessage(err error) string {
	msg := domain.MessageOf(err)
	if msg == "" {
		return "The file could not be read as a video."
	}
	if r := []rune(msg); len(r) > 0 && r[len(r)-1] != '.' {
		msg += "."
	}
	return upperFirst(msg)
}

func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// attempts is "1 attempt", "2 attempts"...: an operator may allow only one.
func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return strconv.Itoa(n) + " attempts"
}

// transientReason names a transient failure without ffmpeg's output.
func transientReason(err error) string {
	var exit *ffmpeg.ExitError
	switch {
	case errors.Is(err, ffmpeg.ErrStalled):
		return "the encoder stopped making progress"
	case errors.Is(err, ffmpeg.ErrTooSlow):
		return "the encoder ran out of time"
	case errors.As(err, &exit):
		return "the encoder could not process the video"
	case errors.Is(err, errIncomplete):
		return "its outputs could not be written in full"
	}
	return "an internal error interrupted it"
}
