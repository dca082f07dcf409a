package transcoder

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"image/jpeg"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/media"
)

// errIncomplete is an attempt whose outputs are not all there: ffmpeg's
// HLS muxer exits 0 when its writes fail (a full disk), leaving empty
// playlists. It is transient: the job is retried after the backoff.
var errIncomplete = errors.New("outputs incomplete")

// verifyOutputs checks a work directory's outputs before they are
// published: the master playlist lists the playlist of every rung (and of
// the shared audio rendition when the source has audio), every playlist
// parses as a finished VOD playlist listing at least one segment, every
// segment it lists is a non-empty file, the thumbnail decodes as a JPEG
// and the preview is an MP4 ffprobe reads a video stream from (run in
// jail, as every probe). Any failure wraps errIncomplete.
func verifyOutputs(ctx context.Context, work string, rungs []string, hasAudio bool, jail ffmpeg.Jail) error {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", errIncomplete, fmt.Sprintf(format, a...))
	}
	hls := filepath.Join(work, media.HLSDir)
	listed, err := masterEntries(filepath.Join(hls, media.MasterName))
	if err != nil {
		return fail("%s: %v", media.MasterName, err)
	}
	want := make([]string, 0, len(rungs)+1)
	for _, r := range rungs {
		want = append(want, r+"/index.m3u8")
	}
	if hasAudio {
		want = append(want, ffmpeg.AudioRendition+"/index.m3u8")
	}
	for _, w := range want {
		if !listed[w] {
			return fail("%s does not list %s", media.MasterName, w)
		}
	}
	for p := range listed {
		if err := checkMediaPlaylist(hls, p); err != nil {
			return fail("%s: %v", p, err)
		}
	}

	thumb, err := os.Open(filepath.Join(work, media.ThumbnailName))
	if err != nil {
		return fail("%s: %v", media.ThumbnailName, err)
	}
	_, err = jpeg.Decode(bufio.NewReader(thumb))
	thumb.Close()
	if err != nil {
		return fail("%s: %v", media.ThumbnailName, err)
	}

	preview := ffmpeg.Input{Path: media.PreviewName, Demuxer: ffmpeg.DemuxMOV}
	if _, err := ffmpeg.Probe(ctx, preview, ffmpeg.ProbeOptions{Jail: jail, Bounds: ffmpeg.DefaultBounds()}); err != nil {
		if ctx.Err() != nil {
			return err
		}
		// %v, not %w: a preview ffprobe cannot read is kino's failure to
		// write it, not the upload's fault (Probe calls that Unsupported).
		return fail("%s: %v", media.PreviewName, err)
	}
	return nil
}

// uriAttr is the URI attribute of an #EXT-X-MEDIA tag.
var uriAttr = regexp.MustCompile(`URI="([^"]*)"`)

// masterEntries reads a master playlist: the playlists it lists (variant
// streams and renditions), as paths relative to it.
func masterEntries(file string) (map[string]bool, error) {
	lines, err := playlistLines(file)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "#EXT-X-MEDIA:"):
			if m := uriAttr.FindStringSubmatch(l); m != nil {
				out[m[1]] = true
			}
		case strings.HasPrefix(l, "#EXT-X-STREAM-INF:"):
			if i+1 >= len(lines) || strings.HasPrefix(lines[i+1], "#") {
				return nil, errors.New("a variant stream without its playlist")
			}
		case !strings.HasPrefix(l, "#"):
			out[l] = true
		}
	}
	if len(out) == 0 {
		return nil, errors.New("lists no playlist")
	}
	for p := range out {
		if !local(p) {
			return nil, fmt.Errorf("lists %q, not a playlist of its own", p)
		}
	}
	return out, nil
}

// checkMediaPlaylist checks the media playlist rel (relative to dir): it
// ends with #EXT-X-ENDLIST, lists segments, each a non-empty file beside it.
func checkMediaPlaylist(dir, rel string) error {
	lines, err := playlistLines(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	if lines[len(lines)-1] != "#EXT-X-ENDLIST" {
		return errors.New("not finished (no #EXT-X-ENDLIST)")
	}
	base := path.Dir(rel)
	segments := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "#") {
			continue
		}
		if !local(l) {
			return fmt.Errorf("lists %q, not a segment of its own", l)
		}
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(path.Join(base, l))))
		if err != nil {
			return fmt.Errorf("segment %s: %w", l, err)
		}
		if !fi.Mode().IsRegular() || fi.Size() == 0 {
			return fmt.Errorf("segment %s is empty", l)
		}
		segments++
	}
	if segments == 0 {
		return errors.New("lists no segment")
	}
	return nil
}

// playlistLines reads an M3U8 file's non-blank lines, trimmed; it must
// start with #EXTM3U.
func playlistLines(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var lines []string
	for l := range strings.Lines(string(data)) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 || lines[0] != "#EXTM3U" {
		return nil, fmt.Errorf("not a playlist (%d bytes)", len(data))
	}
	return lines, nil
}

// local reports whether a playlist's entry names a file in or under its
// own directory (ffmpeg writes nothing else).
func local(p string) bool {
	return p != "" && !path.IsAbs(p) && !strings.Contains(p, ":") && !strings.Contains(p, "\\") &&
		path.Clean(p) == p && p != ".." && !strings.HasPrefix(p, "../")
}
