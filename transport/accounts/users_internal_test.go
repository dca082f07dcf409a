package accounts

import (
	"context"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
)

// With every argon2 slot taken, a login waits HashWait, then is refused
// (503) instead of adding one more computation's memory.
func TestLoginsBeyondTheHashingSlotsAreRefused(t *testing.T) {
	u := &Users{cfg: UsersConfig{MaxHashing: 1, HashWait: 10 * time.Millisecond}, slots: make(chan struct{}, 1)}
	release, err := u.hashSlot(context.Background(), "log in")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.hashSlot(context.Background(), "log in"); domain.KindOf(err) != domain.Unavailable {
		t.Fatalf("a second computation: %v; want unavailable", err)
	}
	release()
	again, err := u.hashSlot(context.Background(), "log in")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}
