package playback_test

import (
	"context"
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
// video, and not under another ring.
func TestMintVerify(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tk := playback.Tokens{Ring: newRing(t, nil), Keys: noKeys{}, Now: clock}
	tok, exp, err := tk.Mint(ctx, "v1", "https://example.com", time.Minute)
	if err != nil || !exp.Equal(now.Add(time.Minute)) {
		t.Fatalf("mint: %v, exp %v", err, exp)
	}
	c, err := tk.Verify(ctx, "v1", "acct", tok)
	if err != nil || c.Origin != "https://example.com" {
		t.Fatalf("verify: %+v, %v", c, err)
	}
	other := tk
	other.Ring = newRing(t, nil)
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
		{name: "expired", tk: playback.Tokens{Ring: tk.Ring, Keys: noKeys{}, Now: func() time.Time { return now.Add(2 * time.Minute) }}, video: "v1", token: tok},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.tk.Verify(ctx, tc.video, "acct", tc.token)
			var e *domain.Error
			if !errors.As(err, &e) || domain.KindOf(err) != domain.Denied {
				t.Fatalf("got %v, want a Denied error", err)
			}
		})
	}
	if _, _, err := (playback.Tokens{Now: clock}).Mint(ctx, "v1", "", time.Minute); domain.KindOf(err) != domain.Unavailable {
		t.Fatalf("mint without a key: %v", err)
	}
}
