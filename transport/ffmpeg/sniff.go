package ffmpeg

import (
	"bytes"
	"encoding/binary"
)

// SniffLen is how many leading bytes of a file Sniff wants; fewer is fine
// for a file that is shorter.
const SniffLen = 1024

// Demuxers Sniff may return: ffmpeg's -f names for the spec's input types.
const (
	DemuxMOV      = "mov"      // mp4, mov, m4v, 3gp, 3g2
	DemuxMatroska = "matroska" // mkv, webm
	DemuxAVI      = "avi"
	DemuxFLV      = "flv"
	DemuxASF      = "asf" // wmv, asf
	DemuxMPEGPS   = "mpeg"
	DemuxMPEGTS   = "mpegts" // 188-byte TS, 192-byte M2TS, 204-byte TS with parity
	DemuxOgg      = "ogg"
	// DemuxMPEGVideo is an MPEG-1/2 video elementary stream (.mpg, .m1v,
	// .m2v): a sequence header, no container.
	DemuxMPEGVideo = "mpegvideo"
)

// asfHeader is the GUID of an ASF Header Object.
var asfHeader = []byte{0x30, 0x26, 0xB2, 0x75, 0x8E, 0x66, 0xCF, 0x11, 0xA6, 0xD9, 0x00, 0xAA, 0x00, 0x62, 0xCE, 0x6C}

// movFirstBoxes are the box types an ISO-BMFF / QuickTime file starts
// with: those ffmpeg's own mov probe knows (ftyp, moov, mdat, pnot, udta,
// wide, ediw of XDCAM, free, junk, pict, skip, uuid, prfl), and a
// segment's styp and sidx.
var movFirstBoxes = []string{"ftyp", "moov", "mdat", "pnot", "udta", "wide", "ediw", "free", "junk", "pict",
	"skip", "uuid", "prfl", "styp", "sidx"}

// tsPackets are the MPEG-TS packet sizes: plain, M2TS (a 4-byte timestamp
// first) and with 16 bytes of Reed-Solomon parity after each packet.
var tsPackets = []int{188, 192, 204}

// Sniff names the ffmpeg demuxer for a file from its first bytes (up to
// SniffLen of them), or returns "" when they are not one of the container
// formats kino reads. It never looks at names or extensions, and the list
// is closed: playlists (HLS, DASH), concat scripts, SDP, images, text and
// anything unknown are refused, so ffmpeg is never asked to guess.
func Sniff(header []byte) string {
	h := header
	switch {
	case bytes.HasPrefix(h, []byte{0x1A, 0x45, 0xDF, 0xA3}):
		return DemuxMatroska
	case len(h) >= 12 && string(h[:4]) == "RIFF" && string(h[8:12]) == "AVI ":
		return DemuxAVI
	case len(h) >= 4 && string(h[:3]) == "FLV" && h[3] == 1:
		return DemuxFLV
	case bytes.HasPrefix(h, asfHeader):
		return DemuxASF
	case bytes.HasPrefix(h, []byte{0x00, 0x00, 0x01, 0xBA}):
		return DemuxMPEGPS
	case bytes.HasPrefix(h, []byte{0x00, 0x00, 0x01, 0xB3}):
		return DemuxMPEGVideo
	case bytes.HasPrefix(h, []byte("OggS\x00")):
		return DemuxOgg
	case isMOV(h):
		return DemuxMOV
	case isTS(h):
		return DemuxMPEGTS
	}
	return ""
}

// isMOV: a box header (32-bit size, then a known type) at the start. The
// size is 0 (to the end), 1 (64-bit size follows) or at least 8.
func isMOV(h []byte) bool {
	if len(h) < 8 {
		return false
	}
	size := binary.BigEndian.Uint32(h)
	if size != 0 && size != 1 && size < 8 {
		return false
	}
	typ := string(h[4:8])
	for _, t := range movFirstBoxes {
		if typ == t {
			return true
		}
	}
	return false
}

// isTS: for some packet size, a sync byte 0x47 at some offset (a capture
// may start with stray bytes, which ffmpeg's demuxer skips) and at the
// same place in every packet after it to the end of h, at least three of
// them. Text with a 'G' every 188 bytes passes too, but is then read as
// MPEG-TS and nothing else, which fails.
func isTS(h []byte) bool {
	for _, packet := range tsPackets {
		for start := 0; start < len(h); start++ {
			if syncedFrom(h, packet, start) {
				return true
			}
		}
	}
	return false
}

func syncedFrom(h []byte, packet, start int) bool {
	n := 0
	for i := start; i < len(h); i += packet {
		if h[i] != 0x47 {
			return false
		}
		n++
	}
	return n >= 3
}
