package ffmpeg

import (
	"math"
	"strconv"
)

// Rung is one rendition of the ladder.
type Rung struct {
	Name   string // "<short side>p", e.g. "720p"
	Width  int    // output width, even
	Height int    // output height, even
	// CRF is x264's quality target (-crf): each picture gets the bits it
	// needs for that quality, within MaxRate and BufSize. 0 encodes at
	// Bitrate on average instead (a fixed-bitrate rung).
	CRF     int
	Bitrate int // video kbit/s on average (-b:v), with CRF 0
	MaxRate int // kbit/s (-maxrate)
	BufSize int // kbit (-bufsize)
	// Refs is how many frames a frame may be predicted from (-refs); 0
	// keeps the preset's (veryfast: 1).
	Refs int
}

// ladderRefs is Refs of the ladder's rungs. veryfast looks back one
// frame; three cost about 5 % more encode time and, on the bench's
// corpus at equal CRF, took 2 to 6 % fewer bytes at a higher SSIM, and a
// third of the bytes on a repeating pattern (docs/performance.md).
const ladderRefs = 3

// ladderSteps are the short sides of the renditions, highest first, with
// their quality targets (x264 CRF) and video bitrate caps in kbit/s. The
// lower rungs aim higher: they are watched on phones held close, and a
// picture a quarter the size costs a quarter the bits to improve.
var ladderSteps = []struct{ short, crf, kbps int }{
	{2160, 23, 16000},
	{1440, 23, 9000},
	{1080, 23, 5000},
	{720, 22, 2800},
	{480, 22, 1400},
	{360, 21, 800},
	{240, 20, 400},
}

// minKbps is the floor of the bitrate of a source smaller than every step.
const minKbps = 200

// Ladder returns the renditions for a source whose displayed size is
// info.Width×info.Height: every step of 2160/1440/1080/720/480/360/240 not
// above the source's short side, highest first. A source whose short side is
// below 240 gets one rung at its own short side, made even, with a bitrate
// scaled down from the 240 step (at least 200 kbit/s). The short side of a
// rung is the step; the long side keeps the source's aspect, rounded to the
// nearest even number (as scale=-2 would). Names are "<short side>p" in
// both orientations. Ladder returns nil only when info has no size, which
// Probe never returns.
func Ladder(info Info) []Rung {
	w, h := info.Width, info.Height
	if w <= 0 || h <= 0 {
		return nil
	}
	short, long := min(w, h), max(w, h)
	var rungs []Rung
	for _, s := range ladderSteps {
		if s.short <= short {
			rungs = append(rungs, newRung(s.short, s.crf, s.kbps, short, long, w < h))
		}
	}
	if len(rungs) == 0 {
		side := max(short&^1, 2)
		lowest := ladderSteps[len(ladderSteps)-1]
		kbps := max(lowest.kbps*side/lowest.short, minKbps)
		rungs = append(rungs, newRung(side, lowest.crf, kbps, short, long, w < h))
	}
	return rungs
}

func newRung(side, crf, kbps, srcShort, srcLong int, portrait bool) Rung {
	other := even(float64(side) * float64(srcLong) / float64(srcShort))
	r := Rung{
		Name:    strconv.Itoa(side) + "p",
		Width:   other,
		Height:  side,
		CRF:     crf,
		MaxRate: kbps,
		BufSize: kbps,
		Refs:    ladderRefs,
	}
	if portrait {
		r.Width, r.Height = side, other
	}
	return r
}

// even rounds x to the nearest even number, at least 2.
func even(x float64) int {
	return max(int(math.Round(x/2))*2, 2)
}
