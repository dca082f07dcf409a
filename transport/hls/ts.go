package hls

import (
	"errors"
	"io"
)

// MPEG-TS reading, enough to align a WebVTT subtitle rendition with the
// video: its X-TIMESTAMP-MAP names the MPEG-TS time (90 kHz) at which the
// cues' time 0 falls, which is the first segment's first presentation
// time (ffmpeg's MPEG-TS muxer starts near 1.4 s, not 0).

const (
	tsPacket = 188
	tsSync   = 0x47
	// maxPTSScan bounds how much of a segment StartPTS reads.
	maxPTSScan = 2 << 20
	// ptsStreams is how many elementary streams' first PTS StartPTS
	// waits for (video and audio) before it answers.
	ptsStreams = 2
)

// ErrNoPTS is StartPTS's answer for bytes holding no timed PES packet.
var ErrNoPTS = errors.New("hls: no presentation time in the MPEG-TS data")

// StartPTS is the earliest presentation time stamp (90 kHz units, 33
// bits) among the first PES packets of the elementary streams of an
// MPEG-TS segment read from r: what players take as the segment's start.
// It reads at most maxPTSScan bytes, and stops once two streams have
// shown their first PTS.
func StartPTS(r io.Reader) (int64, error) {
	buf := make([]byte, tsPacket)
	seen := map[uint16]bool{}
	best := int64(-1)
	for read := 0; read < maxPTSScan; read += tsPacket {
		if _, err := io.ReadFull(r, buf); err != nil {
			break
		}
		if buf[0] != tsSync {
			return 0, errors.New("hls: not an MPEG-TS stream (lost sync)")
		}
		pusi := buf[1]&0x40 != 0
		pid := uint16(buf[1]&0x1f)<<8 | uint16(buf[2])
		if !pusi || pid < 0x20 || pid == 0x1fff || seen[pid] {
			continue
		}
		payload := buf[4:]
		switch buf[3] >> 4 & 3 { // adaptation field control
		case 1:
		case 3:
			n := int(buf[4]) + 1
			if n >= len(payload) {
				continue
			}
			payload = payload[n:]
		default:
			continue
		}
		pts, ok := pesPTS(payload)
		if !ok {
			continue // a PSI section on a high PID, or a PES without a time
		}
		seen[pid] = true
		if best < 0 || pts < best {
			best = pts
		}
		if len(seen) >= ptsStreams {
			break
		}
	}
	if best < 0 {
		return 0, ErrNoPTS
	}
	return best, nil
}

// pesPTS reads the PTS of a PES packet header at the start of p.
func pesPTS(p []byte) (int64, bool) {
	if len(p) < 14 || p[0] != 0 || p[1] != 0 || p[2] != 1 {
		return 0, false
	}
	if p[7]&0x80 == 0 { // PTS_DTS_flags: no PTS
		return 0, false
	}
	b := p[9:14]
	if b[0]&1 == 0 || b[2]&1 == 0 || b[4]&1 == 0 { // marker bits
		return 0, false
	}
	return int64(b[0]>>1&7)<<30 | int64(b[1])<<22 | int64(b[2]>>1)<<15 | int64(b[3])<<7 | int64(b[4]>>1), true
}
