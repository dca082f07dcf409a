package ffmpeg

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/kino-video/kino/domain"
)

// NotVideoMessage is the client-facing reason for a file Sniff refuses.
const NotVideoMessage = "not a video file kino can read"

// Input is a file as ffmpeg and ffprobe open it: always through the file
// protocol, with the demuxer Sniff chose forced, so the file's content can
// neither pick another demuxer (a playlist, a concat script) nor make
// ffmpeg open another file or URL.
type Input struct {
	Path    string // as ffmpeg opens it: absolute, or relative to the run's Jail.Dir
	Demuxer string // one of the Demux* names
}

// OpenInput sniffs the file at path and returns it as an Input whose Path
// is name (the name ffmpeg will use for it; path when empty). A file Sniff
// refuses gives a domain Unsupported error with NotVideoMessage; failing to
// read it gives a plain error.
func OpenInput(path, name string) (Input, error) {
	const op = "open input"
	f, err := os.Open(path)
	if err != nil {
		return Input{}, fmt.Errorf("%s: %w", op, err)
	}
	defer f.Close()
	header := make([]byte, SniffLen)
	n, err := io.ReadFull(f, header)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return Input{}, fmt.Errorf("%s: %w", op, err)
	}
	demuxer := Sniff(header[:n])
	if demuxer == "" {
		return Input{}, domain.E(op, domain.Unsupported, NotVideoMessage)
	}
	if name == "" {
		name = path
	}
	return Input{Path: name, Demuxer: demuxer}, nil
}

// args are the input options and the input: the forced demuxer, only the
// file protocol (which nested opens inherit), no external data references
// in mov, and the path addressed as file: so that no "name:" prefix in it
// is ever read as a protocol.
func (in Input) args() []string { return in.capped(0) }

// capped is args with the decoders' picture cap: with maxPixels > 0 every
// decoder of the input refuses (drops, with an error on stderr) a frame of
// more than maxPixels pixels before allocating it, whatever size the
// headers probe read announced.
func (in Input) capped(maxPixels int) []string {
	args := []string{"-f", in.Demuxer, "-protocol_whitelist", "file"}
	if in.Demuxer == DemuxMOV {
		args = append(args, "-enable_drefs", "0")
	}
	if maxPixels > 0 {
		args = append(args, "-max_pixels", strconv.Itoa(maxPixels))
	}
	return append(args, "-i", "file:"+in.Path)
}
