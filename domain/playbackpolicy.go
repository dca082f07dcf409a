package domain

// PlaybackPolicy says who may fetch a video's media: anyone with its URLs
// (public), or only a request carrying a valid playback token (signed).
type PlaybackPolicy string

const (
	PlaybackPublic PlaybackPolicy = "public"
	PlaybackSigned PlaybackPolicy = "signed"
)

// ParsePlaybackPolicy checks a policy name; "" is not a policy.
func ParsePlaybackPolicy(s string) (PlaybackPolicy, error) {
	switch p := PlaybackPolicy(s); p {
	case PlaybackPublic, PlaybackSigned:
		return p, nil
	}
	return "", E("parse playback policy", Invalid, `playbackPolicy must be "public" or "signed" (got %q)`, Truncate(s, 40))
}

// OrPublic is p, or public when p is empty (events written before policies
// existed carry none).
func (p PlaybackPolicy) OrPublic() PlaybackPolicy {
	if p == "" {
		return PlaybackPublic
	}
	return p
}
