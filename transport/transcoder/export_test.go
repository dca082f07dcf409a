package transcoder

import (
	"time"

	"github.com/kino-video/kino/transport/ffmpeg"
)

// SetEncodeHooks sets the hooks run before ffmpeg starts and between the
// encode and the check of its outputs (tests only), until the returned
// func restores none.
func SetEncodeHooks(before, after func(work string)) (restore func()) {
	beforeEncode, afterEncode = before, after
	return func() { beforeEncode, afterEncode = nil, nil }
}

// SetEarlyHooks drives the early publisher (tests only): every receive on
// tick is one pass, and pass runs at the start of each. The returned func
// restores the ticker.
func SetEarlyHooks(tick <-chan time.Time, pass func(work string)) (restore func()) {
	earlyTick, earlyPass = tick, pass
	return func() { earlyTick, earlyPass = nil, nil }
}

// SetSplit replaces where ladders split into lanes (tests only: the
// clips they can afford are too light to be split), and sets a hook run
// when the lanes are done, before their masters are merged, until the
// returned func restores ffmpeg.SplitLadder and no hook.
func SetSplit(split func(info ffmpeg.Info, rungs []ffmpeg.Rung, x ffmpeg.Extras) int, merge func(work string)) (restore func()) {
	splitLadder, beforeMerge = split, merge
	return func() { splitLadder, beforeMerge = ffmpeg.SplitLadder, nil }
}
