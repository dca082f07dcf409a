package transcoder

import "time"

// SetEncodeHooks sets the hooks c's transcoder runs before ffmpeg starts
// and between the encode and the check of its outputs (tests only).
func SetEncodeHooks(c *Config, before, after func(work string)) {
	c.hooks.beforeEncode, c.hooks.afterEncode = before, after
}

// SetEarlyHooks drives c's transcoder's early publisher (tests only):
// every receive on tick is one pass, and pass runs at the start of each.
func SetEarlyHooks(c *Config, tick <-chan time.Time, pass func(work string)) {
	c.hooks.earlyTick, c.hooks.earlyPass = tick, pass
}

// SetMergeHook sets a hook c's transcoder runs when a ladder's lanes are
// done, before their masters are merged (tests only).
func SetMergeHook(c *Config, merge func(work string)) {
	c.hooks.beforeMerge = merge
}

// VerifyOutputs is the check an attempt's outputs pass after ffmpeg and
// before anything is published (tests only).
func VerifyOutputs(work string, rungs []string, hasAudio bool) error {
	return verifyOutputs(work, rungs, hasAudio)
}

// StagedSuffix names the directory beside a work directory where the
// early publisher stages the playlists it publishes (tests only).
const StagedSuffix = stagedSuffix
