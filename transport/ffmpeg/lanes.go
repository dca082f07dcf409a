package ffmpeg

import (
	"errors"
	"fmt"

	"github.com/kino-video/kino/transport/hls"
)

// Lanes. One ffmpeg process encodes every rung in lock-step: its outputs
// advance together at the speed of the whole ladder, which for 1080p and
// above runs below real time on two cores (0.9x for a 1080p25 five-rung
// ladder on the 2-vCPU machine of docs/performance.md). A viewer starting
// before it ends would catch the encoder and stall, so the video could
// only play once most of it was encoded. Split into two processes, the
// low rungs (360p and below, and the audio) run far ahead of real time
// (1.4x beside the high lane on the same machine, 3.5x alone), so the
// video plays at those rungs within seconds, whatever its length, while
// the high lane makes the rest; the lanes' masters are merged into the one
// the single process would have written. The price is a second decode of
// the source (the whole ladder took 9% longer on that machine), so the
// ladder is split only when it is heavy.

// SecondLane is the Lane of the high rungs' process.
const SecondLane = "high"

// HighLaneNice is the niceness (Jail.Nice) of a ladder's high lane:
// beside the low lane it gets about a tenth of the cores the low lane
// wants (CFS weights 110 and 1024), so the low lane runs nearly as fast as
// alone and the video plays sooner; the high lane takes the cores back as
// soon as the low lane is done, so the ladder takes as long as it would
// with both at the same priority.
const HighLaneNice = 10

// laneMaxShort is the largest short side of a rung in the low lane.
const laneMaxShort = 360

// splitPixelRate is the encoded pixels a second from which a ladder is
// split: a 1080p25 ladder (1080p to 240p, 93 Mpx/s) and 720p60 (100 Mpx/s)
// are; 720p30 (50 Mpx/s), which one process encodes faster than real time
// on two cores, is not.
const splitPixelRate = 60e6

// SplitLadder returns where rungs (highest first) split into lanes when
// the ladder is heavy (LaneSplit): the high lane encodes rungs[:k], the
// low lane rungs[k:]; 0 when the ladder runs as one process.
func SplitLadder(info Info, rungs []Rung, x Extras) int {
	rate := OutputRate(info)
	var pixels float64
	for _, r := range rungs {
		pixels += float64(r.Width) * float64(r.Height)
	}
	if pixels*rate < splitPixelRate {
		return 0
	}
	return LaneSplit(rungs, x)
}

// LaneSplit is where rungs split into lanes, whatever the ladder's
// weight: before the first rung of at most 360 on its short side, or
// before the lowest rung when even the top one is that small; 0 when the
// ladder cannot split (one rung), or is not split: a fast-path ladder (its
// top rung copied, its keyframes the source's) is light.
func LaneSplit(rungs []Rung, x Extras) int {
	if x.Fast.Video || len(rungs) < 2 {
		return 0
	}
	for k, r := range rungs {
		if min(r.Width, r.Height) <= laneMaxShort {
			return max(k, 1)
		}
	}
	return len(rungs) - 1
}

// masterName is the master playlist a lane's process writes.
func (x Extras) masterName() string {
	if x.Lane == "" {
		return masterPlaylist
	}
	return LaneMaster(x.Lane)
}

// audioName is the directory of a lane's audio rendition: the second
// lane's is a spare, dropped at the merge (encoding it costs ~1% of the
// ladder and makes that lane's master list its rungs exactly as the single
// process would: bandwidth with the audio, its codec, its group).
func (x Extras) audioName() string {
	if x.Lane == "" {
		return AudioRendition
	}
	return LaneAudio(x.Lane)
}

// LaneMaster is the master playlist the process of lane writes (beside
// master.m3u8, in the same directory).
func LaneMaster(lane string) string { return "master." + lane + ".m3u8" }

// LaneAudio is the directory of lane's spare audio rendition.
func LaneAudio(lane string) string { return AudioRendition + "." + lane }

// MergeMasters is the master playlist of a ladder split into lanes: the
// first lane's header (version, audio rendition), then the variant streams
// of the high lane's master, then the low lane's: what one process writing
// every rung would have written. Both must be masters ffmpeg wrote for
// lanes of one ladder.
func MergeMasters(low, high []byte) ([]byte, error) {
	l, err := laneMaster(low)
	if err != nil {
		return nil, fmt.Errorf("low lane: %w", err)
	}
	h, err := laneMaster(high)
	if err != nil {
		return nil, fmt.Errorf("high lane: %w", err)
	}
	merged := hls.Master{Header: l.Header, Variants: append(h.Variants, l.Variants...)}
	return merged.Encode()
}

// laneMaster reads a master playlist a lane wrote: a header, then variant
// streams and nothing else.
func laneMaster(data []byte) (*hls.Master, error) {
	m, err := hls.ParseMaster(data)
	if err != nil {
		return nil, err
	}
	if len(m.Variants) == 0 {
		return nil, errors.New("no variant stream")
	}
	after := m.Trailer
	for _, v := range m.Variants {
		after = append(after, v.Tags...)
	}
	if len(after) > 0 {
		return nil, fmt.Errorf("unexpected line after the variant streams: %q", after[0])
	}
	return m, nil
}
