package projections_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/projections"
)

// The users and the keys of each account, as the dashboard lists them,
// follow the stream, and a rebuild from sequence 1 gives the same models.
func TestUsersAndKeysReadModels(t *testing.T) {
	s := eventstoretest.Run(t)
	db := tempDB(t)
	p, _ := running(t, db, s)
	ctx := context.Background()
	for _, a := range []string{"acme", "umbrella"} {
		exec[domain.Account](t, s, domain.AccountStream(a), domain.CreateAccount{Slug: a, Plan: domain.PlanFree})
	}
	hashA, hashB, hashC := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	exec[domain.Account](t, s, domain.AccountStream("acme"), domain.IssueKey{KeyID: "k1", Hash: hashA, Prefix: "svc_live_AAAA", Label: "ci"})
	exec[domain.Account](t, s, domain.AccountStream("acme"), domain.IssueKey{KeyID: "k2", Hash: hashB, Prefix: "svc_live_BBBB"})
	exec[domain.Account](t, s, domain.AccountStream("umbrella"), domain.IssueKey{KeyID: "k3", Hash: hashC, Prefix: "svc_live_CCCC"})
	exec[domain.Account](t, s, domain.AccountStream("acme"), domain.RevokeKey{KeyID: "k2"})

	expiry := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	link1, link2, link3 := strings.Repeat("1", 64), strings.Repeat("2", 64), strings.Repeat("3", 64)
	exec[domain.User](t, s, domain.UserStream("ada@example.com"), domain.CreateUser{UserID: "u1", Email: "Ada@example.com", Account: "acme", LinkHash: link1, LinkExpiresAt: expiry})
	exec[domain.User](t, s, domain.UserStream("op@example.com"), domain.CreateUser{UserID: "u2", Email: "op@example.com", Operator: true, LinkHash: link2, LinkExpiresAt: expiry})
	exec[domain.User](t, s, domain.UserStream("bob@example.com"), domain.CreateUser{UserID: "u3", Email: "bob@example.com", Account: "umbrella", LinkHash: link3, LinkExpiresAt: expiry})
	exec[domain.User](t, s, domain.UserStream("ada@example.com"), domain.SetPassword{LinkHash: link1, Hash: "$argon2id$v=19$m=8,t=1,p=1$c2FsdA$aGFzaA"})
	exec[domain.User](t, s, domain.UserStream("bob@example.com"), domain.RemoveUser{})
	last := exec[domain.User](t, s, domain.UserStream("op@example.com"), domain.IssuePasswordLink{LinkHash: link3, LinkExpiresAt: expiry})
	waitFor(t, p, last)

	keys, err := db.Keys("acme")
	if err != nil || len(keys) != 1 || keys[0].ID != "k1" || keys[0].Prefix != "svc_live_AAAA" || keys[0].Label != "ci" {
		t.Fatalf("acme's keys = %+v, %v; want k1 alone, with its prefix", keys, err)
	}
	if keys, _ := db.Keys("umbrella"); len(keys) != 1 || keys[0].ID != "k3" {
		t.Fatalf("umbrella's keys = %+v", keys)
	}

	ada, ok, err := db.UserByEmail("ada@example.com")
	if err != nil || !ok || ada.ID != "u1" || ada.Account != "acme" || !ada.PasswordSet || ada.PasswordGen != 1 || ada.LinkHash != "" {
		t.Fatalf("ada = %+v %v %v", ada, ok, err)
	}
	if _, ok, _ := db.UserByLink(link1); ok {
		t.Fatal("a used link still finds its user")
	}
	if _, ok, _ := db.UserByEmail("bob@example.com"); ok {
		t.Fatal("a removed user is still found")
	}
	op, ok, _ := db.UserByLink(link3)
	if !ok || op.ID != "u2" || !op.Operator {
		t.Fatalf("the operator's new link finds %+v, %v", op, ok)
	}
	if _, ok, _ := db.UserByLink(link2); ok {
		t.Fatal("a replaced link still finds its user")
	}
	if users, _ := db.Users("acme"); len(users) != 1 || users[0].ID != "u1" {
		t.Fatalf("acme's users = %+v", users)
	}
	if users, _ := db.Users("umbrella"); len(users) != 0 {
		t.Fatalf("umbrella's users = %+v", users)
	}
	if users, _ := db.Users(""); len(users) != 2 {
		t.Fatalf("all users = %+v", users)
	}

	diffs, _, err := projections.RebuildFile(ctx, s, db, true, 10, func(projections.Progress) {})
	if err != nil || len(diffs) != 0 {
		t.Fatalf("verify = %v, %v; a rebuild must give the same read models", diffs, err)
	}
}
