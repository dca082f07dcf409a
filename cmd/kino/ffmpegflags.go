package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/ffmpeg"
)

// FFmpegConfig is how transcode workers confine ffmpeg and which inputs
// they accept. Its zero value (tests building a Config directly) runs
// ffmpeg as kino's user, without resource limits, with the default
// picture limits and the default plans' durations.
type FFmpegConfig struct {
	Dir         string                        // the directory of ffmpeg and ffprobe ("": found on PATH)
	User        string                        // run ffmpeg as this user when kino is root ("" : do not switch)
	Limits      ffmpeg.RLimits                // resource limits of every ffmpeg/ffprobe
	Bounds      *ffmpeg.Bounds                // picture, frame-rate and gap limits (nil: defaults)
	MaxDuration map[domain.Plan]time.Duration // per plan; missing plans keep the default
}

// ffmpegFlags registers the ffmpeg flags on fs; parse fills cfg.
func ffmpegFlags(fs *pflag.FlagSet, cfg *FFmpegConfig) (parse func() error) {
	def := ffmpeg.DefaultRLimits()
	defBounds := ffmpeg.DefaultBounds()
	plans := domain.DefaultPlans()
	var memory, resolution string
	var cpu, gap time.Duration
	var files int
	var rate float64
	fs.StringVar(&cfg.Dir, "ffmpeg-dir", env("KINO_FFMPEG_DIR", ""), "the directory of the ffmpeg and ffprobe to run, e.g. a static build's; empty finds them on PATH (env KINO_FFMPEG_DIR)")
	fs.StringVar(&cfg.User, "ffmpeg-user", env("KINO_FFMPEG_USER", "nobody"), "when kino runs as root, run ffmpeg and ffprobe as this unprivileged user (env KINO_FFMPEG_USER)")
	fs.StringVar(&memory, "ffmpeg-max-memory", env("KINO_FFMPEG_MAX_MEMORY", "16GiB"), "address-space limit of each ffmpeg/ffprobe process, 0 for none (env KINO_FFMPEG_MAX_MEMORY)")
	fs.DurationVar(&cpu, "ffmpeg-max-cpu", envDuration("KINO_FFMPEG_MAX_CPU", 0), "CPU-time limit of each ffmpeg process; 0 derives it from the run's wall-clock cap × cores (env KINO_FFMPEG_MAX_CPU)")
	fs.IntVar(&files, "ffmpeg-max-files", envInt("KINO_FFMPEG_MAX_FILES", def.OpenFiles), "open-file limit of each ffmpeg/ffprobe process, 0 for none (env KINO_FFMPEG_MAX_FILES)")
	fs.StringVar(&resolution, "max-resolution", env("KINO_MAX_RESOLUTION", fmt.Sprintf("%dx%d", defBounds.MaxWidth, defBounds.MaxHeight)), "largest picture accepted, either way round (env KINO_MAX_RESOLUTION)")
	fs.Float64Var(&rate, "max-frame-rate", envFloat("KINO_MAX_FRAME_RATE", defBounds.MaxFrameRate), "highest frame rate accepted (env KINO_MAX_FRAME_RATE)")
	fs.DurationVar(&gap, "max-frame-gap", envDuration("KINO_MAX_FRAME_GAP", defBounds.MaxGap), "longest gap accepted between two consecutive frames, or before the first after the audio starts (env KINO_MAX_FRAME_GAP)")
	durations := map[domain.Plan]*time.Duration{}
	for _, p := range []domain.Plan{domain.PlanFree, domain.PlanPro, domain.PlanBusiness} {
		d := new(time.Duration)
		durations[p] = d
		name := "max-duration-" + string(p)
		envName := "KINO_MAX_DURATION_" + strings.ToUpper(string(p))
		fs.DurationVar(d, name, envDuration(envName, plans[p].MaxDuration), fmt.Sprintf("longest video transcoded on the %s plan (env %s)", p, envName))
	}
	return func() error {
		if cfg.Dir != "" {
			// ffmpeg runs in each job's work directory: a relative
			// directory would name another one there.
			abs, err := filepath.Abs(cfg.Dir)
			if err != nil {
				return fmt.Errorf("--ffmpeg-dir: %w", err)
			}
			cfg.Dir = abs
		}
		cfg.Limits = ffmpeg.RLimits{CPU: cpu, OpenFiles: files}
		if memory != "0" {
			n, err := parseSize(memory)
			if err != nil {
				return fmt.Errorf("--ffmpeg-max-memory: %w", err)
			}
			cfg.Limits.AddressSpace = n
		}
		if cpu < 0 || files < 0 {
			return errors.New("--ffmpeg-max-cpu and --ffmpeg-max-files must not be negative")
		}
		b := defBounds
		w, h, ok := strings.Cut(strings.TrimSpace(resolution), "x")
		var err1, err2 error
		b.MaxWidth, err1 = strconv.Atoi(w)
		b.MaxHeight, err2 = strconv.Atoi(h)
		if !ok || err1 != nil || err2 != nil || b.MaxWidth <= 0 || b.MaxHeight <= 0 {
			return fmt.Errorf("--max-resolution: want WIDTHxHEIGHT like 7680x4320 (got %q)", resolution)
		}
		if rate <= 0 || gap <= 0 {
			return errors.New("--max-frame-rate and --max-frame-gap must be positive")
		}
		b.MaxFrameRate, b.MaxGap = rate, gap
		cfg.Bounds = &b
		cfg.MaxDuration = map[domain.Plan]time.Duration{}
		for p, d := range durations {
			if *d <= 0 {
				return fmt.Errorf("--max-duration-%s must be positive", p)
			}
			cfg.MaxDuration[p] = *d
		}
		return nil
	}
}

// plans are the default plans with cfg's durations.
func (cfg FFmpegConfig) plans() domain.Plans {
	p := domain.DefaultPlans()
	for name, d := range cfg.MaxDuration {
		l := p[name]
		l.MaxDuration = d
		p[name] = l
	}
	return p
}

// user is the user ffmpeg runs as: cfg.User when kino is root, else nil
// (ffmpeg runs as kino's user; there is no other to switch to).
func (cfg FFmpegConfig) user() (*ffmpeg.User, error) {
	if cfg.User == "" || os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := ffmpeg.LookupUser(cfg.User)
	if err != nil {
		return nil, fmt.Errorf("--ffmpeg-user: %w", err)
	}
	if u.UID == 0 {
		return nil, fmt.Errorf("--ffmpeg-user %s is root: name an unprivileged user", cfg.User)
	}
	return u, nil
}

// logConfinement says at start how ffmpeg runs, so an operator sees
// whether it is another user.
func (cfg FFmpegConfig) logConfinement(log *slog.Logger, u *ffmpeg.User) {
	who, level := "kino's own user (kino is not root)", slog.LevelInfo
	switch {
	case u != nil:
		who = u.Name
	case os.Geteuid() == 0:
		who, level = "root (--ffmpeg-user is empty)", slog.LevelWarn
	}
	log.Log(context.Background(), level, "ffmpeg confinement", "ffmpeg_user", who, "max_memory", cfg.Limits.AddressSpace,
		"max_cpu", cfg.Limits.CPU, "max_files", cfg.Limits.OpenFiles)
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil {
		return v
	}
	return def
}

// findFFmpeg checks that ffmpeg and ffprobe can be run: from dir, or found
// on PATH when dir is "".
func findFFmpeg(dir string) error {
	for _, bin := range []string{"ffmpeg", "ffprobe"} {
		if dir == "" {
			if _, err := exec.LookPath(bin); err != nil {
				return fmt.Errorf("transcoding needs %s on PATH (apt-get install ffmpeg), or run with --workers 0: %w", bin, err)
			}
			continue
		}
		p := filepath.Join(dir, bin)
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			if err == nil {
				err = errors.New("not an executable file")
			}
			return fmt.Errorf("--ffmpeg-dir %s: %s: %w", dir, bin, err)
		}
	}
	return nil
}
