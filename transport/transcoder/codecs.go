package transcoder

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"slices"
	"strconv"
	"syscall"

	"github.com/kino-video/kino/transport/hls"
	"github.com/kino-video/kino/transport/media"
)

// aacLC is the CODECS entry of kino's audio rendition: AAC LC, whether
// encoded (ffmpeg's aac) or copied (the fast path copies only AAC LC).
const aacLC = "mp4a.40.2"

// maxInitSize bounds the initialization segment read for its codec:
// ffmpeg writes about a kilobyte.
const maxInitSize = 1 << 20

// fillCodecs gives every variant stream of m without a CODECS attribute
// one, read from the files of root (a work directory): the video's
// (avc1.PPCCLL) from the avcC of its rendition's initialization segment,
// then AAC LC's when the variant has an audio group. ffmpeg reads the
// profile and level of an H.264 stream only from Annex B headers: it
// names the encoded rungs' codecs, and the copied top rung's from the
// headers filter_units hands on (the fast path's copy drops its filler
// data through it), but none for an MP4's avcC copied as it is. A player
// that keeps to the codecs it started with (hls.js) would never switch to
// a variant without them by itself.
// A variant whose codec cannot be read is left as it is (it still plays),
// and the errors are returned, to be logged.
func fillCodecs(root *os.Root, m *hls.Master) error {
	var errs []error
	for i, v := range m.Variants {
		if _, ok := v.Attrs.Get("CODECS"); ok {
			continue
		}
		codecs, err := videoCodec(root, v.URI)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", v.URI, err))
			continue
		}
		if _, ok := v.Attrs.Get("AUDIO"); ok {
			codecs += "," + aacLC
		}
		m.Variants[i].Attrs = v.Attrs.SetAfter("CODECS", hls.Quote(codecs), "RESOLUTION")
	}
	return errors.Join(errs...)
}

// setFrameRate gives every variant stream of m the FRAME-RATE attribute:
// rate (frames per second, the ladder's highest, ffmpeg.OutputRate)
// rounded to three decimals, as RFC 8216 writes it. ffmpeg writes none; a
// player may pass over a variant whose rate its device cannot decode. A
// rate of 0 (unknown) leaves m as it is.
func setFrameRate(m *hls.Master, rate float64) {
	if rate <= 0 || math.IsInf(rate, 0) || math.IsNaN(rate) {
		return
	}
	v := strconv.FormatFloat(math.Round(rate*1000)/1000, 'f', 3, 64)
	for i := range m.Variants {
		m.Variants[i].Attrs = m.Variants[i].Attrs.SetAfter("FRAME-RATE", v, "RESOLUTION")
	}
}

// describeVariants is the master playlist data with fillCodecs and
// setFrameRate applied, the BANDWIDTH of a variant whose rendition has
// one in known (by rendition name: the copied top rung's,
// ffmpeg.FastPath.Bandwidth, while it is not measured) set to it, and
// fillCodecs' error; data as it was when it does not parse. ffmpeg's own
// figure for a copied stream is the container's bit rate: none from
// Matroska or MPEG-TS, and filler data included where there is one.
func describeVariants(root *os.Root, data []byte, rate float64, known map[string]int64) ([]byte, error) {
	m, err := hls.ParseMaster(data)
	if err != nil {
		return data, err
	}
	setFrameRate(m, rate)
	for i, v := range m.Variants {
		if bw := known[path.Dir(v.URI)]; bw > 0 {
			m.Variants[i].Attrs = v.Attrs.Set("BANDWIDTH", strconv.FormatInt(bw, 10))
		}
	}
	ferr := fillCodecs(root, m)
	out, err := m.Encode()
	if err != nil {
		return data, err
	}
	return out, ferr
}

// videoCodec is the RFC 6381 codec of the H.264 rendition whose media
// playlist is uri (under root's hls directory): its sample entry's type
// (avc1, or avc3 for parameter sets in the stream), then the profile,
// constraint flags and level of its initialization segment's avcC.
func videoCodec(root *os.Root, uri string) (string, error) {
	if !local(uri) {
		return "", fmt.Errorf("%q is not a playlist of its own", uri)
	}
	rel := path.Join(media.HLSDir, uri)
	data, err := readPlaylist(root, rel)
	if err != nil {
		return "", err
	}
	pl, err := hls.ParseMedia(data)
	if err != nil {
		return "", err
	}
	var init string
	for _, t := range pl.Header {
		if t.Name() == mapTag {
			if init, err = initSegmentOf(t); err != nil {
				return "", err
			}
		}
	}
	if init == "" {
		return "", errors.New("no initialization segment")
	}
	// Not blocking on a FIFO planted in its place, as readPlaylist.
	f, err := root.OpenFile(path.Join(path.Dir(rel), init), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxInitSize {
		return "", fmt.Errorf("initialization segment %s: not a plain file of at most %d bytes", init, maxInitSize)
	}
	top, err := readBoxes(f, 0, fi.Size())
	if err != nil {
		return "", fmt.Errorf("initialization segment %s: %w", init, err)
	}
	entry, avcC, err := avcConfig(f, top)
	if err != nil {
		return "", fmt.Errorf("initialization segment %s: %w", init, err)
	}
	return fmt.Sprintf("%s.%02x%02x%02x", entry, avcC[0], avcC[1], avcC[2]), nil
}

// avcProfiles are the H.264 profile_idc the fast path copies (Baseline,
// Main, High); avcLevels the level_idc H.264 defines.
var (
	avcProfiles = []byte{66, 77, 100}
	avcLevels   = []byte{9, 10, 11, 12, 13, 20, 21, 22, 30, 31, 32, 40, 41, 42, 50, 51, 52, 60, 61, 62}
)

// avcConfig reads the profile, constraint flags and level of the first
// H.264 sample entry (avc1 or avc3) of an MP4's moov, from its avcC:
// configurationVersion (1), AVCProfileIndication, profile_compatibility,
// AVCLevelIndication, lengthSizeMinusOne, the count of sequence parameter
// sets, then the first one's length and bytes (its NAL header, then the
// same three). The avcC's own three bytes are the uploader's to write,
// and a player refuses a variant whose CODECS it cannot play: they count
// only when the SPS says the same.
func avcConfig(f *os.File, top []box) (entry string, _ [3]byte, _ error) {
	var out [3]byte
	for _, moov := range ofType(top, "moov") {
		for _, trak := range children(f, moov, "trak") {
			for _, stsd := range descend(f, trak, "mdia", "minf", "stbl", "stsd") {
				// stsd: version and flags (4), entry_count (4), then the
				// sample entries; a visual one has 78 bytes of fields
				// before its own boxes.
				entries, err := readBoxes(f, stsd.body+8, stsd.next)
				if err != nil {
					continue
				}
				for _, e := range entries {
					if (e.typ != "avc1" && e.typ != "avc3") || e.next-e.body < 78 {
						continue
					}
					kids, err := readBoxes(f, e.body+78, e.next)
					if err != nil {
						continue
					}
					for _, c := range kids {
						if c.typ != "avcC" {
							continue
						}
						var b [12]byte
						if c.next-c.body < int64(len(b)) {
							return "", out, fmt.Errorf("an avcC of %d bytes", c.next-c.body)
						}
						if _, err := f.ReadAt(b[:], c.body); err != nil {
							return "", out, fmt.Errorf("avcC: %w", err)
						}
						sps := b[8:] // after the 2-byte length: NAL header, profile, flags, level
						switch {
						case b[0] != 1:
							return "", out, fmt.Errorf("avcC version %d", b[0])
						case b[5]&0x1f == 0 || int(b[6])<<8|int(b[7]) < 4 || sps[0]&0x1f != 7:
							return "", out, errors.New("avcC holds no sequence parameter set")
						case [3]byte(b[1:4]) != [3]byte(sps[1:4]):
							return "", out, fmt.Errorf("avcC says %x, its sequence parameter set %x", b[1:4], sps[1:4])
						case !slices.Contains(avcProfiles, b[1]) || !slices.Contains(avcLevels, b[3]):
							return "", out, fmt.Errorf("profile %d level %d: not one a browser knows", b[1], b[3])
						}
						return e.typ, [3]byte(b[1:4]), nil
					}
				}
			}
		}
	}
	return "", out, errors.New("no H.264 sample entry with an avcC")
}

// descend are the boxes found by following types down from parent: its
// children of types[0], their children of types[1], and so on.
func descend(f *os.File, parent box, types ...string) []box {
	level := []box{parent}
	for _, typ := range types {
		var next []box
		for _, b := range level {
			next = append(next, children(f, b, typ)...)
		}
		level = next
	}
	return level
}
