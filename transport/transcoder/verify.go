package transcoder

import (
	"bufio"
	"errors"
	"fmt"
	"image/jpeg"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/hls"
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
// and the preview is a whole MP4 with a video track (checkPreview). Any
// failure wraps errIncomplete.
func verifyOutputs(work string, rungs []string, hasAudio bool) error {
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

	if err := checkPreview(filepath.Join(work, media.PreviewName)); err != nil { // outputs.go
		return fail("%s: %v", media.PreviewName, err)
	}
	return nil
}

// masterEntries reads a master playlist: the playlists it lists (variant
// streams and renditions), as paths relative to it.
func masterEntries(file string) (map[string]bool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	m, err := hls.ParseMaster(data)
	if err != nil {
		return nil, err
	}
	uris, err := m.URIs()
	if err != nil {
		return nil, err
	}
	if len(uris) == 0 {
		return nil, errors.New("lists no playlist")
	}
	out := map[string]bool{}
	for _, p := range uris {
		if !local(p) {
			return nil, fmt.Errorf("lists %q, not a playlist of its own", p)
		}
		out[p] = true
	}
	return out, nil
}

// checkMediaPlaylist checks the media playlist rel (relative to dir): it
// ends with #EXT-X-ENDLIST, lists segments, each a non-empty file beside
// it, and fMP4 segments' initialization segment (#EXT-X-MAP), a non-empty
// file beside it too.
func checkMediaPlaylist(dir, rel string) error {
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	pl, err := hls.ParseMedia(data)
	if err != nil {
		return err
	}
	if !pl.Ended() {
		return errors.New("not finished (no #EXT-X-ENDLIST)")
	}
	base := path.Dir(rel)
	var init string
	for _, t := range pl.Header {
		if t.Name() != mapTag {
			if strings.Contains(string(t), "URI=") {
				return fmt.Errorf("unexpected %.100q", t) // a KEY, a second rendition: nothing kino writes
			}
			continue
		}
		if init, err = initSegmentOf(t); err != nil {
			return err
		}
		if err := nonEmptyFile(filepath.Join(dir, filepath.FromSlash(path.Join(base, init)))); err != nil {
			return fmt.Errorf("initialization segment %s: %w", init, err)
		}
	}
	for _, s := range pl.Segments {
		if init == "" && strings.HasSuffix(s.URI, ".m4s") {
			return fmt.Errorf("segment %s without an initialization segment", s.URI)
		}
		for _, t := range slices.Concat(s.Tags, s.After) {
			if strings.Contains(string(t), "URI=") {
				return fmt.Errorf("unexpected %.100q before segment %s", t, s.URI) // a second MAP, a KEY: nothing kino writes
			}
		}
		if !local(s.URI) {
			return fmt.Errorf("lists %q, not a segment of its own", s.URI)
		}
		if err := nonEmptyFile(filepath.Join(dir, filepath.FromSlash(path.Join(base, s.URI)))); err != nil {
			return fmt.Errorf("segment %s: %w", s.URI, err)
		}
	}
	if len(pl.Segments) == 0 {
		return errors.New("lists no segment")
	}
	return nil
}

// local reports whether a playlist's entry names a file in or under its
// own directory (ffmpeg writes nothing else).
func local(p string) bool {
	return p != "" && !path.IsAbs(p) && !strings.Contains(p, ":") && !strings.Contains(p, "\\") &&
		path.Clean(p) == p && p != ".." && !strings.HasPrefix(p, "../")
}

// nonEmptyFile checks file is a plain file holding something.
func nonEmptyFile(file string) error {
	fi, err := os.Stat(file)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Size() == 0 {
		return errors.New("empty or not a plain file")
	}
	return nil
}
