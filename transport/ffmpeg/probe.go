package ffmpeg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/kino-video/kino/domain"
)

const opProbe = "probe video"

// Info is what Probe learns about an input.
//
// Rotation is clockwise, the convention of the legacy "rotate" tag: a
// portrait phone video (rotate=90; ffprobe's display-matrix rotation -90,
// which counts counter-clockwise and is negated here) has Rotation 90 and
// Width < Height.
type Info struct {
	Duration   float64 // seconds
	Width      int     // displayed width (after rotation)
	Height     int     // displayed height (after rotation)
	Rotation   int     // degrees from the display matrix / rotate tag, normalised to 0, 90, 180, 270
	HasAudio   bool
	FrameRate  float64 // e.g. 25, 29.97
	VideoCodec string  // e.g. "h264"
}

// durationSource says where Probe found the duration; tests check it.
type durationSource int

const (
	fromStream   durationSource = iota // the video stream's duration
	fromFormat                         // format.duration
	fromFallback                       // a copy pass through ffmpeg, last out_time_us
	fromNowhere                        // the fallback found nothing either: Duration is 0
)

func (s durationSource) String() string {
	return [...]string{"stream", "format", "fallback", "nowhere"}[s]
}

// fallbackMaxRuntime bounds the copy pass that measures a duration; it reads
// the whole file but decodes nothing.
const fallbackMaxRuntime = 10 * time.Minute

// Probe runs ffprobe (JSON output) on path. The duration is the video
// stream's, else format.duration, else what a copy pass through ffmpeg
// reaches (mkv/webm written to a pipe have neither); it is 0 only if even
// that finds nothing.
//
// No decodable video stream gives a domain Unsupported error with message
// "no video stream found"; ffprobe failing on the file (invalid data,
// truncated moov...) gives Unsupported with a human message and ffprobe's
// stderr in the cause. A missing file or binary, a cancelled ctx, or ffprobe
// killed by a signal give a plain (transient) error.
func Probe(ctx context.Context, path string) (Info, error) {
	info, _, err := probe(ctx, path)
	return info, err
}

func probe(ctx context.Context, path string) (Info, durationSource, error) {
	if _, err := os.Stat(path); err != nil {
		return Info{}, 0, fmt.Errorf("%s: %w", opProbe, err)
	}
	cmd := exec.CommandContext(ctx, "ffprobe",
		"-v", "error", "-print_format", "json", "-show_format", "-show_streams", "-i", path)
	cmd.WaitDelay = waitDelay
	var stdout bytes.Buffer
	stderr := &tailWriter{max: stderrTail}
	cmd.Stdout = &stdout
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Info{}, 0, fmt.Errorf("%s: %w", opProbe, ctxErr)
		}
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) && exitErr.ExitCode() > 0 {
			tail := strings.TrimSpace(stderr.String())
			return Info{}, 0, domain.Wrap(opProbe, domain.Unsupported,
				fmt.Errorf("ffprobe: %w: %s", err, tail), probeFailureMessage(tail))
		}
		return Info{}, 0, fmt.Errorf("%s: ffprobe: %w", opProbe, err)
	}
	info, src, err := parseProbe(stdout.Bytes())
	if err != nil || src != fromNowhere {
		return info, src, err
	}

	var lastUs int64
	err = run(ctx, []string{
		"-nostdin", "-hide_banner", "-loglevel", "error",
		"-i", path, "-map", "0", "-c", "copy", "-f", "null", "-",
		"-progress", "pipe:1", "-stats_period", "1",
	}, RunOptions{MaxRuntime: fallbackMaxRuntime}, func(us int64, end bool) {
		if !end {
			lastUs = max(lastUs, us)
		}
	})
	var exitErr *ExitError
	if errors.As(err, &exitErr) {
		return Info{}, 0, domain.Wrap(opProbe, domain.Unsupported, err, "the file is truncated or corrupt")
	}
	if err != nil {
		return Info{}, 0, fmt.Errorf("%s: measure duration: %w", opProbe, err)
	}
	if lastUs > 0 {
		info.Duration = float64(lastUs) / 1e6
		src = fromFallback
	}
	return info, src, nil
}

// probeFailureMessage turns ffprobe's complaint into something a client
// may read. An .mp4 that is not one at all also lacks a moov atom.
func probeFailureMessage(stderr string) string {
	s := strings.ToLower(stderr)
	if strings.Contains(s, "moov atom not found") || strings.Contains(s, "partial file") {
		return "the file is truncated or corrupt"
	}
	return "the file is not a video format we can read, or it is corrupt"
}

// probeOutput is the part of ffprobe's JSON that Probe reads.
type probeOutput struct {
	Streams []struct {
		CodecType    string            `json:"codec_type"`
		CodecName    string            `json:"codec_name"`
		Width        int               `json:"width"`
		Height       int               `json:"height"`
		AvgFrameRate string            `json:"avg_frame_rate"`
		RFrameRate   string            `json:"r_frame_rate"`
		Duration     string            `json:"duration"`
		Tags         map[string]string `json:"tags"`
		Disposition  struct {
			AttachedPic int `json:"attached_pic"`
		} `json:"disposition"`
		SideData []struct {
			Type     string   `json:"side_data_type"`
			Rotation *float64 `json:"rotation"`
		} `json:"side_data_list"`
	} `json:"streams"`
	Format struct {
		Duration string `json:"duration"`
	} `json:"format"`
}

// parseProbe reads ffprobe's JSON. It reports fromNowhere when neither the
// video stream nor the format has a duration.
func parseProbe(data []byte) (Info, durationSource, error) {
	var out probeOutput
	if err := json.Unmarshal(data, &out); err != nil {
		return Info{}, 0, fmt.Errorf("%s: decode ffprobe output: %w", opProbe, err)
	}
	var info Info
	video := -1
	for i, s := range out.Streams {
		switch s.CodecType {
		case "audio":
			if s.CodecName != "" {
				info.HasAudio = true
			}
		case "video":
			// Cover art in audio files is a one-picture "video" stream.
			if video < 0 && s.CodecName != "" && s.Width > 0 && s.Height > 0 && s.Disposition.AttachedPic == 0 {
				video = i
			}
		}
	}
	if video < 0 {
		return Info{}, 0, domain.E(opProbe, domain.Unsupported, "no video stream found")
	}
	v := out.Streams[video]
	info.VideoCodec = v.CodecName
	info.Width, info.Height = v.Width, v.Height

	rot, found := 0.0, false
	for _, sd := range v.SideData {
		if sd.Rotation != nil {
			rot, found = -*sd.Rotation, true
			break
		}
	}
	if !found {
		if tag, ok := v.Tags["rotate"]; ok {
			rot, _ = strconv.ParseFloat(tag, 64)
		}
	}
	info.Rotation = normaliseRotation(rot)
	if info.Rotation == 90 || info.Rotation == 270 {
		info.Width, info.Height = info.Height, info.Width
	}

	info.FrameRate = parseRate(v.AvgFrameRate)
	if info.FrameRate == 0 {
		info.FrameRate = parseRate(v.RFrameRate)
	}

	if d := parseSeconds(v.Duration); d > 0 {
		info.Duration = d
		return info, fromStream, nil
	}
	if d := parseSeconds(out.Format.Duration); d > 0 {
		info.Duration = d
		return info, fromFormat, nil
	}
	return info, fromNowhere, nil
}

// normaliseRotation rounds degrees to a quarter turn in [0, 360).
func normaliseRotation(deg float64) int {
	q := int(math.Round(deg/90)) % 4
	if q < 0 {
		q += 4
	}
	return q * 90
}

// parseRate reads "30000/1001" (or "25") as frames per second, rounded to
// three decimals; 0 when absent or "0/0".
func parseRate(s string) float64 {
	num, den, ok := strings.Cut(s, "/")
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n <= 0 {
		return 0
	}
	if ok {
		d, err := strconv.ParseFloat(den, 64)
		if err != nil || d <= 0 {
			return 0
		}
		n /= d
	}
	return math.Round(n*1000) / 1000
}

// parseSeconds reads ffprobe's "2.000000"; 0 for "N/A", absent or invalid.
func parseSeconds(s string) float64 {
	d, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(d) || math.IsInf(d, 0) || d < 0 {
		return 0
	}
	return d
}
