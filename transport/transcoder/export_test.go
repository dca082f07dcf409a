package transcoder

// SetEncodeHooks sets the hooks run before ffmpeg starts and between the
// encode and the check of its outputs (tests only), until the returned
// func restores none.
func SetEncodeHooks(before, after func(work string)) (restore func()) {
	beforeEncode, afterEncode = before, after
	return func() { beforeEncode, afterEncode = nil, nil }
}
