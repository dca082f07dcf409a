package playback_test

import (
	"errors"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/playback"
)

// noKeys is an account without signing keys.
type noKeys struct{}

func (noKeys) SigningKey(string, string) (projections.SigningKey, bool, error) {
	return projections.SigningKey{}, false, nil
}

// A kino token verifies for its video until it expires, and for no other
// video, and not under another key.
func TestMintVerify(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tk := playback.Tokens{Key: []byte("0123456789abcdef0123456789abcdef"), Keys: noKeys{}, Now: clock}
	tok, exp, err := tk.Mint("v1", "https://example.com", time.Minute)
	if err != nil || !exp.Equal(now.Add(time.Minute)) {
		t.Fatalf("mint: %v, exp %v", err, exp)
	}
	c, err := tk.Verify("v1", "acct", tok)
	if err != nil || c.Origin != "https://example.com" {
		t.Fatalf("verify: %+v, %v", c, err)
	}
	other := tk
	other.Key = []byte("another key, of thirty-two bytes")
	tests := []struct {
		name  string
		tk    playback.Tokens
		video string
		token string
	}{
		{name: "another video", tk: tk, video: "v2", token: tok},
		{name: "another key", tk: other, video: "v1", token: tok},
		{name: "no key", tk: playback.Tokens{Keys: noKeys{}, Now: clock}, video: "v1", token: tok},
		{name: "malformed", tk: tk, video: "v1", token: "a b"},
		{name: "empty", tk: tk, video: "v1", token: ""},
		{name: "expired", tk: playback.Tokens{Key: tk.Key, Keys: noKeys{}, Now: func() time.Time { return now.Add(2 * time.Minute) }}, video: "v1", token: tok},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.tk.Verify(tc.video, "acct", tc.token)
			var e *domain.Error
			if !errors.As(err, &e) || domain.KindOf(err) != domain.Denied {
				t.Fatalf("got %v, want a Denied error", err)
			}
		})
	}
	if _, _, err := (playback.Tokens{Now: clock}).Mint("v1", "", time.Minute); domain.KindOf(err) != domain.Unavailable {
		t.Fatalf("mint without a key: %v", err)
	}
}
