package ffmpeg

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
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
//
// Duration is what the file claims; Frames, Span and MaxGap come from a
// scan of the video stream's packets (no decoding) and say what it holds.
type Info struct {
	Duration   float64 // seconds, as the file claims it (the scanned Span when it claims nothing)
	Width      int     // displayed width (square pixels, after rotation)
	Height     int     // displayed height (after rotation)
	Rotation   int     // degrees from the display matrix / rotate tag, normalised to 0, 90, 180, 270
	HasAudio   bool
	FrameRate  float64 // e.g. 25, 29.97
	EncodeRate float64 // the rate ffmpeg will encode at, its guess from the headers (set by Probe)
	VideoCodec string  // e.g. "h264"
	Frames     int     // video packets found by the scan
	Span       float64 // seconds from the first video frame to the end of the last, by their timestamps
	MaxGap     float64 // largest step in seconds between consecutive video frames

	// The streams Probe checked, by index in the file: every ffmpeg run
	// maps exactly these (never "the first video stream", which may be a
	// cover picture Probe skipped). AudioStream is meaningful with HasAudio.
	VideoStream, AudioStream int
	// MaxPixels is the decoders' picture cap (Bounds.MaxWidth×MaxHeight)
	// Probe ran under and every ffmpeg run decodes under; 0 is none.
	MaxPixels int

	// Source is what decides the fast path (fastpath.go).
	Source Source
}

// Length is the duration kino trusts for its own limits and outputs: what
// the file claims, but never past the end of the video it holds, which is
// its Lead (the audio may start first: ffmpeg's output begins with the
// file, its first picture held until the video starts) and the scanned
// Span after it.
func (i Info) Length() float64 {
	if i.Span <= 0 {
		return i.Duration
	}
	if i.Duration <= 0 {
		return i.Span
	}
	return min(i.videoEnd(), i.Duration)
}

// videoEnd is where the scanned video ends on the output's timeline: its
// Lead, then its Span.
func (i Info) videoEnd() float64 { return i.Source.Lead + i.Span }

// durationSource says where Probe found the duration; tests check it.
type durationSource int

const (
	fromStream  durationSource = iota // the video stream's duration
	fromFormat                        // format.duration
	fromScan                          // the packet scan's span (mkv/webm written to a pipe claim nothing)
	fromNowhere                       // the scan found no timestamps either: Duration is 0
)

func (s durationSource) String() string {
	return [...]string{"stream", "format", "scan", "nowhere"}[s]
}

// probeMaxRuntime bounds each ffprobe run. The scan reads the whole file
// but decodes nothing, and stops early at a limit.
const probeMaxRuntime = 10 * time.Minute

// Bounds are the server's limits on an input, checked by Probe. They are
// never taken from the file. A zero field is no limit.
type Bounds struct {
	MaxWidth, MaxHeight int           // the displayed picture must fit, either way round
	MaxFrameRate        float64       // frames per second
	MaxDuration         time.Duration // of the video, by its timestamps and by its claim
	MaxGap              time.Duration // between two consecutive frames
	Plan                string        // named in the duration message, e.g. "free"
}

// maxPixels is the cap on a decoded picture's width×height: 0 for none.
func (b Bounds) maxPixels() int {
	if b.MaxWidth <= 0 || b.MaxHeight <= 0 {
		return 0
	}
	return b.MaxWidth * b.MaxHeight
}

// DefaultBounds: 8K UHD either way round, 120 fps, a minute between
// frames, no duration limit (the transcoder sets one per plan).
func DefaultBounds() Bounds {
	return Bounds{MaxWidth: 7680, MaxHeight: 4320, MaxFrameRate: 120, MaxGap: time.Minute}
}

// ProbeOptions configures Probe.
type ProbeOptions struct {
	Jail   Jail   // where and how ffprobe runs
	Bounds Bounds // limits checked at probe time
}

// Probe runs ffprobe (JSON output) on in, then scans the packets of its
// video stream (timestamps only, nothing decoded) and checks opt.Bounds.
// The duration is the video stream's, else format.duration, else the
// scanned span.
//
// No decodable video stream gives a domain Unsupported error with message
// "no video stream found"; ffprobe failing on the file (invalid data,
// truncated moov...) gives Unsupported with a human message and ffprobe's
// stderr in the cause; a limit exceeded gives Unsupported naming it. A
// missing file or binary, a cancelled ctx, or ffprobe killed by a signal
// give a plain (transient) error.
func Probe(ctx context.Context, in Input, opt ProbeOptions) (Info, error) {
	info, _, err := probe(ctx, in, opt)
	return info, err
}

func probeHeader(ctx context.Context, in Input, opt ProbeOptions) (Info, durationSource, streamMeta, error) {
	path := in.Path
	if opt.Jail.Dir != "" && !filepath.IsAbs(path) {
		path = filepath.Join(opt.Jail.Dir, path)
	}
	if _, err := os.Stat(path); err != nil {
		return Info{}, 0, streamMeta{}, fmt.Errorf("%s: %w", opProbe, err)
	}
	var stdout bytes.Buffer
	b := opt.Bounds
	// The decoders' cap applies to ffprobe too: reading the headers
	// decodes a first frame, which must not cost a picture over the limit.
	args := headerArgs(in, b)
	capped, err := runProbe(ctx, opt.Jail, args, func(r io.Reader) error {
		_, err := io.Copy(&stdout, r)
		return err
	})
	var info Info
	var src durationSource
	var meta streamMeta
	if err == nil {
		info, src, meta, err = parseProbe(stdout.Bytes())
	}
	if capped != "" && (err == nil || domain.KindOf(err) == domain.Unsupported) {
		// The cap kept ffprobe from decoding a picture of some stream (a
		// cover too, which ffmpeg would decode on opening the file, and
		// refuse there): the refusal names the picture's size.
		return Info{}, 0, streamMeta{}, b.cappedPicture(capped)
	}
	if err != nil {
		return Info{}, 0, streamMeta{}, err
	}
	info.MaxPixels, info.EncodeRate = b.maxPixels(), meta.guessedRate
	audio := -1
	if info.HasAudio {
		audio = info.AudioStream
	}
	info.Source = parseSource(stdout.Bytes(), meta.index, audio)
	if err := b.checkPicture(info, meta.guessedRate); err != nil {
		return Info{}, 0, streamMeta{}, err
	}
	// The least the claim may mean until the scan says (lateStart).
	if err := b.checkDuration(info.Duration - meta.lateStart(src, info.Duration)); err != nil {
		return Info{}, 0, streamMeta{}, err
	}
	return info, src, meta, nil
}

// ProbeHeader reads in's streams and format only, in one ffprobe run,
// with Probe's checks of the picture and the duration but no scan of the
// packets (Frames, Span and MaxGap stay zero): for files kino wrote
// itself (its tests read its previews with it), which need checking that
// they are there and readable, not against a hostile uploader.
func ProbeHeader(ctx context.Context, in Input, opt ProbeOptions) (Info, error) {
	info, _, _, err := probeHeader(ctx, in, opt)
	return info, err
}

func probe(ctx context.Context, in Input, opt ProbeOptions) (Info, durationSource, error) {
	info, src, meta, err := probeHeader(ctx, in, opt)
	if err != nil {
		return Info{}, 0, err
	}
	b := opt.Bounds
	var sc packetScan
	args := append([]string{"-v", "error", "-select_streams", strconv.Itoa(meta.index),
		"-show_entries", "packet=pts_time,dts_time,duration_time,size,flags", "-print_format", "csv=p=0"}, in.capped(b.maxPixels())...)
	// (The scan decodes nothing; the cap is there all the same.)
	_, err = runProbe(ctx, opt.Jail, args, func(r io.Reader) error { return sc.read(r, b) })
	if err != nil {
		return Info{}, 0, err
	}
	info.Frames, info.Span, info.MaxGap = sc.frames, sc.span(), sc.maxGap
	sc.keys.fill(&info.Source, sc.end)
	info.Source.Hidden = sc.hidden
	if meta.hasStart && sc.havePTS {
		info.Source.Lead = max(sc.first-meta.start, 0)
	}
	if late := meta.lateStart(src, info.Duration); late > 0 && sc.havePTS && info.Duration >= sc.end-endClaimSlack {
		// The claim reaches where the video ends counted from time 0:
		// it is an end, not a length (lateStart).
		info.Duration -= late
	}
	if src == fromNowhere && info.Span > 0 {
		info.Duration, src = info.videoEnd(), fromScan
	}
	if err := b.checkDuration(info.Duration); err != nil {
		return Info{}, 0, err
	}
	if err := b.checkScan(info); err != nil {
		return Info{}, 0, err
	}
	if end := info.videoEnd(); info.HasAudio && sc.havePTS && meta.hasStart && Short(info.Duration, end) {
		// The claim runs well past the video: a file cut short (the
		// transcoder refuses it when its ladder holds less), or a whole
		// one whose audio runs on (the ladder stops with the video, and
		// so does the video kino announces). The audio's end tells them
		// apart.
		audio, err := streamEnd(ctx, in, opt, info.AudioStream)
		if err != nil {
			return Info{}, 0, err
		}
		if audio-meta.start >= info.Duration-audioEndSlack {
			info.Duration = end
		}
	}
	return info, src, nil
}

// audioEndSlack is how far short of a claim the audio may end and still
// explain it: a container's duration estimate from timestamps, with room.
const audioEndSlack = 0.5

// Short reports whether held seconds fall short of claimed ones by more
// than a whole file's streams and claim differ: over a second and over a
// tenth.
func Short(claimed, held float64) bool {
	return claimed-held > max(1, 0.1*claimed)
}

// streamEnd is where stream index of in ends (its largest pts plus that
// packet's duration, on the file's timeline), by a scan of its packets
// that decodes nothing; 0 when none has a timestamp.
func streamEnd(ctx context.Context, in Input, opt ProbeOptions, index int) (float64, error) {
	args := append([]string{"-v", "error", "-select_streams", strconv.Itoa(index),
		"-show_entries", "packet=pts_time,duration_time", "-print_format", "csv=p=0"}, in.capped(opt.Bounds.maxPixels())...)
	end := 0.0
	_, err := runProbe(ctx, opt.Jail, args, func(r io.Reader) error {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			pts, dur, _ := strings.Cut(strings.TrimSpace(sc.Text()), ",")
			if p, ok := scanTime(pts); ok {
				d, _ := scanTime(dur)
				end = max(end, p+max(d, 0))
			}
		}
		return sc.Err()
	})
	return end, err
}

// endClaimSlack is how far short of the video's last timestamp a claim
// may end and still be taken for where the file ends: the millisecond a
// Matroska timestamp rounds to, with room.
const endClaimSlack = 0.01

// headerArgs are ffprobe's arguments for the streams and format of in, as
// JSON, under the decoders' cap of b.
func headerArgs(in Input, b Bounds) []string {
	return append([]string{"-v", "error", "-print_format", "json", "-show_format", "-show_streams"}, in.capped(b.maxPixels())...)
}

// runProbe runs ffprobe with args under j, handing its stdout to read. When
// read fails, ffprobe is killed and read's error returned as it is. capped
// is the stderr tail when a decoder refused a picture over -max_pixels
// ("" otherwise).
func runProbe(ctx context.Context, j Jail, args []string, read func(io.Reader) error) (capped string, err error) {
	return runTool(ctx, j, "ffprobe", args, read)
}

// runTool is runProbe with another tool of ffmpeg's (ffmpeg itself, for a
// quick pass that writes to stdout): the same jail, limits and errors.
func runTool(ctx context.Context, j Jail, tool string, args []string, read func(io.Reader) error) (capped string, err error) {
	runCtx, cancel := context.WithTimeout(ctx, probeMaxRuntime)
	defer cancel()
	if j.Limits.any() {
		j.Limits = j.Limits.WithCPUFor(probeMaxRuntime)
	}
	cmd := j.command(runCtx, tool, args)
	stderr := &tailWriter{max: stderrTail, marker: pixelCapMessage}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", fmt.Errorf("%s: %w", opProbe, err)
	}
	runtime.LockOSThread() // as in run: the parent-death signal follows the thread
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("%s: %s: %w", opProbe, tool, err)
	}
	readErr := read(stdout)
	if readErr != nil {
		cancel()
		_, _ = io.Copy(io.Discard, stdout)
	}
	waitErr := cmd.Wait()
	if stderr.seen() {
		capped = stderr.String()
	}
	if readErr != nil {
		return capped, readErr
	}
	if waitErr == nil {
		return capped, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return capped, fmt.Errorf("%s: %w", opProbe, ctxErr)
	}
	if runCtx.Err() != nil {
		return capped, fmt.Errorf("%s: %s still running after %s: %w", opProbe, tool, probeMaxRuntime, ErrTooSlow)
	}
	var exitErr *exec.ExitError
	if errors.As(waitErr, &exitErr) && exitErr.ExitCode() > 0 {
		tail := strings.TrimSpace(stderr.String())
		return capped, domain.Wrap(opProbe, domain.Unsupported,
			fmt.Errorf("%s: %w: %s", tool, waitErr, tail), probeFailureMessage(tail))
	}
	return capped, fmt.Errorf("%s: ffprobe: %w", opProbe, waitErr)
}

// cappedSize finds the size in libavutil's "Picture size WxH exceeds
// specified max pixel count".
var cappedSize = regexp.MustCompile(`Picture size (\d+)x(\d+) exceeds`)

// cappedPicture is the refusal of a picture the decoders' cap refused,
// sized from ffprobe's stderr when it says.
func (b Bounds) cappedPicture(stderr string) error {
	if m := cappedSize.FindStringSubmatch(stderr); m != nil {
		w, _ := strconv.Atoi(m[1])
		h, _ := strconv.Atoi(m[2])
		if err := b.checkPicture(Info{Width: w, Height: h}, 0); err != nil {
			return err
		}
	}
	return domain.E(opProbe, domain.Unsupported, "the video's picture is larger than %d×%d (either way round), the largest accepted",
		b.MaxWidth, b.MaxHeight)
}

// packetScan follows the video packets ffprobe lists (pts_time, dts_time,
// duration_time per line, in file order).
type packetScan struct {
	frames           int
	first, end       float64 // smallest pts, largest pts + its duration
	lastDTS          float64
	haveDTS, havePTS bool
	maxGap           float64
	err              error // a limit exceeded, found mid-scan
	keys             keyScan
	hidden           int // packets flagged discard (Source.Hidden)
}

func (s *packetScan) span() float64 {
	if !s.havePTS {
		return 0
	}
	return s.end - s.first
}

// read consumes ffprobe's CSV. It stops with the limit's error as soon as
// the span or a gap exceeds b, so a file claiming
// ten hours in 10 KB costs no more than reading 10 KB.
func (s *packetScan) read(r io.Reader, b Bounds) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Split(strings.TrimSpace(sc.Text()), ",")
		if len(f) < 3 {
			continue
		}
		pts, okP := scanTime(f[0])
		dts, okD := scanTime(f[1])
		dur, _ := scanTime(f[2])
		s.frames++
		if len(f) >= 5 {
			size, _ := strconv.ParseInt(f[3], 10, 64)
			s.keys.add(pts, okP, size, len(f[4]) > 0 && f[4][0] == 'K')
			if strings.ContainsRune(f[4], 'D') {
				s.hidden++
			}
		}
		if !okD {
			dts, okD = pts, okP
		}
		if okD {
			if s.haveDTS && dts-s.lastDTS > s.maxGap {
				s.maxGap = dts - s.lastDTS
			}
			s.lastDTS, s.haveDTS = dts, true
		}
		if okP {
			if !s.havePTS || pts < s.first {
				s.first = pts
			}
			if !s.havePTS || pts+dur > s.end {
				s.end = pts + max(dur, 0)
			}
			s.havePTS = true
		}
		if err := b.checkGap(s.maxGap); err != nil {
			return err
		}
		if b.MaxDuration > 0 && s.span() > b.MaxDuration.Seconds()+1 {
			return b.durationError(s.span(), "")
		}
	}
	_, _ = io.Copy(io.Discard, r)
	return nil
}

func scanTime(s string) (float64, bool) {
	d, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(d) || math.IsInf(d, 0) {
		return 0, false
	}
	return d, true
}

func (b Bounds) checkPicture(info Info, rate float64) error {
	long, short := max(info.Width, info.Height), min(info.Width, info.Height)
	if b.MaxWidth > 0 && b.MaxHeight > 0 &&
		(long > max(b.MaxWidth, b.MaxHeight) || short > min(b.MaxWidth, b.MaxHeight)) {
		return domain.E(opProbe, domain.Unsupported, "the video is %d×%d; the largest picture accepted is %d×%d (either way round)",
			info.Width, info.Height, b.MaxWidth, b.MaxHeight)
	}
	if b.MaxFrameRate > 0 && max(rate, info.FrameRate) > b.MaxFrameRate+0.5 {
		return domain.E(opProbe, domain.Unsupported, "the video has %s frames per second; the limit is %s",
			fmtNum(max(rate, info.FrameRate)), fmtNum(b.MaxFrameRate))
	}
	return nil
}

// FrameTooLarge words err (wrapping ErrPictureTooLarge: a frame decoded
// after the headers Probe read is over the picture limit) for a client, as
// a domain Unsupported error naming the limit.
func (b Bounds) FrameTooLarge(op string, err error) error {
	return domain.Wrap(op, domain.Unsupported, err, fmt.Sprintf(
		"the video changes to a picture larger than %d×%d (either way round), the largest accepted", b.MaxWidth, b.MaxHeight))
}

func (b Bounds) checkDuration(claimed float64) error {
	if b.MaxDuration > 0 && claimed > b.MaxDuration.Seconds()+1 {
		return b.durationError(claimed, "claims to run")
	}
	return nil
}

func (b Bounds) checkGap(gap float64) error {
	if b.MaxGap > 0 && gap > b.MaxGap.Seconds() {
		return domain.E(opProbe, domain.Unsupported, "the video has a gap of %s between two frames; at most %s is accepted",
			clock(gap), clock(b.MaxGap.Seconds()))
	}
	return nil
}

// checkScan checks what the scan measured: the rate of frames actually
// there over at least a second, the span and the gaps.
func (b Bounds) checkScan(info Info) error {
	if b.MaxFrameRate > 0 && info.Span >= 1 {
		if rate := float64(info.Frames) / info.Span; rate > b.MaxFrameRate*1.05+0.5 {
			return domain.E(opProbe, domain.Unsupported, "the video has %s frames per second; the limit is %s",
				fmtNum(math.Round(rate)), fmtNum(b.MaxFrameRate))
		}
	}
	if end := info.videoEnd(); b.MaxDuration > 0 && end > b.MaxDuration.Seconds()+1 {
		return b.durationError(end, "")
	}
	if most, byCost := b.maxLead(info); info.Source.Lead > most {
		why := ""
		if byCost {
			why = " at its size and frame rate"
		}
		return domain.E(opProbe, domain.Unsupported, "the video starts %s after the file does; at most %s is accepted%s",
			clock(info.Source.Lead), clock(most), why)
	}
	return b.checkGap(info.MaxGap)
}

// maxLeadPictures bounds a lead's cost: the output holds the first
// picture until a late video starts (Length), every rung at the output's
// rate, and ffmpeg encodes all those copies at once when the first frame
// comes, before it writes or reports anything (the stall watchdog waits
// two minutes). As many pixels as 10 s of a 2160p ladder at 60 fps.
var maxLeadPictures = 10 * 60 * ladderPixels(Info{Width: 3840, Height: 2160})

// maxLead is the longest lead accepted of a video of info (seconds): a
// wait before the first picture is a gap, and costs maxLeadPictures at
// most; byCost says the cost is the tighter bound.
func (b Bounds) maxLead(info Info) (most float64, byCost bool) {
	most = math.Inf(1)
	if b.MaxGap > 0 {
		most = b.MaxGap.Seconds()
	}
	if px := float64(ladderPixels(info)) * OutputRate(info); px > 0 {
		if c := math.Floor(float64(maxLeadPictures) / px); c < most {
			return c, true
		}
	}
	return most, false
}

// ladderPixels is the pixels of one picture of every rung of info's ladder.
func ladderPixels(info Info) int {
	n := 0
	for _, r := range Ladder(info) {
		n += r.Width * r.Height
	}
	return n
}

func (b Bounds) durationError(sec float64, verb string) error {
	if verb == "" {
		verb = "runs"
	}
	who := "this server allows"
	if b.Plan != "" {
		who = fmt.Sprintf("the %s plan allows", b.Plan)
	}
	return domain.E(opProbe, domain.Unsupported, "the video %s %s; %s at most %s",
		verb, clock(sec), who, clock(b.MaxDuration.Seconds()))
}

// clock formats seconds as 1h02m03s, 2m03s or 3.5s.
func clock(sec float64) string {
	if sec < 60 {
		return strconv.FormatFloat(math.Round(sec*10)/10, 'f', -1, 64) + "s"
	}
	return time.Duration(math.Round(sec) * float64(time.Second)).String()
}

func fmtNum(f float64) string { return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64) }

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
		Index        int               `json:"index"`
		CodecType    string            `json:"codec_type"`
		CodecName    string            `json:"codec_name"`
		Width        int               `json:"width"`
		Height       int               `json:"height"`
		SAR          string            `json:"sample_aspect_ratio"`
		AvgFrameRate string            `json:"avg_frame_rate"`
		RFrameRate   string            `json:"r_frame_rate"`
		Duration     string            `json:"duration"`
		StartTime    string            `json:"start_time"`
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
		FormatName string `json:"format_name"`
		Duration   string `json:"duration"`
		StartTime  string `json:"start_time"`
	} `json:"format"`
}

// streamMeta is what Probe needs of the video stream besides Info.
type streamMeta struct {
	index       int     // the stream's index, for the packet scan
	guessedRate float64 // the rate ffmpeg will encode at (its av_guess_frame_rate)
	start       float64 // the file's start (its earliest stream's), where ffmpeg's output time 0 falls
	hasStart    bool
	fromZero    bool // the format's duration may count from time 0 (fromTimeZero)
}

// lateStart is how much of a format duration d may be time before the
// file starts: Matroska and MP4 count their duration from time 0, and
// ffmpeg's Matroska muxer writes where the file ends, so a capture
// remuxed with its clock kept (its first timestamp minutes in) claims
// those minutes too, while ffmpeg's output starts with the file. Other
// muxers (mkvmerge) write the length itself: Probe tells the two apart
// by the scan (endClaim). 0 when the file starts at 0 or d is another
// source's.
func (m streamMeta) lateStart(src durationSource, d float64) float64 {
	if src == fromFormat && m.fromZero && m.hasStart && m.start > 0 && d > m.start {
		return m.start
	}
	return 0
}

// parseProbe reads ffprobe's JSON. It reports fromNowhere when neither the
// video stream nor the format has a duration.
func parseProbe(data []byte) (Info, durationSource, streamMeta, error) {
	var out probeOutput
	var meta streamMeta
	if err := json.Unmarshal(data, &out); err != nil {
		return Info{}, 0, meta, fmt.Errorf("%s: decode ffprobe output: %w", opProbe, err)
	}
	var info Info
	video := -1
	for i, s := range out.Streams {
		switch s.CodecType {
		case "audio":
			if s.CodecName != "" && !info.HasAudio {
				info.HasAudio, info.AudioStream = true, s.Index
			}
		case "video":
			// Cover art in audio files is a one-picture "video" stream.
			if video < 0 && s.CodecName != "" && s.Width > 0 && s.Height > 0 && s.Disposition.AttachedPic == 0 {
				video = i
			}
		}
	}
	if video < 0 {
		return Info{}, 0, meta, domain.E(opProbe, domain.Unsupported, "no video stream found")
	}
	v := out.Streams[video]
	meta.index = v.Index
	meta.start, meta.hasStart = scanTime(out.Format.StartTime)
	info.VideoStream = v.Index
	meta.guessedRate = guessRate(parseRate(v.RFrameRate), parseRate(v.AvgFrameRate))
	info.VideoCodec = v.CodecName
	info.Width, info.Height = displayedWidth(v.Width, v.SAR), v.Height

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
		// The stream's duration is its own, from its first frame; the
		// output starts with the file, which the audio (or an edit list
		// delaying the video) may start first: the file announces the
		// video's end that much later.
		if vs, ok := scanTime(v.StartTime); ok && meta.hasStart && vs > meta.start {
			d += vs - meta.start
		}
		info.Duration = d
		return info, fromStream, meta, nil
	}
	if d := parseSeconds(out.Format.Duration); d > 0 {
		meta.fromZero = fromTimeZero(out.Format.FormatName)
		info.Duration = d
		return info, fromFormat, meta, nil
	}
	return info, fromNowhere, meta, nil
}

// fromTimeZero reports whether ffprobe's format name is a container whose
// duration counts from time 0 rather than from its first timestamp (as
// libavformat measures the streams it times by their timestamps, MPEG-TS
// among them).
func fromTimeZero(format string) bool {
	for name := range strings.SplitSeq(format, ",") {
		if name == "matroska" || name == "mov" {
			return true
		}
	}
	return false
}

// displayedWidth is the width a picture w pixels wide is shown at with
// sample aspect ratio sar ("num:den", a pixel's width over its height):
// an HDV picture of 1440×1080 with 4:3 pixels is shown 1920 wide, a DVD's
// 720×480 with 8:9 pixels 640 (the height stays, as ffmpeg's
// scale=iw*sar:ih keeps it). Even, at least 2; w itself when the pixels
// are square, sar is unset ("0:1", "N/A", "") or beyond maxSAR either
// way: no camera or codec makes pixels four times wider than tall, and a
// file claiming 100:1 would otherwise be refused as a picture 100 times
// its stored width.
func displayedWidth(w int, sar string) int {
	n, d, ok := strings.Cut(sar, ":")
	num, err1 := strconv.Atoi(n)
	den, err2 := strconv.Atoi(d)
	if !ok || err1 != nil || err2 != nil || num <= 0 || den <= 0 || num == den {
		return w
	}
	ratio := float64(num) / float64(den)
	if ratio > maxSAR || ratio < 1/maxSAR {
		return w
	}
	return even(float64(w) * ratio)
}

// maxSAR is the widest sample aspect ratio displayedWidth applies (and
// the narrowest, inverted). H.264's own table tops at 160:99; the widest
// in use (2:1, 80:33 for a squeezed 2.39:1 on DVD) are well within.
const maxSAR = 4.0

// guessRate is the frame rate ffmpeg gives a stream (av_guess_frame_rate):
// r_frame_rate, unless that is implausibly high (over 210) while the
// average is a plausible one (under 70).
func guessRate(r, avg float64) float64 {
	if avg > 0 && avg < 70 && r > 210 {
		return avg
	}
	if r > 0 {
		return r
	}
	return avg
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
