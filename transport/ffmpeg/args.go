package ffmpeg

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
)

// Output settings shared by the builders.
const (
	segmentSeconds  = 4 // HLS segment length; keyframes are forced on its multiples
	audioKbps       = 128
	thumbMaxLong    = 720 // thumbnail: longest side at most
	thumbAtFraction = 0.1 // thumbnail taken at this fraction of the duration
	animSeconds     = 3   // animated preview: this long,
	animFPS         = 8   // at this rate,
	animMaxLong     = 320 // its longest side at most this,
	animQuality     = 50  // libwebp's quality (0-100)
	previewSeconds  = 6
	previewMaxShort = 480 // preview: shortest side at most
	previewCRF      = 23
	previewMaxKbps  = 1200
	previewBufKbits = 2400
	masterPlaylist  = "master.m3u8"
	variantPlaylist = "index.m3u8"
	segmentPattern  = "seg_%05d.m4s"
	initSegment     = "init.mp4" // ffmpeg names it init_<n>.mp4 when it writes several renditions
	evenSizeFilter  = "scale=trunc(iw/2)*2:trunc(ih/2)*2"
	// A file whose frames are far sparser than its nominal rate (a few
	// frames minutes apart) is encoded at the rate of the frames it holds,
	// at least minCappedRate, not at the nominal rate ffmpeg would fill the
	// gaps at: sparserFactor is how much sparser counts as "far".
	minCappedRate = 1
	sparserFactor = 4
	// maxOutputRate is the highest frame rate the ladder encodes at, as
	// most hosts play (PeerTube's default, YouTube's): H.264 at 1080p over
	// 64 fps needs level 5.1, over the 4.2 Apple's HLS authoring
	// specification allows, and at the same CRF 120 fps costs 1.36 times
	// the bits of 60 fps on a moving test picture. A faster source keeps
	// every second (third...) frame of its grid while that leaves at least
	// minEvenRate; else frames are dropped unevenly to hold maxOutputRate.
	maxOutputRate = 60
	minEvenRate   = 48
)

// start is the beginning of every command: quiet, progress on stdout.
func start() []string {
	return []string{"-y", "-nostdin", "-hide_banner", "-loglevel", "error", "-progress", "pipe:1", "-stats_period", "1"}
}

// x264 is the video encoder settings shared by HLS and preview.
func x264() []string {
	return []string{"-c:v", "libx264", "-preset", "veryfast", "-profile:v", "high", "-pix_fmt", "yuv420p"}
}

func aac() []string {
	return []string{"-c:a", "aac", "-ac", "2", "-b:a", kbps(audioKbps)}
}

func kbps(n int) string { return strconv.Itoa(n) + "k" }

// AudioRendition names the HLS audio rendition shared by every rung (its
// playlist is <outDir>/audio/index.m3u8).
const AudioRendition = "audio"

// HLSArgs builds the arguments (without the leading "ffmpeg") of one ffmpeg
// process that decodes input once and writes every rung as HLS under outDir:
// <outDir>/master.m3u8 and <outDir>/<rung name>/index.m3u8 with 4 s fMP4
// segments and their initialization segment beside it. ffmpeg autorotates, so rungs are in displayed
// dimensions (as Ladder makes them). An empty rungs means Ladder(info).
// outDir must not contain '%', which the HLS muxer would expand.
//
// The output stops one second past info.Length(): a file whose audio or
// claim runs on past its video costs no more than its video.
func HLSArgs(in Input, outDir string, info Info, rungs []Rung) []string {
	return LadderArgs(in, outDir, info, rungs, Extras{})
}

// LadderArgs is HLSArgs with the extras x (extras.go): the fast path, and
// the lane of a ladder split in two processes (lanes.go).
func LadderArgs(in Input, outDir string, info Info, rungs []Rung, x Extras) []string {
	if len(rungs) == 0 {
		rungs = Ladder(info)
	}
	// Each rung is scaled from the nearest rung above it in this process,
	// or the source, whose short side is a whole multiple of its own
	// (360p from 720p, 240p from 480p), else from the one just above
	// (scaleParents); one audio rendition is shared by every rung. On 2
	// cores a 10 s 1080p five-rung ladder took 7.7 s with every rung
	// scaled from the source and its own AAC copy, 5.3 s with each rung
	// scaled from the one above and one audio rendition.
	//
	// The input is the very stream Probe checked, never "[0:v]" (the first
	// video stream, which may be a cover picture of any size), and every
	// rung is scaled to its own size whatever size the decoder delivers.
	// The rate cap, when there is one, comes first, once.
	first := x.firstEncoded()
	parents := scaleParents(rungs, first, min(info.Width, info.Height))
	children := make([]int, len(rungs)+1) // by parent, the source last
	for k := first; k < len(rungs); k++ {
		children[parentSlot(parents[k], len(rungs))]++
	}
	var graph []string
	source := videoIn(info)
	var pre string
	var preArgs []string // the output rate the cap encodes at
	if first == 0 {
		pre, preArgs = rateCap(info)
	}
	switch n := children[len(rungs)]; {
	case n > 1:
		chain := fmt.Sprintf("split=%d", n)
		if pre != "" {
			chain = pre + "," + chain
		}
		outs := ""
		for k := first; k < len(rungs); k++ {
			if parents[k] < 0 {
				outs += fmt.Sprintf("[s%d]", k)
			}
		}
		graph = append(graph, source+chain+outs)
	case pre != "":
		source += pre + ","
	}
	for k := first; k < len(rungs); k++ {
		r := rungs[k]
		var from string
		switch p := parents[k]; {
		case p >= 0:
			from = fmt.Sprintf("[c%d_%d]", p, k)
		case children[len(rungs)] > 1:
			from = fmt.Sprintf("[s%d]", k)
		default:
			from = source
		}
		filter := scaleFilter(r.Width, r.Height)
		if children[k] == 0 {
			graph = append(graph, fmt.Sprintf("%s%s[v%d]", from, filter, k))
			continue
		}
		outs := fmt.Sprintf("[v%d]", k)
		for j := k + 1; j < len(rungs); j++ {
			if parents[j] == k {
				outs += fmt.Sprintf("[c%d_%d]", k, j)
			}
		}
		graph = append(graph, fmt.Sprintf("%s%s,split=%d%s", from, filter, children[k]+1, outs))
	}

	args := append(start(), in.capped(info.MaxPixels)...)
	if l := info.Length(); l > 0 {
		args = append(args, "-t", seconds(l+1))
	}
	if len(graph) > 0 {
		args = append(args, "-filter_complex", strings.Join(graph, ";"))
	}
	for k := range rungs {
		if k < first {
			args = append(args, "-map", videoMap(info))
		} else {
			args = append(args, "-map", fmt.Sprintf("[v%d]", k))
		}
	}
	args = append(args, audioMap(info)...)
	args = append(args, preArgs...)
	args = append(args, x.videoCodecs(len(rungs))...)
	for k, r := range rungs[first:] {
		args = append(args, rateArgs(k+first, r)...)
	}
	var streams []string
	if info.HasAudio {
		args = append(args, x.audioCodec()...)
		streams = append(streams, "a:0,agroup:audio,default:yes,name:"+x.audioName())
	}
	for k, r := range rungs {
		if info.HasAudio {
			streams = append(streams, fmt.Sprintf("v:%d,agroup:audio,name:%s", k, r.Name))
		} else {
			streams = append(streams, fmt.Sprintf("v:%d,name:%s", k, r.Name))
		}
	}
	args = append(args,
		"-force_key_frames", x.keyFrames(), "-sc_threshold", "0",
		"-f", "hls",
		"-hls_time", strconv.Itoa(segmentSeconds),
		// EVENT playlists, segments and playlists written under a
		// temporary name and renamed when complete: the transcoder
		// publishes them while ffmpeg runs (progressive playback) and
		// turns them into VOD playlists at the end.
		"-hls_playlist_type", "event",
		"-hls_flags", "independent_segments+temp_file",
		// fMP4 (CMAF) segments: MPEG-TS spends a 188-byte packet, mostly
		// padding, on every small frame (a quarter of a screen recording's
		// bytes at 1080p).
		"-hls_segment_type", "fmp4",
		"-hls_fmp4_init_filename", initSegment,
		"-master_pl_name", x.masterName(),
		"-var_stream_map", strings.Join(streams, " "),
		"-hls_segment_filename", filepath.Join(outDir, "%v", segmentPattern),
		filepath.Join(outDir, "%v", variantPlaylist),
	)
	return args
}

// scaleParents is, for each rung from first on, the index of the rung it
// is scaled from, or -1: the source, whose short side is srcShort. A rung
// is scaled from the lowest encoded rung above it whose short side is a
// whole multiple of its own, else from the source if its short side is
// one, else from the rung just above (the first encoded one from the
// source). Two resamplings in a row blur more than one, least when the
// first is a whole ratio: against 240p scaled from the source, the
// cascade through 480p and 360p measured SSIM 0.9984 on a detailed
// picture where 480p to 240p measured 0.9988, and 360p made from 480p (a
// 4:3 step) 0.9982 on a test card where 720p to 360p gave 0.9996. 480p
// of a 1080p source stays made from 720p (3:2, 0.9987 on the detailed
// picture): from the source it cost 5 % more of the ladder's CPU
// (docs/performance.md).
func scaleParents(rungs []Rung, first, srcShort int) []int {
	parents := make([]int, len(rungs))
	for k := range rungs {
		parents[k] = -1
		short := min(rungs[k].Width, rungs[k].Height)
		if k <= first || short <= 0 {
			continue
		}
		parents[k] = k - 1
		if srcShort%short == 0 {
			parents[k] = -1
		}
		for j := k - 1; j >= first; j-- {
			if min(rungs[j].Width, rungs[j].Height)%short == 0 {
				parents[k] = j
				break
			}
		}
	}
	return parents
}

// parentSlot is where LadderArgs counts the children of parent p among n
// rungs: its own index, or n for the source.
func parentSlot(p, n int) int {
	if p < 0 {
		return n
	}
	return p
}

// rateArgs are the encoder's settings of rung r as output video stream k:
// its quality target (or fixed bitrate), cap, VBV buffer and reference
// frames.
func rateArgs(k int, r Rung) []string {
	var args []string
	if r.CRF > 0 {
		args = append(args, fmt.Sprintf("-crf:v:%d", k), strconv.Itoa(r.CRF))
	} else {
		args = append(args, fmt.Sprintf("-b:v:%d", k), kbps(r.Bitrate))
	}
	args = append(args,
		fmt.Sprintf("-maxrate:v:%d", k), kbps(r.MaxRate),
		fmt.Sprintf("-bufsize:v:%d", k), kbps(r.BufSize),
	)
	if r.Refs > 0 {
		args = append(args, fmt.Sprintf("-refs:v:%d", k), strconv.Itoa(r.Refs))
	}
	return args
}

// ThumbnailAt is the moment (seconds) a thumbnail is taken at: asked,
// when one was, kept inside the video (from its first picture to 0.1 s
// before its end); else 10% into the video (its first picture for clips
// under 1 s).
func ThumbnailAt(info Info, asked *float64) float64 {
	l, first := info.Length(), pictureStart(info)
	if asked != nil {
		return max(first, min(*asked, l-0.1))
	}
	if l >= 1 {
		return first + (l-first)*thumbAtFraction
	}
	return first
}

// pictureStart is where the video's first picture comes in the output
// when that is a second or more in (a file whose audio starts first), 0
// otherwise. Before it the output holds that picture and a seek finds
// none (in Matroska, nothing at all): the stills seek no earlier. A
// shorter lead, such as the few milliseconds of an AAC track's priming,
// is left to ffmpeg: a seek to 0 finds the first picture, where a seek of
// a few milliseconds into an FLV without an index lands on its second
// keyframe.
func pictureStart(info Info) float64 {
	if lead := min(info.Source.Lead, info.Length()); lead >= 1 {
		return lead
	}
	return 0
}

// ThumbnailArgs builds the arguments of a JPEG thumbnail written to out:
// the frame at ThumbnailAt(info, nil).
func ThumbnailArgs(in Input, out string, info Info) []string {
	return ThumbnailArgsAt(in, out, info, ThumbnailAt(info, nil))
}

// ThumbnailArgsAt builds the arguments of a JPEG thumbnail written to
// out: the frame at at seconds, at most 720 on the long side, keeping the
// aspect, even. With a seek past the end ffmpeg exits 0 and writes
// nothing: the caller checks that out exists.
func ThumbnailArgsAt(in Input, out string, info Info, at float64) []string {
	args := append(start(), "-ss", seconds(at))
	args = append(args, in.capped(info.MaxPixels)...)
	return append(args, thumbnailOutput(0, info, out)...)
}

// thumbnailOutput is the thumbnail's output options, of input k.
func thumbnailOutput(k int, info Info, out string) []string {
	w, h := fit(info.Width, info.Height, max(info.Width, info.Height), thumbMaxLong)
	return []string{
		"-map", videoMapOf(k, info),
		"-frames:v", "1",
		"-vf", scaleFilter(w, h),
		"-q:v", "3",
		"-update", "1",
		out,
	}
}

// AnimatedArgs builds the arguments of an animated WebP written to out,
// for hover previews in lists: 3 s from at (earlier when the video ends
// sooner), 8 frames a second, at most 320 on the long side (even, never
// upscaled), looping, without audio. A few tens of kilobytes.
func AnimatedArgs(in Input, out string, info Info, at float64) []string {
	args := append(start(), "-ss", seconds(animatedFrom(info, at)))
	args = append(args, in.capped(info.MaxPixels)...)
	return append(args, animatedOutput(0, info, out)...)
}

// animatedFrom is where the animated preview of a thumbnail at at starts.
func animatedFrom(info Info, at float64) float64 {
	return max(pictureStart(info), min(at, info.Length()-animSeconds))
}

// animatedOutput is the animated preview's output options, of input k.
func animatedOutput(k int, info Info, out string) []string {
	w, h := fit(info.Width, info.Height, max(info.Width, info.Height), animMaxLong)
	return []string{
		"-t", strconv.Itoa(animSeconds),
		"-map", videoMapOf(k, info),
		"-vf", "fps=" + strconv.Itoa(animFPS) + "," + scaleFilter(w, h),
		"-c:v", "libwebp_anim",
		"-quality", strconv.Itoa(animQuality),
		"-loop", "0",
		"-an",
		out,
	}
}

// PreviewArgs builds the arguments of an MP4 preview written to out: the
// first 6 s from the video's first picture, at most 480 on the short side
// (never upscaled, even), H.264 with a capped bitrate, AAC stereo when the
// source has audio, and the moov atom first so it plays while downloading.
// Progress is reported against min(Duration, 6).
func PreviewArgs(in Input, out string, info Info) []string {
	args := append(start(), in.capped(info.MaxPixels)...)
	return append(args, previewOutput(0, info, out)...)
}

// previewOutput is the preview's output options, of input k.
func previewOutput(k int, info Info, out string) []string {
	w, h := fit(info.Width, info.Height, min(info.Width, info.Height), previewMaxShort)
	var args []string
	if first := pictureStart(info); first > 0 {
		// A file whose audio starts first would preview a still. The
		// output's seek reads the lead and drops it: there is no picture
		// in it to decode, and no container's seek to trust.
		args = append(args, "-ss", seconds(first))
	}
	args = append(args, "-t", strconv.Itoa(previewSeconds), "-map", videoMapOf(k, info))
	if info.HasAudio {
		args = append(args, "-map", fmt.Sprintf("%d:%d", k, info.AudioStream))
	}
	vf := scaleFilter(w, h)
	if f, rate := rateCap(info); f != "" { // the ladder's, not the gaps' repeats
		vf = f + "," + vf
		args = append(args, rate...)
	}
	args = append(args, "-vf", vf)
	args = append(args, x264()...)
	args = append(args,
		"-crf", strconv.Itoa(previewCRF),
		"-maxrate", kbps(previewMaxKbps),
		"-bufsize", kbps(previewBufKbits),
	)
	if info.HasAudio {
		args = append(args, aac()...)
	} else {
		args = append(args, "-an")
	}
	return append(args, "-movflags", "+faststart", out)
}

// StillsArgs builds one pass that writes what ThumbnailArgsAt (at at),
// PreviewArgs and AnimatedArgs (from at) write, to thumb, preview and
// animated, and, when sb plans tiles, what StoryboardArgs writes under
// tileDir: the source is opened once for each output, at its start, and
// each output reads its own opening. (The storyboard sharing the preview's
// opening would save decoding the first 6 s twice, but ffmpeg 5.1 goes on
// filtering frames for an output past its -t and drops them: scaling the
// whole of a 60 s 720p source for a preview of 6 s cost more than the
// decode saved.) One ffmpeg starts instead of four; for a short video its
// start (loading a few hundred libraries) is most of each pass's cost. The
// outputs end on their own: the thumbnail after one frame, the preview and
// the animation after their seconds, the storyboard at its last tile or
// the video's end.
func StillsArgs(in Input, info Info, at float64, thumb, preview, animated string, sb Storyboard, tileDir string) []string {
	args := append(start(), "-ss", seconds(at))
	args = append(args, in.capped(info.MaxPixels)...)
	args = append(args, "-ss", seconds(animatedFrom(info, at)))
	args = append(args, in.capped(info.MaxPixels)...)
	args = append(args, in.capped(info.MaxPixels)...)
	if sb.Count > 0 {
		args = append(args, in.capped(info.MaxPixels)...)
	}
	args = append(args, thumbnailOutput(0, info, thumb)...)
	args = append(args, animatedOutput(1, info, animated)...)
	args = append(args, previewOutput(2, info, preview)...)
	if sb.Count > 0 {
		args = append(args, storyboardOutput(3, info, sb, tileDir)...)
	}
	return args
}

// fit scales w×h so that side (one of w, h) is at most limit, keeping the
// aspect and making both even. It never upscales.
func fit(w, h, side, limit int) (int, int) {
	if w <= 0 || h <= 0 || side <= limit {
		return w &^ 1, h &^ 1
	}
	f := float64(limit) / float64(side)
	return even(float64(w) * f), even(float64(h) * f)
}

// scaleFilter scales the displayed picture to exactly w×h, even when that
// is the size Probe saw: a stream may change size after its first frame,
// and no output frame may be larger than its rendition. Its pixels are
// square (setsar=1): w×h rounds the source's aspect to even sides, and
// scale alone would keep the aspect exact with pixels a hair off square
// (1280:1281 at 854×480 from 1920×1080), shown at 853.3×480 by players
// that honour it, where the master playlist says 854×480. Only an unknown
// size (which Probe never returns) falls back to making it even.
func scaleFilter(w, h int) string {
	if w <= 0 || h <= 0 {
		return evenSizeFilter
	}
	return fmt.Sprintf("scale=%d:%d,setsar=1", w, h)
}

// videoIn is the filtergraph label of the video stream Probe checked.
func videoIn(info Info) string { return fmt.Sprintf("[0:%d]", info.VideoStream) }

// videoMap is the -map of the video stream Probe checked.
func videoMap(info Info) string { return videoMapOf(0, info) }

// videoMapOf is the -map of that stream in input k.
func videoMapOf(k int, info Info) string { return fmt.Sprintf("%d:%d", k, info.VideoStream) }

// audioMap maps the audio stream Probe saw, if any.
func audioMap(info Info) []string {
	if !info.HasAudio {
		return nil
	}
	return []string{"-map", fmt.Sprintf("0:%d", info.AudioStream)}
}

// rateCap is the filter that holds the output to the rate of the frames
// the file really holds (sparseCap), or to at most maxOutputRate
// (highRate): a select that keeps a frame when it comes no earlier than a
// quarter of the output's frame time before the next slot; a kept frame
// takes the last slot it is not that early for, and the next slot is one
// frame time after it (the first slot is the first frame's time), so 61
// fps loses one frame a second, not one whenever a frame runs early; no
// more than half a frame of the grid early, so 240 fps keeps every
// fourth. Kept frames keep their own times, and the output's constant
// rate (-r, the options rateCap returns with the filter) puts them on its
// ticks as ffmpeg puts any file: a late start is filled with the first
// frame, so audio stays in sync. An fps filter on the file's own times kept 120 fps frames 1, 2 and
// 3 apart by turns where Matroska, WebM and FLV (whole milliseconds) put
// every second frame near the midpoint between two 60 fps ticks (8, 25,
// 42 ms...); counting from the first frame and snapping to the grid
// instead moved the picture against the sound wherever the first frame
// shown is not the first packet (a file cut mid-GOP, an edit list). ""
// when no cap is needed.
func rateCap(info Info) (filter string, outputArgs []string) {
	if f := sparseCap(info); f != "" {
		return f, nil
	}
	out, grid, ok := highRate(info)
	if !ok {
		return "", nil
	}
	p := "(" + frameRate{out.den, out.num}.String() + ")" // a frame's time
	// How early a frame may come: a quarter of a frame time, or half the
	// grid's when that is less (240 fps to 60: a quarter is a whole
	// frame of the grid, and whole milliseconds put every fourth frame
	// on either side of the line).
	e := frameRate{out.den, out.num * 4}
	if half := (frameRate{grid.den, grid.num * 2}); half.float() < e.float() {
		e = half
	}
	early := "(" + e.reduced().String() + ")"
	return "select='if(eq(n,0)+isnan(ld(0)),st(0,t+" + p + "),if(gte(t-ld(0),-" + early + "),st(0,ld(0)+" +
		p + "*(1+floor((t-ld(0)+" + early + ")/" + p + "))),0))'", []string{"-r", out.String()}
}

// sparseCap is the fps filter that holds the output to the rate of the
// frames the file really holds (sparseRate), when that is far below the
// nominal rate: ffmpeg would otherwise repeat each frame to fill the
// gaps, 61 frames over 59 minutes becoming 106 000 frames per rendition.
// "" when no cap is needed.
func sparseCap(info Info) string {
	if rate, ok := sparseRate(info); ok {
		return "fps=" + strconv.FormatFloat(rate, 'f', -1, 64)
	}
	return ""
}

// nominalRate is the rate the headers give: ffmpeg's guess or the probed
// average, whichever is higher.
func nominalRate(info Info) float64 { return max(info.FrameRate, info.EncodeRate) }

// sparseRate is the rate a far sparser file is encoded at (its frames
// over its span, at least minCappedRate), and whether it is one.
func sparseRate(info Info) (float64, bool) {
	nominal := nominalRate(info)
	if info.Frames < 2 || info.Span <= 0 || nominal <= 0 {
		return 0, false
	}
	rate := max(math.Ceil(float64(info.Frames)/info.Span), minCappedRate)
	return rate, rate*sparserFactor <= nominal
}

// highRate is the rate a source whose nominal rate is over maxOutputRate
// is encoded at: its grid (the rate ffmpeg would encode it at) divided by
// the smallest whole number that brings it to maxOutputRate or below (120
// and 119.88 to 60 and 59.94, 100 to 50, 144 to 48), each kept frame as
// far from the next; maxOutputRate when that would go below minEvenRate
// (90 would give 45: held at 60, two frames kept in three).
func highRate(info Info) (out, grid frameRate, ok bool) {
	if nominalRate(info) <= maxOutputRate+0.5 {
		return out, grid, false
	}
	g := info.EncodeRate
	if g <= 0 {
		g = nominalRate(info)
	}
	grid = exactRate(g)
	if info.Frames >= 2 && info.Span > 0 && info.MaxGap > 0 && info.MaxGap < 1.5/g {
		// ffmpeg takes an FLV file's 119.88 fps for 120: encoded at 60,
		// every 500th frame would be repeated or skipped. A 120 fps file
		// missing one frame in a thousand has as many frames a second,
		// but a gap of two frames, and stays on 120.
		held := float64(info.Frames) / info.Span
		if ntsc := (frameRate{grid.num * 1000, 1001}); grid.den == 1 && math.Abs(held/ntsc.float()-1) < 0.0005 {
			grid = ntsc
		}
	}
	// The smallest n that brings the grid to 60 or below, within 0.1 %.
	n := math.Ceil(g/maxOutputRate - 0.001)
	out = frameRate{grid.num, grid.den * int64(n)}.reduced()
	if out.float() < minEvenRate*0.998 { // 143.86 fps gives 47.95: kept
		out = frameRate{maxOutputRate, 1}
	}
	return out, grid, true
}

// OutputRate is the highest frame rate of the ladder's video: the rate
// rateCap encodes a far sparser or faster file at, else the constant rate
// ffmpeg encodes at (its guess from the headers: it drops or repeats
// frames to keep it) or the probed average, whichever is higher (a copied
// top rung keeps the source's own, steady on the fast path). 0: unknown.
func OutputRate(info Info) float64 {
	if rate, ok := sparseRate(info); ok {
		return rate
	}
	if out, _, ok := highRate(info); ok {
		return out.float()
	}
	return max(info.EncodeRate, info.FrameRate)
}

// frameRate is a rate as ffmpeg takes it, num/den frames a second.
type frameRate struct{ num, den int64 }

// exactRate is the rational a probed rate (three decimals) stands for:
// whole, NTSC's n×1000/1001 (23.976, 29.97, 59.94, 119.88), else
// thousandths. A grid off by 0.1 % would move frames by half a tick every
// 500 of them.
func exactRate(f float64) frameRate {
	if n := math.Round(f); n >= 1 && math.Abs(f-n) < 0.0005 {
		return frameRate{int64(n), 1}
	}
	if n := math.Round(f * 1.001); n >= 1 && math.Abs(f*1.001-n) < 0.002 {
		return frameRate{int64(n) * 1000, 1001}.reduced()
	}
	return frameRate{int64(math.Round(f * 1000)), 1000}.reduced()
}

func (r frameRate) reduced() frameRate {
	a, b := r.num, r.den
	for b != 0 {
		a, b = b, a%b
	}
	if a <= 1 {
		return r
	}
	return frameRate{r.num / a, r.den / a}
}

func (r frameRate) float() float64 { return float64(r.num) / float64(r.den) }

func (r frameRate) String() string {
	if r.den == 1 {
		return strconv.FormatInt(r.num, 10)
	}
	return strconv.FormatInt(r.num, 10) + "/" + strconv.FormatInt(r.den, 10)
}

// seconds formats a time offset for -ss with millisecond precision.
func seconds(s float64) string {
	return strconv.FormatFloat(math.Round(s*1000)/1000, 'f', -1, 64)
}
