package transcoder

import "time"

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

// SetMergeHook sets a hook run when a ladder's lanes are done, before
// their masters are merged (tests only), until the returned func restores
// none.
func SetMergeHook(merge func(work string)) (restore func()) {
	beforeMerge = merge
	return func() { beforeMerge = nil }
}
