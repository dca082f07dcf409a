package transcoder

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image/jpeg"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/media"
)

// plan is what an attempt makes besides the plain ladder: the ladder
// pass's extras (the fast path) and the storyboard, whose tiles come from
// the stills' pass (stills) or, when that one fails, their own
// (storyboardPass).
type plan struct {
	ffmpeg.Extras
	storyboard ffmpeg.Storyboard
}

// extras plans what an attempt makes besides the ladder: the storyboard
// sprite, at the lowest rung's aspect, and the fast path (whose
// candidate's keyframes are decoded first: every one must be what the
// copied rung promises, an IDR frame of its size; and whose bitrate must
// not be far over what encoding the rung would spend).
func extras(ctx context.Context, log *slog.Logger, in ffmpeg.Input, info ffmpeg.Info, rungs []ffmpeg.Rung, jail ffmpeg.Jail) plan {
	if len(rungs) == 0 {
		return plan{}
	}
	low := rungs[len(rungs)-1]
	fast, err := ffmpeg.DecideFastPath(ctx, in, info, rungs[0], jail)
	x := plan{Extras: ffmpeg.Extras{Fast: fast}, storyboard: ffmpeg.PlanStoryboard(info, low.Width, low.Height)}
	switch {
	case err != nil && ctx.Err() == nil:
		log.Warn("no fast path: a check of the source failed", "err", err)
	case x.Fast.Video:
		log.Info("fast path: the top rung copies the source's video", "rung", rungs[0].Name, "audio_copied", x.Fast.Audio,
			"kbps", math.Round(x.Fast.Kbps), "encoded_kbps_estimate", math.Round(x.Fast.EncodedKbps))
	case x.Fast.Overspent:
		log.Info("no fast path: the source spends far more than encoding the top rung would", "rung", rungs[0].Name,
			"kbps", math.Round(x.Fast.Kbps), "encoded_kbps_estimate", math.Round(x.Fast.EncodedKbps))
	default:
		log.Debug("no fast path", "why", x.Fast.Why)
	}
	return x
}

// storyboardPass makes the storyboard's sprite in the work directory: its
// tiles by their own ffmpeg pass from the source (when the stills' pass did
// not make them: see stills), then laid out. A failure leaves the
// storyboard out (finishOutputs finds no sprite), logged; only a cancelled
// ctx is returned.
func storyboardPass(ctx context.Context, log *slog.Logger, in ffmpeg.Input, work string, info ffmpeg.Info, x plan, opts ffmpeg.RunOptions) error {
	if x.storyboard.Count <= 0 {
		return nil
	}
	opts.OnProgress = nil
	opts.OutputDir = filepath.Join(work, ffmpeg.TileFile(0)) // its own output: lines count until the first tile
	err := ffmpeg.Run(ctx, ffmpeg.StoryboardArgs(in, ".", info, x.storyboard), opts)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	assembleStoryboard(log, work, x.storyboard, err)
	return nil
}

// assembleStoryboard lays out the tiles an ffmpeg pass wrote in work into
// the sprite, unless the pass failed (err); either way the tiles go. A
// failure leaves the storyboard out, logged.
func assembleStoryboard(log *slog.Logger, work string, sb ffmpeg.Storyboard, err error) {
	if err == nil {
		err = sb.Assemble(work, filepath.Join(work, media.StoryboardImageName))
	}
	if err != nil {
		log.Warn("storyboard left out", "err", err)
		for k := range sb.Count {
			drop(work, ffmpeg.TileFile(k))
		}
		drop(work, media.StoryboardImageName)
	}
}

// made says which optional outputs an attempt published.
type made struct{ storyboard, download bool }

// finishOutputs makes the outputs that follow the ladder's pass in the
// work directory: the storyboard's WebVTT track (written here, from the
// plan, not from anything ffmpeg printed, beside the sprite storyboardPass
// made) and, when asked, the download
// rendition (a remux of the highest rung up to 1080p and the audio, no
// encode). Each is checked; one that fails is left out (logged), not the
// video's failure: the ladder is what makes a video playable. Only a
// cancelled ctx is returned.
func finishOutputs(ctx context.Context, log *slog.Logger, work string, info ffmpeg.Info, rungs []ffmpeg.Rung,
	x plan, download bool, opts ffmpeg.RunOptions) (made, error) {
	var m made
	if x.storyboard.Count > 0 {
		vtt := filepath.Join(work, media.StoryboardVTTName)
		err := os.WriteFile(vtt, x.storyboard.VTT(media.StoryboardImageName), 0o644)
		if err == nil {
			err = verifyStoryboard(work)
		}
		if err != nil {
			log.Warn("storyboard left out", "err", err)
			drop(work, media.StoryboardVTTName, media.StoryboardImageName)
		} else {
			m.storyboard = true
		}
	}
	if !download {
		return m, nil
	}
	rung, ok := ffmpeg.DownloadRung(rungs)
	if !ok {
		return m, nil
	}
	opts.OnProgress = nil
	opts.OutputDir = filepath.Join(work, media.DownloadName)
	err := ffmpeg.Run(ctx, ffmpeg.DownloadArgs(media.HLSDir, rung, info.HasAudio, media.DownloadName), opts)
	if err == nil {
		err = checkDownload(filepath.Join(work, media.DownloadName))
	}
	if ctx.Err() != nil {
		return m, ctx.Err()
	}
	if err != nil {
		log.Warn("download rendition left out", "err", err)
		drop(work, media.DownloadName)
		return m, nil
	}
	m.download = true
	return m, nil
}

func drop(work string, names ...string) {
	for _, n := range names {
		_ = os.RemoveAll(filepath.Join(work, n))
	}
}

// cueRegion is the media fragment of a storyboard cue's image.
var cueRegion = regexp.MustCompile(`^` + regexp.QuoteMeta(media.StoryboardImageName) + `#xywh=(\d+),(\d+),(\d+),(\d+)$`)

// verifyStoryboard checks the sprite and its track: the sprite is a JPEG,
// the track is WebVTT whose every cue points at a non-empty region inside
// the sprite's real size.
func verifyStoryboard(work string) error {
	f, err := os.Open(filepath.Join(work, media.StoryboardImageName))
	if err != nil {
		return err
	}
	cfg, err := jpeg.DecodeConfig(bufio.NewReader(f))
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", media.StoryboardImageName, err)
	}
	data, err := os.ReadFile(filepath.Join(work, media.StoryboardVTTName))
	if err != nil {
		return err
	}
	regions, err := StoryboardRegions(data)
	if err != nil {
		return err
	}
	for _, r := range regions {
		if r[2] <= 0 || r[3] <= 0 || r[0]+r[2] > cfg.Width || r[1]+r[3] > cfg.Height {
			return fmt.Errorf("cue region %v outside the %d×%d sprite", r, cfg.Width, cfg.Height)
		}
	}
	return nil
}

// StoryboardRegions parses a storyboard track as kino writes it: "WEBVTT",
// then cues of a timing line and one payload line naming a region of the
// sprite. It returns every region as x, y, w, h.
func StoryboardRegions(vtt []byte) ([][4]int, error) {
	blocks := strings.Split(strings.TrimSpace(string(vtt)), "\n\n")
	if len(blocks) < 2 || blocks[0] != "WEBVTT" {
		return nil, errors.New("not a WebVTT track with cues")
	}
	var out [][4]int
	for _, b := range blocks[1:] {
		lines := strings.Split(b, "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], " --> ") {
			return nil, fmt.Errorf("cue %q", b)
		}
		m := cueRegion.FindStringSubmatch(lines[1])
		if m == nil {
			return nil, fmt.Errorf("cue payload %q", lines[1])
		}
		var r [4]int
		for i := range r {
			r[i], _ = strconv.Atoi(m[i+1])
		}
		out = append(out, r)
	}
	return out, nil
}

// maxBoxes bounds the boxes read at one level: ffmpeg writes a handful.
const maxBoxes = 1000

// box is an MP4 box: its type, where it starts, and where its payload
// starts and ends.
type box struct {
	typ             string
	off, body, next int64
}

// readBoxes lists the boxes of f between off and end, in order; each must
// end within end (a short write leaves one running past it).
func readBoxes(f *os.File, off, end int64) ([]box, error) {
	var out []box
	hdr := make([]byte, 16)
	for off < end {
		if len(out) == maxBoxes {
			return nil, fmt.Errorf("more than %d boxes", maxBoxes)
		}
		if end-off < 8 {
			return nil, fmt.Errorf("%d stray bytes at %d", end-off, off)
		}
		if _, err := f.ReadAt(hdr[:8], off); err != nil {
			return nil, fmt.Errorf("box at %d: %w", off, err)
		}
		size := int64(binary.BigEndian.Uint32(hdr[:4]))
		typ := string(bytes.ToValidUTF8(hdr[4:8], []byte("?")))
		body := off + 8
		switch size {
		case 0: // to the end
			size = end - off
		case 1: // 64-bit size follows
			if end-off < 16 {
				return nil, fmt.Errorf("box %q at %d: no room for its size", typ, off)
			}
			if _, err := f.ReadAt(hdr[8:16], off+8); err != nil {
				return nil, fmt.Errorf("box %q at %d: %w", typ, off, err)
			}
			size = int64(binary.BigEndian.Uint64(hdr[8:16]))
			body += 8
		}
		if size < body-off || size > end-off {
			return nil, fmt.Errorf("box %q at %d has size %d", typ, off, size)
		}
		out = append(out, box{typ: typ, off: off, body: body, next: off + size})
		off += size
	}
	return out, nil
}

// withTopBoxes opens an MP4 file and hands fn the file and its top-level
// boxes.
func withTopBoxes(file string, fn func(f *os.File, top []box) error) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	top, err := readBoxes(f, 0, fi.Size())
	if err != nil {
		return err
	}
	return fn(f, top)
}

// checkPreview checks the preview as kino's ffmpeg writes it, without
// starting ffprobe (a tenth of a second of CPU): its boxes span the file
// exactly (a short write leaves one running past its end), moov comes
// before a non-empty mdat (faststart: it plays while it downloads), and
// moov holds a video track (a trak whose mdia's hdlr names "vide").
func checkPreview(file string) error {
	return withTopBoxes(file, func(f *os.File, top []box) error {
		_, err := videoTrack(f, top)
		return err
	})
}

// checkDownload is checkPreview for the download rendition, whose video
// must also be at most 1080 on its short side (its tkhd's size).
func checkDownload(file string) error {
	return withTopBoxes(file, func(f *os.File, top []box) error {
		trak, err := videoTrack(f, top)
		if err != nil {
			return err
		}
		w, h, err := trackSize(f, trak)
		if err != nil {
			return err
		}
		if min(w, h) > 1080 {
			return fmt.Errorf("%d×%d is over 1080p", w, h)
		}
		return nil
	})
}

// videoTrack finds, in an opened MP4's top-level boxes, moov before a
// non-empty mdat, and in moov the first video track (a trak whose mdia's
// hdlr names "vide").
func videoTrack(f *os.File, top []box) (box, error) {
	moov := slices.IndexFunc(top, func(b box) bool { return b.typ == "moov" })
	mdat := slices.IndexFunc(top, func(b box) bool { return b.typ == "mdat" })
	if moov < 0 || mdat < 0 || moov > mdat {
		return box{}, fmt.Errorf("no moov before an mdat")
	}
	if top[mdat].next == top[mdat].body {
		return box{}, fmt.Errorf("an empty mdat")
	}
	handler := make([]byte, 4)
	for _, trak := range children(f, top[moov], "trak") {
		for _, mdia := range children(f, trak, "mdia") {
			for _, hdlr := range children(f, mdia, "hdlr") {
				// version and flags (4), pre_defined (4), handler_type (4)
				if hdlr.next-hdlr.body >= 12 {
					if _, err := f.ReadAt(handler, hdlr.body+8); err == nil && string(handler) == "vide" {
						return trak, nil
					}
				}
			}
		}
	}
	return box{}, fmt.Errorf("no video track")
}

// children are parent's boxes of type typ (none when they do not parse).
func children(f *os.File, parent box, typ string) []box {
	kids, err := readBoxes(f, parent.body, parent.next)
	if err != nil {
		return nil
	}
	return ofType(kids, typ)
}

// ofType are the boxes of type typ among boxes.
func ofType(boxes []box, typ string) []box {
	var out []box
	for _, b := range boxes {
		if b.typ == typ {
			out = append(out, b)
		}
	}
	return out
}

// trackSize reads a trak's presentation size from its tkhd: after the
// version and flags, the times, id and duration (20 bytes in version 0,
// 32 in version 1), 52 bytes of layer, volume and matrix, then width and
// height as 16.16 fixed point.
func trackSize(f *os.File, trak box) (w, h int, err error) {
	tkhd := children(f, trak, "tkhd")
	if len(tkhd) != 1 {
		return 0, 0, fmt.Errorf("%d tkhd boxes in the video track", len(tkhd))
	}
	body := make([]byte, min(tkhd[0].next-tkhd[0].body, 96))
	if _, err := f.ReadAt(body, tkhd[0].body); err != nil {
		return 0, 0, fmt.Errorf("tkhd: %w", err)
	}
	at := 4 + 20 + 52
	if len(body) > 0 && body[0] == 1 {
		at = 4 + 32 + 52
	}
	if len(body) < at+8 {
		return 0, 0, fmt.Errorf("a tkhd of %d bytes", len(body))
	}
	return int(binary.BigEndian.Uint32(body[at:]) >> 16), int(binary.BigEndian.Uint32(body[at+4:]) >> 16), nil
}
