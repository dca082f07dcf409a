package ffmpeg

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Fast-path limits: a source whose video the top rung may copy has its
// keyframes at most fastMaxKeyInterval apart (the copied rung's segments
// are cut at them, and the encoded rungs key on the very same frames) and
// a rate a browser plays without surprise.
const (
	fastMaxKeyInterval = 2 * segmentSeconds // seconds
	fastMaxFrameRate   = maxOutputRate
	fastMaxGap         = 0.5 // seconds between frames: none of the sparse files sparseCap is for
	// fastMaxLead is how far into the file the video may start (Source.Lead).
	fastMaxLead = 0.5
	// fastMaxLevel is the highest H.264 level (level_idc) a copied rung
	// may announce, unless its size and rate need a higher one
	// (maxCopyLevel): Apple's HLS authoring specification requires High
	// Profile Level 4.2 or less, and a player skips a variant whose CODECS
	// names a level its decoder lacks. x264 gives kino's own rungs the
	// least level their size and rate need: 4.2 or less up to 1080p60
	// (16:9), 5.0 for 2560x1080, 5.1 for 2160p30.
	fastMaxLevel = 42
	// fastRateSlack is how far the scanned rate may be from the headers'
	// average, as a share of it.
	fastRateSlack = 0.05
	// fastGOP is x264's own keyframe interval in frames on the fast path,
	// beyond any source key interval accepted (60 fps × 8 s): only the
	// source's keyframes, forced, cut segments.
	fastGOP = 600
)

// Source is what Probe learns of the streams it checked beyond Info's
// picture and time: what decides whether the ladder may copy them.
type Source struct {
	PixFmt     string // e.g. "yuv420p"
	Profile    string // e.g. "High"
	Level      int    // H.264 level_idc as the stream says, e.g. 42 for 4.2
	FieldOrder string // "progressive", "tt", "unknown"...
	SAR        string // sample aspect ratio, e.g. "1:1" ("" or "0:1" when unset)
	BitRate    int64  // bit/s the container says the video has; 0 when it says nothing (Matroska, MPEG-TS)

	AudioCodec    string // e.g. "aac"
	AudioProfile  string // e.g. "LC"
	AudioChannels int
	AudioRate     int   // Hz
	AudioBitRate  int64 // bit/s, as BitRate

	// From the packet scan.
	VideoBytes     int64   // total size of the video packets
	PeakBytes      int64   // most video bytes in any segmentSeconds of whole seconds
	KeyFirst       bool    // the first video packet is a keyframe
	MaxKeyInterval float64 // seconds: largest step between keyframes, or from the last one to the end
	Keys           int     // packets flagged as keyframes (CheckKeyframes must decode as many alone)
	// Hidden are the packets flagged discard: frames an MP4 edit list
	// keeps out of the presentation (the start of a trimmed file, from
	// the keyframe before the cut), decoded as references, never shown.
	Hidden int
	// Lead is how long after the file's start (its earliest stream's)
	// the video's first frame comes, in seconds: a ladder encoded as a
	// whole fills it with the first frame repeated, the fast path cannot.
	Lead float64
	// seconds are the video bytes by whole second (EstimateRate compares
	// its samples with them); nil when the scan saw no timestamps, or its
	// timestamps spread over maxBuckets seconds.
	seconds *secondBytes
}

// secondBytes are a video stream's packet bytes by whole second of
// presentation time, from the first second with a packet on.
type secondBytes struct {
	origin int64 // that second: the floor of the smallest timestamp, in seconds
	bytes  []int64
}

// start is the second the counts start at, if there are counts.
func (s *secondBytes) start() (int64, bool) {
	if s == nil {
		return 0, false
	}
	return s.origin, true
}

// bytesIn is the bytes of the length whole seconds starting at seconds
// from the first, and whether the scan covered them all.
func (s *secondBytes) bytesIn(from, length int) (int64, bool) {
	if s == nil || from < 0 || length <= 0 || from+length > len(s.bytes) {
		return 0, false
	}
	var n int64
	for _, b := range s.bytes[from : from+length] {
		n += b
	}
	return n, true
}

// parseSource reads the fields of Source that ffprobe's header JSON gives
// for the video stream of index video and the audio stream of index audio
// (-1: none).
func parseSource(data []byte, video, audio int) Source {
	var out struct {
		Streams []struct {
			Index         int    `json:"index"`
			Profile       string `json:"profile"`
			Level         int    `json:"level"`
			PixFmt        string `json:"pix_fmt"`
			FieldOrder    string `json:"field_order"`
			SAR           string `json:"sample_aspect_ratio"`
			CodecName     string `json:"codec_name"`
			Channels      int    `json:"channels"`
			SampleRate    string `json:"sample_rate"`
			BitsPerSample string `json:"bits_per_raw_sample"`
			BitRate       string `json:"bit_rate"`
		} `json:"streams"`
	}
	var s Source
	if json.Unmarshal(data, &out) != nil {
		return s
	}
	for _, st := range out.Streams {
		switch st.Index {
		case video:
			s.PixFmt, s.Profile, s.Level, s.FieldOrder, s.SAR = st.PixFmt, st.Profile, st.Level, st.FieldOrder, st.SAR
			s.BitRate, _ = strconv.ParseInt(st.BitRate, 10, 64)
		case audio:
			s.AudioCodec, s.AudioProfile, s.AudioChannels = st.CodecName, st.Profile, st.Channels
			s.AudioRate, _ = strconv.Atoi(st.SampleRate)
			s.AudioBitRate, _ = strconv.ParseInt(st.BitRate, 10, 64)
		}
	}
	return s
}

// maxBuckets bounds the seconds keyScan keeps sizes of (36 h): a file
// whose packets spread wider is not taken by the fast path.
const maxBuckets = 1 << 17

// maxSeconds bounds the timestamps keyScan counts by second: beyond, a
// float64 holds no exact whole second, and the int64 seconds a hostile
// file's timestamps would make could overflow their differences.
const maxSeconds = 1 << 52

// keyScan follows the sizes and keyframes of the video packets for Source,
// in memory bounded whatever the file: sizes by whole second (at most
// maxBuckets of them), and the keyframes' largest step as they come.
type keyScan struct {
	bytes    int64
	keys     int             // packets flagged key
	buckets  map[int64]int64 // bytes by whole second of pts
	lastKey  float64
	maxStep  float64
	haveKey  bool
	first    bool // the first packet seen is a keyframe
	seen     bool
	unsorted bool // a keyframe before the one seen last, or too many seconds: no fast path
}

func (k *keyScan) add(pts float64, okPTS bool, size int64, key bool) {
	if !k.seen {
		k.first, k.seen = key, true
	}
	k.bytes += max(size, 0)
	if key {
		k.keys++
	}
	if !okPTS || !(math.Abs(pts) < maxSeconds) {
		return // no timestamp, or one no whole second of int64 holds
	}
	if k.buckets == nil {
		k.buckets = map[int64]int64{}
	}
	sec := int64(math.Floor(pts))
	if _, ok := k.buckets[sec]; ok || len(k.buckets) < maxBuckets {
		k.buckets[sec] += max(size, 0)
	} else {
		k.unsorted = true
	}
	if key {
		if k.haveKey && pts < k.lastKey {
			k.unsorted = true
		}
		if k.haveKey {
			k.maxStep = max(k.maxStep, pts-k.lastKey)
		}
		k.lastKey, k.haveKey = pts, true
	}
}

// fill writes the scan's findings into s; end is the end of the last frame.
func (k *keyScan) fill(s *Source, end float64) {
	s.VideoBytes, s.KeyFirst, s.Keys = k.bytes, k.first, k.keys
	secs := make([]int64, 0, len(k.buckets))
	for sec := range k.buckets {
		secs = append(secs, sec)
	}
	slices.Sort(secs)
	if n := len(secs); n > 0 && secs[n-1]-secs[0] >= 0 && secs[n-1]-secs[0] < maxBuckets {
		sb := &secondBytes{origin: secs[0], bytes: make([]int64, secs[n-1]-secs[0]+1)}
		for _, sec := range secs {
			sb.bytes[sec-secs[0]] = k.buckets[sec]
		}
		s.seconds = sb
	}
	for _, from := range secs {
		var sum int64
		for sec := from; sec < from+segmentSeconds; sec++ {
			sum += k.buckets[sec]
		}
		s.PeakBytes = max(s.PeakBytes, sum)
	}
	if !k.haveKey || k.unsorted {
		s.MaxKeyInterval = math.Inf(1)
		return
	}
	s.MaxKeyInterval = max(k.maxStep, end-k.lastKey)
}

// FastPath says which of the source's streams the ladder copies instead
// of encoding: the top rung's video, and then the audio rendition.
type FastPath struct {
	Video, Audio bool
	Why          string // when !Video: the first condition not met
	// Kbps is the copied video's average bitrate (kbit/s), when Video:
	// the source's, less its filler data once DecideFastPath has read it.
	Kbps float64
	// EncodedKbps is what the top rung's quality target would spend
	// instead on the whole source (its Kbps over EstimateRate's ratio),
	// when DecideFastPath measured it; 0 when not.
	EncodedKbps float64
	// Overspent: DecideFastPath refused the copy for spending over
	// overspend times EncodedKbps (Kbps and EncodedKbps say how much).
	Overspent bool

	uploadedKbps float64 // the source's video rate, filler data included (Rungs)
	// keptPeak is the copy's most bytes in a segment's whole seconds once
	// DecideFastPath counted filler data it drops; 0: the source's own.
	keptPeak int64
	// overCap is why chooseFastPath found the source over the top rung's
	// cap as uploaded: DecideFastPath copies it only if what the copy
	// keeps is within the cap.
	overCap string
}

// Bandwidth is what a player is to be told the copied top rung needs
// before its segments are measured (BANDWIDTH, bit/s, audio included):
// the copy's most over a segment's length of whole seconds (without the
// filler data it drops, once DecideFastPath counted some), or its average
// if higher, and the audio rendition's rate (the source's when copied and
// known, else the encoder's). ffmpeg's own guess is the streams' rates
// the container gives: none from Matroska and MPEG-TS, filler data
// included from the others. 0 without a copy.
func (f FastPath) Bandwidth(info Info) int64 {
	if !f.Video {
		return 0
	}
	peak := info.Source.PeakBytes
	if f.keptPeak > 0 {
		peak = f.keptPeak
	}
	video := max(f.Kbps*1000, float64(peak)*8/segmentSeconds)
	var audio float64
	if info.HasAudio {
		audio = audioKbps * 1000
		if f.Audio && info.Source.AudioBitRate > 0 {
			audio = float64(info.Source.AudioBitRate)
		}
	}
	return int64(math.Ceil(video + audio))
}

// minFastKbps is the least cap Rungs leaves an encoded rung, and
// minBufShare the least share of its own VBV buffer (BufSize): a keyframe
// must still fit the buffer.
const (
	minFastKbps = 32
	minBufShare = 0.25
)

// Rungs is the ladder as the fast path encodes it: rungs (Ladder's, the
// copied top first) with the caps of every encoded rung (and a fixed
// rung's Bitrate) scaled by the uploaded stream's share of the top rung's
// cap, so each costs less than the copy, in the ladder's own proportions
// (about half the bits per step), and a player that steps down saves
// bits: the lower rungs' own caps are for an encoded top rung at its cap,
// and under them a detailed picture at a lower rung's CRF costs as much as
// a lean copied top (a 240p rung spending 400 kbit/s under a 360p copy of
// 400, or 480p spending 366 under a 720p copy of 313). A cap is never
// below minFastKbps, a VBV buffer never below minBufShare of its own.
// The share is of the source's rate as uploaded, filler data included
// (the copy drops it): a constant-rate source spends the rate it was
// given on its busy seconds and pads the still ones, and the lower rungs
// need their share of it where it moves, not of the copy's average.
// Without the fast path, rungs as they are.
func (f FastPath) Rungs(rungs []Rung) []Rung {
	if !f.Video || len(rungs) < 2 || rungs[0].MaxRate <= 0 {
		return rungs
	}
	share := min(max(f.Kbps, f.uploadedKbps)/float64(rungs[0].MaxRate), 1)
	out := slices.Clone(rungs)
	for k := 1; k < len(out); k++ {
		out[k].MaxRate = max(scaleKbps(out[k].MaxRate, share), minFastKbps)
		out[k].BufSize = scaleKbps(out[k].BufSize, max(share, minBufShare))
		if out[k].Bitrate > 0 {
			out[k].Bitrate = max(scaleKbps(out[k].Bitrate, share), minFastKbps)
		}
	}
	return out
}

// scaleKbps is kbps × share, rounded up, at least 1.
func scaleKbps(kbps int, share float64) int {
	return max(int(math.Ceil(float64(kbps)*share)), 1)
}

// ChooseFastPath decides the fast path for a source of info whose ladder
// tops at top: its video is copied when it is H.264 that every browser
// plays as it is (8-bit yuv420p, progressive, square pixels, a
// Baseline/Main/High profile) of exactly top's size, not rotated, at
// most 60 fps on average and as scanned, with no gap over 0.5 s and not
// far sparser than its nominal rate (sparseRate), its keyframes at
// most 8 s apart from the very first packet, and its bitrate within top's
// cap (on average, and over any 4 s within MaxRate×4 s + BufSize, the
// budget of the encoder's own VBV). Its audio is copied too when it is AAC
// LC, mono or stereo, at 44.1 or 48 kHz.
func ChooseFastPath(info Info, top Rung) FastPath {
	f := chooseFastPath(info, top)
	if f.overCap != "" {
		return FastPath{Why: f.overCap}
	}
	return f
}

// chooseFastPath is ChooseFastPath with a source over top's cap as
// uploaded taken, the reason kept in overCap.
func chooseFastPath(info Info, top Rung) FastPath {
	s := info.Source
	no := func(format string, a ...any) FastPath { return FastPath{Why: fmt.Sprintf(format, a...)} }
	_, sparse := sparseRate(info)
	_, _, capped := highRate(info) // the encoded rungs would be at a lower rate
	switch {
	case info.VideoCodec != "h264":
		return no("codec %q is not h264", info.VideoCodec)
	case s.PixFmt != "yuv420p":
		return no("pixel format %q is not yuv420p", s.PixFmt)
	case !slices.Contains([]string{"Constrained Baseline", "Baseline", "Main", "High"}, s.Profile):
		return no("profile %q", s.Profile)
	case s.FieldOrder != "progressive":
		return no("field order %q is not progressive", s.FieldOrder)
	case s.SAR != "" && s.SAR != "1:1" && s.SAR != "0:1":
		return no("sample aspect ratio %s", s.SAR)
	case info.Rotation != 0:
		return no("rotated %d°", info.Rotation)
	case info.Width != top.Width || info.Height != top.Height:
		return no("%d×%d is not the top rung's %d×%d", info.Width, info.Height, top.Width, top.Height)
	case info.FrameRate <= 0 || info.FrameRate > fastMaxFrameRate || capped || info.MaxGap > fastMaxGap:
		// A variable rate on a grid over 60 (stretches of 120 fps among
		// 30 fps ones) is encoded: its encoded rungs would cut segments
		// elsewhere than the copy.
		return no("frame rate %g, nominal %g (gap %gs)", info.FrameRate, nominalRate(info), info.MaxGap)
	case sparse:
		return no("frames far sparser than the nominal rate %g", nominalRate(info))
	case info.Span <= 0 || info.Frames < 1:
		return no("no frames scanned")
	case math.Abs(float64(info.Frames)/info.Span-info.FrameRate) > fastRateSlack*info.FrameRate:
		// Headers whose rate is not the file's (a Matroska file whose
		// frame duration claims 30 over 60 fps frames, or 60 over 120):
		// the copy's FRAME-RATE and its last segment's length would follow
		// the claim, and so would the level limit below.
		return no("frame rate %g in the headers, %.3g scanned", info.FrameRate, float64(info.Frames)/info.Span)
	case s.Level > maxCopyLevel(top, info.FrameRate):
		// A 1080p stream that says 5.1 or 6.2 (some cameras, ffmpeg's
		// own files of a variable rate) would be skipped by such a player.
		return no("level %s is over %s", levelName(s.Level), levelName(maxCopyLevel(top, info.FrameRate)))
	case !slices.ContainsFunc(h264Levels, func(l h264Level) bool { return l.idc == s.Level }):
		return no("level_idc %d is no H.264 level", s.Level)
	case !s.KeyFirst || s.MaxKeyInterval > fastMaxKeyInterval:
		return no("keyframes up to %gs apart (first packet key: %t)", s.MaxKeyInterval, s.KeyFirst)
	case s.Hidden > 0:
		// A copy would show them: the encoded rungs would not, and the
		// copied rung's segments would start elsewhere.
		return no("an edit list hides %d frames", s.Hidden)
	case s.Lead > fastMaxLead:
		// Encoded as a whole (at a constant rate), the first frame is
		// shown from the start while the audio plays; on the fast path
		// every rung, copied or encoded at vfr, would start with a gap.
		return no("the video starts %.2fs into the file", s.Lead)
	}
	kbit := float64(s.VideoBytes) * 8 / 1000 / info.Span
	f := FastPath{Video: true, Kbps: kbit, uploadedKbps: kbit, overCap: overCap(kbit, s.PeakBytes, top)}
	f.Audio = info.HasAudio && s.AudioCodec == "aac" && s.AudioProfile == "LC" &&
		s.AudioChannels >= 1 && s.AudioChannels <= 2 && (s.AudioRate == 44100 || s.AudioRate == 48000)
	// ffmpeg's HLS muxer leaves out of the master playlist a variant whose
	// streams' bit rates it does not know (copied from a Matroska or an
	// MPEG-TS file, which do not say): the copied rung needs a known rate
	// beside it, the audio's as encoded when the source's is not known.
	if s.BitRate <= 0 && (!f.Audio || s.AudioBitRate <= 0) {
		if !info.HasAudio {
			return no("the container gives no bit rate for the video, and there is no audio to give one")
		}
		f.Audio = false
	}
	return f
}

// maxCopyLevel is the highest level_idc a copy may keep as the rung top
// at fps: fastMaxLevel, or the least level top's size and rate need when
// that is higher.
func maxCopyLevel(top Rung, fps float64) int {
	return max(fastMaxLevel, leastLevel(top.Width, top.Height, fps))
}

// h264Levels are H.264's levels (its Table A-1): level_idc, the most
// macroblocks a second (MaxMBPS) and a frame (MaxFS).
var h264Levels = []h264Level{
	{9, 1485, 99}, {10, 1485, 99}, {11, 3000, 396}, {12, 6000, 396}, {13, 11880, 396}, {20, 11880, 396}, {21, 19800, 792},
	{22, 20250, 1620}, {30, 40500, 1620}, {31, 108000, 3600}, {32, 216000, 5120}, {40, 245760, 8192},
	{41, 245760, 8192}, {42, 522240, 8704}, {50, 589824, 22080}, {51, 983040, 36864}, {52, 2073600, 36864},
	{60, 4177920, 139264}, {61, 8355840, 139264}, {62, 16711680, 139264},
}

// h264Level is one row of h264Levels (level_idc 9 is 1b as Baseline
// writes it).
type h264Level struct{ idc, mbps, fs int }

// leastLevel is the lowest level_idc whose frame size and macroblock rate
// hold a w×h picture at fps (the highest level when none does).
func leastLevel(w, h int, fps float64) int {
	fs := ((w + 15) / 16) * ((h + 15) / 16)
	for _, l := range h264Levels {
		if fs <= l.fs && float64(fs)*fps <= float64(l.mbps) {
			return l.idc
		}
	}
	return h264Levels[len(h264Levels)-1].idc
}

// levelName is an H.264 level_idc as people write it: 42 is "4.2".
func levelName(idc int) string { return fmt.Sprintf("%d.%d", idc/10, idc%10) }

// overCap says why a video stream at kbit on average, with peak bytes in
// its busiest segmentSeconds of whole seconds, is over top's cap: on
// average over its -maxrate, or over maxrate × 4 s + bufsize in those
// seconds (the budget of the encoder's own VBV). "" within it.
func overCap(kbit float64, peak int64, top Rung) string {
	if kbit > float64(top.MaxRate) {
		return fmt.Sprintf("%.0f kbit/s is over the top rung's %d", kbit, top.MaxRate)
	}
	if p := float64(peak) * 8 / 1000; p > float64(top.MaxRate*segmentSeconds+top.BufSize) {
		return fmt.Sprintf("%.0f kbit in %d s is over the top rung's budget", p, segmentSeconds)
	}
	return ""
}

// DecideFastPath is ChooseFastPath, then the two checks that read the
// source, side by side: its keyframes (CheckKeyframes) and what encoding
// the top rung would spend instead (EstimateRate): a copy spending over
// overspend times that on the same pictures is refused (Overspent), and
// so is one either check fails on (the ladder then encodes every rung, as
// for any other source). Both sides count what the copy keeps: Kbps and
// the seconds sampled without the source's filler data (checkIDR).
//
// A source over the top rung's cap as uploaded is taken only if its
// first seconds carry filler data (hasFiller): the keyframe check then
// runs first, and the copy, judged on what it keeps, must be within the
// cap before the estimate runs (a constant-rate recording of a still
// screen spends most of its rate on filler). err is the estimate's or
// the filler check's failure, for the log: the keyframe check's is Why,
// as every other reason a source is not copied.
func DecideFastPath(ctx context.Context, in Input, info Info, top Rung, j Jail) (FastPath, error) {
	f := chooseFastPath(info, top)
	if !f.Video {
		return f, nil
	}
	if f.overCap != "" {
		if filler, err := hasFiller(ctx, in, info, j); err != nil || !filler {
			return FastPath{Why: f.overCap}, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var est Estimate
	var sampled bool
	var estErr error
	estimate := func() { est, sampled, estErr = EstimateRate(ctx, in, info, top, j) }
	var kept keptBytes
	var keyErr error
	if f.overCap == "" {
		done := make(chan struct{})
		go func() {
			defer close(done)
			estimate()
		}()
		kept, keyErr = checkKeyframes(ctx, in, info, j)
		if keyErr != nil {
			cancel() // the estimate decides nothing now
		}
		<-done
	} else if kept, keyErr = checkKeyframes(ctx, in, info, j); keyErr == nil {
		if !f.keep(info, kept) {
			return FastPath{Why: f.overCap}, nil
		}
		if why := overCap(f.Kbps, f.keptPeak, top); why != "" {
			return FastPath{Why: why + " without its filler data"}, nil
		}
		estimate()
	}
	switch {
	case keyErr != nil:
		return FastPath{Why: "keyframes: " + keyErr.Error()}, nil
	case estErr != nil:
		return FastPath{Why: estErr.Error()}, estErr
	}
	// The copy drops the source's filler data: what it keeps is judged, in
	// the seconds sampled as over the whole.
	if f.keep(info, kept) && sampled && est.Source > 0 {
		est.Source = kept.sampled(info, est)
	}
	f.overCap = ""
	if !sampled {
		return f, nil
	}
	ratio := est.Ratio(f.Kbps)
	if ratio <= 0 {
		return f, nil
	}
	f.EncodedKbps = f.Kbps / ratio
	if ratio > overspend {
		return FastPath{Kbps: f.Kbps, EncodedKbps: f.EncodedKbps, Overspent: true,
			Why: fmt.Sprintf("%.0f kbit/s is %.1f times what the top rung's quality target spends on the same pictures (at most %g copied)", f.Kbps, ratio, overspend)}, nil
	}
	return f, nil
}

// keep makes f's rate and peak those of the copy once it drops the filler
// data kept counted, when that is over minFiller of the source's bytes,
// and says whether it was (a second call sets the same).
func (f *FastPath) keep(info Info, kept keptBytes) bool {
	total := info.Source.VideoBytes
	if kept.bytes <= 0 || float64(kept.bytes) >= float64(total)*(1-minFiller) {
		return false
	}
	share := float64(kept.bytes) / float64(total)
	f.Kbps = f.uploadedKbps * share
	f.keptPeak = kept.peak
	if f.keptPeak <= 0 { // no timestamps to count by second
		f.keptPeak = max(int64(math.Ceil(float64(info.Source.PeakBytes)*share)), 1)
	}
	return true
}

// CheckKeyframes decodes only the keyframes of the video stream info
// describes (ffprobe -skip_frame nokey) and fails unless every one is
// info's size, yuv420p and progressive, and unless it decoded as many as
// the packet scan saw flagged (info.Source.Keys). A copied stream is
// served as it is, so what holds for its first frame must hold for all:
// H.264 can change its size, depth or scan only with a new sequence
// parameter set, which takes effect at a keyframe.
//
// Then it checks that every flagged keyframe is an IDR frame, and every
// IDR frame flagged (checkIDR): x264's intra-refresh and open-GOP streams
// flag their recovery points (a frame where a refresh wave starts, or an
// I frame that later B frames reference across) as keyframes, the HLS
// muxer cuts segments there, and such a segment cannot be decoded on its
// own. The decode alone does not tell: the h264 decoder skipping non-key
// frames decodes an open GOP's I frames as it meets them in order.
//
// An error here means no fast path (the ladder then encodes, and checks
// every frame as it decodes).
func CheckKeyframes(ctx context.Context, in Input, info Info, j Jail) error {
	_, err := checkKeyframes(ctx, in, info, j)
	return err
}

// checkKeyframes is CheckKeyframes, and the bytes of the video stream
// once its filler data is dropped (checkIDR): what its copy keeps.
func checkKeyframes(ctx context.Context, in Input, info Info, j Jail) (keptBytes, error) {
	args := append([]string{"-v", "error", "-select_streams", strconv.Itoa(info.VideoStream), "-skip_frame", "nokey",
		"-show_entries", "frame=width,height,pix_fmt,interlaced_frame", "-print_format", "csv=p=0"}, in.capped(info.MaxPixels)...)
	want := fmt.Sprintf("%d,%d,yuv420p,0", info.Width, info.Height)
	var bad string
	keys := 0
	_, err := runProbe(ctx, j, args, func(r io.Reader) error {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := strings.TrimRight(strings.TrimSpace(sc.Text()), ",") // side data adds an empty column
			if line == "" {
				continue
			}
			keys++
			if line != want && bad == "" {
				bad = line
			}
		}
		return sc.Err()
	})
	switch {
	case err != nil:
		return keptBytes{}, err
	case bad != "":
		return keptBytes{}, fmt.Errorf("a keyframe is %q, not %q", bad, want)
	case keys == 0:
		return keptBytes{}, errors.New("no keyframe decoded")
	}
	return checkIDR(ctx, in, info, j)
}

// idrNAL is H.264's nal_unit_type of a slice of an IDR picture.
const idrNAL = 5

// dropFiller is the bitstream filter that drops an H.264 stream's filler
// data (nal_unit_type 12): bytes a constant-bitrate encoder pads its
// stream with to spend the rate it was given (x264's CBR mode, OBS's
// default, fills a still screen's seconds with them). They carry no
// picture: every picture stays as it was.
const dropFiller = "filter_units=remove_types=12"

// fillerProbeSeconds is how much of a source over the top rung's cap
// hasFiller reads.
const fillerProbeSeconds = 8

// hasFiller says whether the first fillerProbeSeconds of the video stream
// carry filler data: over minFiller of their bytes dropped by the copy's
// filter. It copies them twice into ffmpeg's framecrc listing (no
// decode), as they are and as the ladder copies them, and sets their
// bytes side by side. A stream that pads only later seconds is not
// looked at further: over the cap as uploaded, it is encoded.
func hasFiller(ctx context.Context, in Input, info Info, j Jail) (bool, error) {
	args := append([]string{"-v", "error", "-nostdin", "-t", strconv.Itoa(fillerProbeSeconds)}, in.capped(info.MaxPixels)...)
	args = append(args, "-map", videoMap(info), "-map", videoMap(info), "-c", "copy", "-bsf:v:1", dropFiller, "-f", "framecrc", "pipe:1")
	var bytes [2]int64
	_, err := runTool(ctx, j, "ffmpeg", args, func(r io.Reader) error {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p, ok := framecrcPacket(sc.Text())
			if k, err := strconv.Atoi(p.stream); ok && err == nil && (k == 0 || k == 1) {
				bytes[k] += p.size // 0 as uploaded, 1 as copied
			}
		}
		return sc.Err()
	})
	if err != nil {
		return false, err
	}
	return bytes[0] > 0 && float64(bytes[1]) < float64(bytes[0])*(1-minFiller), nil
}

// crcPacket is one packet line of ffmpeg's framecrc listing.
type crcPacket struct {
	stream, pts string // as written: the stream's index, the pts in the stream's time base
	size        int64
	key         bool // no flags written, or the key flag among them
}

// framecrcPacket reads a line of ffmpeg's framecrc listing ("stream, dts,
// pts, duration, size, crc[, F=0x.., ...]"); false for a header line
// ("#...") or one too short.
func framecrcPacket(line string) (crcPacket, bool) {
	if strings.HasPrefix(line, "#") {
		return crcPacket{}, false
	}
	f := strings.Split(line, ",")
	if len(f) < 6 {
		return crcPacket{}, false
	}
	size, _ := strconv.ParseInt(strings.TrimSpace(f[4]), 10, 64)
	p := crcPacket{stream: strings.TrimSpace(f[0]), pts: strings.TrimSpace(f[2]), size: max(size, 0), key: true}
	for _, extra := range f[6:] {
		if flags, ok := strings.CutPrefix(strings.TrimSpace(extra), "F=0x"); ok {
			v, _ := strconv.ParseUint(flags, 16, 32)
			p.key = v&1 != 0
		}
	}
	return p, true
}

// keptBytes are the bytes of a video stream its copy keeps (its filler
// data dropped): in all, at most in a segment's whole seconds, and by
// whole second of presentation time as the packet scan counts the
// source's (nil without timestamps).
type keptBytes struct {
	bytes, peak int64
	seconds     *secondBytes
}

// minFiller is the share of a stream's bytes its copy must drop for the
// drop to count: filter_units rewrites NAL units (trailing zero bytes
// go), which moves a stream without filler data by up to about 1 %.
const minFiller = 0.02

// sampled is what the copy keeps of the seconds est sampled, counted
// from the scan's first second, never more than the source spends on
// them (est.Source); without seconds to count by, est.Source less the
// filler's share of the whole.
func (k keptBytes) sampled(info Info, est Estimate) int64 {
	origin, ok := info.Source.seconds.start()
	from, kok := k.seconds.start()
	if ok && kok {
		var n int64
		for _, s := range est.samples {
			b, in := k.seconds.bytesIn(int(origin-from)+s.at, s.length)
			if !in {
				ok = false
				break
			}
			n += b
		}
		if ok {
			return min(n, est.Source)
		}
	}
	return int64(math.Round(float64(est.Source) * float64(k.bytes) / float64(max(info.Source.VideoBytes, 1))))
}

// maxKeyLag bounds how many keyframes checkIDR holds while the two copies
// of the stream it compares run apart (they are muxed side by side).
const maxKeyLag = 1024

// checkIDR copies the video stream twice into ffmpeg's framecrc listing
// (no decode: a demux and bitstream filters): once as the ladder copies
// it (its filler data dropped), where a packet not flagged key is marked
// "F=0x0", and once through filter_units keeping only IDR slices, which
// drops every packet without one. The keyframes of the first must be
// exactly the packets of the second, at the same timestamps. It returns
// the first copy's bytes: what the ladder's copy keeps. The timestamps
// are the file's own (-copyts, none shifted), as the packet scan's.
func checkIDR(ctx context.Context, in Input, info Info, j Jail) (keptBytes, error) {
	args := append([]string{"-v", "error", "-nostdin", "-copyts"}, in.capped(info.MaxPixels)...)
	args = append(args, "-map", videoMap(info), "-map", videoMap(info), "-c", "copy",
		"-bsf:v:0", "filter_units=pass_types="+strconv.Itoa(idrNAL), "-bsf:v:1", dropFiller,
		"-avoid_negative_ts", "disabled", "-f", "framecrc", "pipe:1")
	var idr, key []string // timestamps (pts) seen in one copy and not yet in the other
	flagged := 0
	var kept keyScan
	var tb float64 // seconds per tick of the copy's timestamps ("#tb 1: num/den")
	var bad error
	_, err := runTool(ctx, j, "ffmpeg", args, func(r io.Reader) error {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "#tb 1:"); ok {
				num, den, _ := strings.Cut(strings.TrimSpace(v), "/")
				n, _ := strconv.ParseFloat(num, 64)
				d, _ := strconv.ParseFloat(den, 64)
				if n > 0 && d > 0 {
					tb = n / d
				}
			}
			p, ok := framecrcPacket(line)
			if !ok || bad != nil {
				continue
			}
			switch p.stream {
			case "0":
				idr = append(idr, p.pts)
			case "1":
				// framecrc writes a packet without a timestamp as the least int64.
				ticks, err := strconv.ParseInt(p.pts, 10, 64)
				timed := tb > 0 && err == nil && ticks != math.MinInt64
				kept.add(float64(ticks)*tb, timed, p.size, false)
				if p.key {
					flagged++
					key = append(key, p.pts)
				}
			}
			for len(idr) > 0 && len(key) > 0 {
				if idr[0] != key[0] {
					bad = fmt.Errorf("the keyframe at pts %s is not the IDR frame at pts %s (intra refresh or open GOP)", key[0], idr[0])
					break
				}
				idr, key = idr[1:], key[1:]
			}
			if len(idr) > maxKeyLag || len(key) > maxKeyLag {
				bad = fmt.Errorf("more than %d keyframes (%d) or IDR frames (%d) without their match (intra refresh or open GOP)", maxKeyLag, len(key), len(idr))
			}
		}
		return sc.Err()
	})
	switch {
	case err != nil:
		return keptBytes{}, err
	case bad != nil:
		return keptBytes{}, bad
	case len(key) > 0:
		return keptBytes{}, fmt.Errorf("%d of %d keyframes are not IDR frames (intra refresh or open GOP), the first at pts %s", len(key), flagged, key[0])
	case len(idr) > 0:
		return keptBytes{}, fmt.Errorf("%d IDR frames are not flagged keyframes, the first at pts %s", len(idr), idr[0])
	case flagged != info.Source.Keys:
		return keptBytes{}, fmt.Errorf("%d keyframes copied, %d scanned", flagged, info.Source.Keys)
	}
	var counted Source
	kept.fill(&counted, 0)
	return keptBytes{bytes: counted.VideoBytes, peak: counted.PeakBytes, seconds: counted.seconds}, nil
}
