package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
)

const (
	userKey = "0123456789abcdef0123456789abcdef"
	userID  = "01JUSER0000000000000000001"
	pwHash  = "$argon2id$v=19$m=47104,t=1,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g"
)

var (
	linkExpiry  = time.Date(2026, 1, 3, 3, 4, 5, 6_000_000, time.UTC)
	userCreated = domain.UserCreated{UserID: userID, Email: "ada@example.com", Account: "acme", LinkHash: hashA, LinkExpiresAt: linkExpiry}
	passwordSet = domain.PasswordSet{UserID: userID, Hash: pwHash, LinkHash: hashA}
)

func TestUserDecide(t *testing.T) {
	create := domain.CreateUser{UserID: userID, Email: "  Ada@Example.COM ", Account: "acme", LinkHash: hashA, LinkExpiresAt: linkExpiry}
	runDecide[domain.User](t, userKey, []decideCase{
		{name: "create normalises the email", when: create, then: []domain.Payload{userCreated}},
		{
			name: "create an operator",
			when: domain.CreateUser{UserID: userID, Email: "op@example.com", Operator: true, LinkHash: hashA, LinkExpiresAt: linkExpiry},
			then: []domain.Payload{domain.UserCreated{UserID: userID, Email: "op@example.com", Operator: true, LinkHash: hashA, LinkExpiresAt: linkExpiry}},
		},
		{name: "create twice", given: []domain.Payload{userCreated}, when: create, err: domain.Conflict},
		{name: "create again after removal", given: []domain.Payload{userCreated, domain.UserRemoved{UserID: userID}}, when: create, then: []domain.Payload{userCreated}},
		{name: "operator and account", when: domain.CreateUser{UserID: userID, Email: "a@example.com", Account: "acme", Operator: true, LinkHash: hashA, LinkExpiresAt: linkExpiry}, err: domain.Invalid},
		{name: "no account", when: domain.CreateUser{UserID: userID, Email: "a@example.com", LinkHash: hashA, LinkExpiresAt: linkExpiry}, err: domain.Invalid},
		{name: "bad email", when: domain.CreateUser{UserID: userID, Email: "Ada <a@example.com>", Account: "acme", LinkHash: hashA, LinkExpiresAt: linkExpiry}, err: domain.Invalid},
		{name: "expired link at creation", when: domain.CreateUser{UserID: userID, Email: "a@example.com", Account: "acme", LinkHash: hashA, LinkExpiresAt: now}, err: domain.Invalid},
		{name: "short link hash", when: domain.CreateUser{UserID: userID, Email: "a@example.com", Account: "acme", LinkHash: "ab", LinkExpiresAt: linkExpiry}, err: domain.Invalid},
		{
			name:  "set password through the link",
			given: []domain.Payload{userCreated},
			when:  domain.SetPassword{LinkHash: hashA, Hash: pwHash},
			then:  []domain.Payload{passwordSet},
		},
		{name: "set password twice through one link", given: []domain.Payload{userCreated, passwordSet}, when: domain.SetPassword{LinkHash: hashA, Hash: pwHash}, err: domain.Invalid},
		{name: "set password with another link", given: []domain.Payload{userCreated}, when: domain.SetPassword{LinkHash: hashB, Hash: pwHash}, err: domain.Invalid},
		{
			name:  "set password through an expired link",
			given: []domain.Payload{domain.UserCreated{UserID: userID, Email: "ada@example.com", Account: "acme", LinkHash: hashA, LinkExpiresAt: now}},
			when:  domain.SetPassword{LinkHash: hashA, Hash: pwHash},
			err:   domain.Invalid,
		},
		{name: "set password of a removed user", given: []domain.Payload{userCreated, domain.UserRemoved{UserID: userID}}, when: domain.SetPassword{LinkHash: hashA, Hash: pwHash}, err: domain.Invalid},
		{name: "set password of nobody", when: domain.SetPassword{LinkHash: hashA, Hash: pwHash}, err: domain.Invalid},
		{name: "a hash that is not argon2id", given: []domain.Payload{userCreated}, when: domain.SetPassword{LinkHash: hashA, Hash: "plain"}, err: domain.Internal},
		{
			name:  "a new link after the first was used",
			given: []domain.Payload{userCreated, passwordSet},
			when:  domain.IssuePasswordLink{LinkHash: hashB, LinkExpiresAt: linkExpiry},
			then:  []domain.Payload{domain.PasswordLinkIssued{UserID: userID, LinkHash: hashB, LinkExpiresAt: linkExpiry}},
		},
		{
			name:  "the new link works, the old one no longer",
			given: []domain.Payload{userCreated, domain.PasswordLinkIssued{UserID: userID, LinkHash: hashB, LinkExpiresAt: linkExpiry}},
			when:  domain.SetPassword{LinkHash: hashA, Hash: pwHash},
			err:   domain.Invalid,
		},
		{name: "link for nobody", when: domain.IssuePasswordLink{LinkHash: hashB, LinkExpiresAt: linkExpiry}, err: domain.NotFound},
		{name: "remove", given: []domain.Payload{userCreated}, when: domain.RemoveUser{}, then: []domain.Payload{domain.UserRemoved{UserID: userID}}},
		{name: "remove nobody", when: domain.RemoveUser{}, err: domain.NotFound},
		{name: "unknown command", when: struct{}{}, err: domain.Internal},
	})
}

func TestUserEvolve(t *testing.T) {
	u := given[domain.User](t, userKey, userCreated)
	if !u.Created || u.ID != userID || u.Email != "ada@example.com" || u.Account != "acme" || u.PasswordHash != "" || u.PasswordGen != 0 {
		t.Fatalf("after UserCreated: %+v", u)
	}
	u = given[domain.User](t, userKey, userCreated, passwordSet)
	if u.PasswordHash != pwHash || !u.LinkUsed || u.PasswordGen != 1 {
		t.Fatalf("after PasswordSet: %+v", u)
	}
	// Removed and created again: the generation keeps counting, so a
	// session of the first life stays refused.
	u = given[domain.User](t, userKey, userCreated, passwordSet, domain.UserRemoved{UserID: userID}, userCreated)
	if !u.Created || u.PasswordHash != "" || u.PasswordGen != 2 || u.LinkUsed {
		t.Fatalf("after removal and a new creation: %+v", u)
	}
}

func TestUserStreamIsTheNormalisedEmail(t *testing.T) {
	a, b := domain.UserStream("Ada@Example.com "), domain.UserStream("ada@example.com")
	if a != b || a.Aggregate != domain.AggUser || len(a.ID) != 32 || strings.ContainsAny(a.ID, ".*> ") {
		t.Fatalf("UserStream = %+v and %+v", a, b)
	}
	if domain.UserStream("bob@example.com") == a {
		t.Fatal("two emails share a stream")
	}
}

func TestCheckEmail(t *testing.T) {
	for _, tc := range []struct {
		name, email string
		ok          bool
	}{
		{"plain", "ada@example.com", true},
		{"plus", "ada+kino@mail.example.org", true},
		{"localhost", "root@localhost", true},
		{"empty", "", false},
		{"no at", "ada.example.com", false},
		{"no domain", "ada@", false},
		{"no local part", "@example.com", false},
		{"display name", "Ada <ada@example.com>", false},
		{"two ats", "a@b@example.com", false},
		{"space", "ada lovelace@example.com", false},
		{"newline", "ada@example.com\nBcc: x@example.com", false},
		{"bidi", "ada\u202e@example.com", false},
		{"dotless domain", "ada@example", false},
		{"too long", strings.Repeat("a", 250) + "@example.com", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := domain.CheckEmail("t", tc.email)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckEmail(%q) = %v; want ok %v", tc.email, err, tc.ok)
			}
			if err != nil && domain.KindOf(err) != domain.Invalid {
				t.Fatalf("kind %v", domain.KindOf(err))
			}
		})
	}
}

func TestCheckPassword(t *testing.T) {
	for _, tc := range []struct {
		name, pw string
		ok       bool
	}{
		{"ten characters", "0123456789", true},
		{"nine", "012345678", false},
		{"ten runes of two bytes", strings.Repeat("é", 10), true},
		{"256 bytes", strings.Repeat("x", 256), true},
		{"257 bytes", strings.Repeat("x", 257), false},
		{"not utf-8", "0123456789\xff", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := domain.CheckPassword("t", tc.pw); (err == nil) != tc.ok {
				t.Fatalf("CheckPassword = %v; want ok %v", err, tc.ok)
			}
		})
	}
}
