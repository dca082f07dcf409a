package accounts_test

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/transport/accounts"
)

// cheap argon2 parameters: the tests check the logic, not the cost.
var cheap = accounts.Argon2Params{Memory: 1024, Time: 1, Threads: 1}

func TestPasswordHashAndVerify(t *testing.T) {
	phc, err := accounts.HashPassword("correct horse battery", cheap, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(phc, "$argon2id$v=19$m=1024,t=1,p=1$") || strings.Contains(phc, "correct") {
		t.Fatalf("hash %q", phc)
	}
	if again, _ := accounts.HashPassword("correct horse battery", cheap, rand.Reader); again == phc {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	for _, tc := range []struct {
		name, pw string
		ok       bool
	}{
		{"right", "correct horse battery", true},
		{"wrong", "correct horse battery!", false},
		{"empty", "", false},
		{"case", "Correct horse battery", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := accounts.VerifyPassword(phc, tc.pw)
			if err != nil || ok != tc.ok {
				t.Fatalf("VerifyPassword = %v, %v; want %v", ok, err, tc.ok)
			}
		})
	}
	// Hashes kino did not write, or with costs that would take the server
	// down, are refused before any work.
	for _, bad := range []string{
		"", "plain", "$argon2i$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"$argon2id$v=19$m=4194304,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"$argon2id$v=19$m=1024,t=1000,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"$argon2id$v=19$m=1024,t=1,p=1$!!$aGFzaGhhc2hoYXNoaGFzaA",
		"$argon2id$v=16$m=1024,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
	} {
		if _, err := accounts.VerifyPassword(bad, "x"); err == nil {
			t.Errorf("VerifyPassword(%q) accepted it", bad)
		}
	}
}

// clock is a settable clock for the user service.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func openUsers(t *testing.T, s *eventstore.Store, cfg accounts.UsersConfig) *accounts.Users {
	t.Helper()
	if cfg.Argon2 == (accounts.Argon2Params{}) {
		cfg.Argon2 = cheap
	}
	u, err := open(context.Background(), s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// open opens the sessions buckets on s and the user service over them, as
// kino serve and the CLI do.
func open(ctx context.Context, s *eventstore.Store, cfg accounts.UsersConfig) (*accounts.Users, error) {
	ttl := cfg.SessionTTL
	if ttl <= 0 {
		ttl = accounts.DefaultSessionTTL
	}
	sessions, err := kv.OpenSessions(ctx, s, ttl)
	if err != nil {
		return nil, err
	}
	cfg.Warm = s.Manages()
	return accounts.NewUsers(s, sessions, cfg)
}

func TestUserPasswordLinkAndLogin(t *testing.T) {
	s := eventstoretest.Run(t)
	ctx := context.Background()
	clk := &clock{t: time.Now()}
	u := openUsers(t, s, accounts.UsersConfig{Now: clk.Now})
	if _, err := eventstore.Execute[domain.Account](ctx, s, domain.AccountStream("acme"), domain.CreateAccount{Slug: "acme", Plan: domain.PlanFree}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := u.CreateUser(ctx, accounts.NewUser{Email: "a@example.com", Account: "nope"}); domain.KindOf(err) != domain.NotFound {
		t.Fatalf("user of a missing account: %v", err)
	}
	res, token, err := u.CreateUser(ctx, accounts.NewUser{Email: " Ada@Example.com", Account: "acme", LinkTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	user := res.State
	if user.Email != "ada@example.com" || user.Account != "acme" || len(token) != 43 || user.LinkHash == token {
		t.Fatalf("created %+v with token %q", user, token)
	}
	if _, _, err := u.CreateUser(ctx, accounts.NewUser{Email: "ADA@example.com", Operator: true}); domain.KindOf(err) != domain.Conflict {
		t.Fatalf("a second user with the same email: %v; want a conflict", err)
	}
	// No password yet: no login.
	if _, err := u.Authenticate(ctx, "ada@example.com", ""); domain.KindOf(err) != domain.LoginFailed {
		t.Fatalf("login before a password is set: %v", err)
	}
	const pw = "a long enough password"
	for _, tc := range []struct {
		name, token, pw string
	}{
		{"short password", token, "short"},
		{"wrong token", strings.Repeat("A", 43), pw},
		{"malformed token", "x", pw},
	} {
		if _, err := u.SetPassword(ctx, "ada@example.com", tc.token, tc.pw); domain.KindOf(err) != domain.Invalid {
			t.Fatalf("%s: %v; want invalid", tc.name, err)
		}
	}
	if _, err := u.SetPassword(ctx, "ada@example.com", token, pw); err != nil {
		t.Fatal(err)
	}
	if _, err := u.SetPassword(ctx, "ada@example.com", token, pw+"2"); domain.KindOf(err) != domain.Invalid {
		t.Fatalf("a link used twice: %v", err)
	}
	got, err := u.Authenticate(ctx, "ADA@example.com ", pw)
	if err != nil || got.ID != user.ID || got.PasswordGen != 1 {
		t.Fatalf("login = %+v, %v", got, err)
	}
	for _, tc := range []struct{ name, email, pw string }{
		{"wrong password", "ada@example.com", pw + "!"},
		{"unknown email", "eve@example.com", pw},
		{"not an email", "eve", pw},
		{"huge password", "ada@example.com", strings.Repeat("x", 10000)},
	} {
		if _, err := u.Authenticate(ctx, tc.email, tc.pw); domain.KindOf(err) != domain.LoginFailed {
			t.Fatalf("%s: %v; want bad credentials", tc.name, err)
		}
	}
	// An expired link is refused; a new one works.
	_, token2, err := u.IssuePasswordLink(ctx, "ada@example.com", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Minute)
	if _, err := u.SetPassword(ctx, "ada@example.com", token2, pw); domain.KindOf(err) != domain.Invalid {
		t.Fatalf("an expired link: %v", err)
	}
}

func TestSessions(t *testing.T) {
	s := eventstoretest.Run(t)
	ctx := context.Background()
	clk := &clock{t: time.Now()}
	u := openUsers(t, s, accounts.UsersConfig{Now: clk.Now, SessionTTL: time.Hour, SessionMaxAge: 3 * time.Hour})
	user := domain.User{ID: "u1", Key: "k1", Email: "ada@example.com", Account: "acme", PasswordGen: 2}

	id, _, err := u.NewSession(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	sess, ok, err := u.Session(ctx, id)
	if err != nil || !ok || sess.UserID != "u1" || sess.Account != "acme" || sess.Gen != 2 || sess.Operator {
		t.Fatalf("Session = %+v, %v, %v", sess, ok, err)
	}
	for _, other := range []string{"", "x", strings.Repeat("A", 43), id + "A"} {
		if _, ok, err := u.Session(ctx, other); ok || err != nil {
			t.Fatalf("Session(%q) = %v, %v", other, ok, err)
		}
	}
	// Used within the idle TTL, it lives on; past its absolute age, it ends.
	for range 3 {
		clk.Add(50 * time.Minute)
		if _, ok, _ := u.Session(ctx, id); !ok {
			t.Fatalf("a session in use ended at %s", clk.Now())
		}
	}
	clk.Add(50 * time.Minute) // 3 h 20 min after login
	if _, ok, _ := u.Session(ctx, id); ok {
		t.Fatal("a session outlived its absolute lifetime")
	}
	// Idle for the TTL, it ends.
	id, _, _ = u.NewSession(ctx, user)
	clk.Add(time.Hour)
	if _, ok, _ := u.Session(ctx, id); ok {
		t.Fatal("an idle session lived on")
	}
	// Logout ends it.
	id, _, _ = u.NewSession(ctx, user)
	if err := u.EndSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := u.Session(ctx, id); ok {
		t.Fatal("a session lived on after logout")
	}
	if err := u.EndSession(ctx, id); err != nil {
		t.Fatalf("ending an ended session: %v", err)
	}
}

// The bucket's TTL removes a session nobody uses, by the server's clock
// (the service's clock stands still here, so reading never refreshes it).
func TestSessionBucketTTLRemovesIdleSessions(t *testing.T) {
	s := eventstoretest.Run(t)
	ctx := context.Background()
	still := time.Now()
	u := openUsers(t, s, accounts.UsersConfig{SessionTTL: time.Second, Now: func() time.Time { return still }})
	id, _, err := u.NewSession(ctx, domain.User{ID: "u1", Email: "a@example.com", Operator: true})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, ok, err := u.Session(ctx, id); err != nil {
			t.Fatal(err)
		} else if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session is still there long after its TTL")
		}
		time.Sleep(50 * time.Millisecond) // polling, not waiting for a fixed time
	}
}

func TestKeyLastUsed(t *testing.T) {
	s := eventstoretest.Run(t)
	ctx := context.Background()
	u := openUsers(t, s, accounts.UsersConfig{})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	u.KeyUsed("01JKEY0000000000000000000A", at)
	u.KeyUsed("01JKEY0000000000000000000A", at.Add(time.Second)) // within a minute: not written
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := u.KeyLastUsed(ctx, []string{"01JKEY0000000000000000000A", "01JKEY0000000000000000000B"})
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := m["01JKEY0000000000000000000A"]; ok {
			if !got.Equal(at) || len(m) != 1 {
				t.Fatalf("last used = %v", m)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the key's use was never recorded")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A worker's NATS role reads neither the sessions nor the keys' use.
func TestWorkerRoleCannotReadSessions(t *testing.T) {
	ctx := context.Background()
	srv := eventstoretest.Server(t, t.TempDir())
	serve := eventstoretest.Open(t, srv.URL(), srv.Auth(eventstore.RoleServe))
	u := openUsers(t, serve, accounts.UsersConfig{})
	if _, _, err := u.NewSession(ctx, domain.User{ID: "u1", Email: "a@example.com", Operator: true}); err != nil {
		t.Fatal(err)
	}
	// The admin role (the operator's CLI) may.
	admin, err := eventstore.Open(ctx, eventstore.Config{URL: srv.URL(), Auth: srv.Auth(eventstore.RoleAdmin), Name: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := open(ctx, admin, accounts.UsersConfig{Argon2: cheap}); err != nil {
		t.Fatalf("admin opens the user service: %v", err)
	}

	violations := make(chan error, 16)
	nc, err := nats.Connect(srv.URL(), eventstoretest.Seed(t, srv, eventstore.RoleWorker), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		violations <- err
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, subject := range []string{
		"$JS.API.DIRECT.GET.KV_" + kv.SessionsBucket,
		"$JS.API.DIRECT.GET.KV_" + kv.SessionsBucket + ".$KV." + kv.SessionsBucket + ".abc",
		"$JS.API.STREAM.MSG.GET.KV_" + kv.SessionsBucket,
		"$JS.API.DIRECT.GET.KV_" + kv.KeyUsageBucket,
		"$KV." + kv.SessionsBucket + ".abc",
		"user.0123456789abcdef0123456789abcdef." + domain.TypePasswordSet,
	} {
		t.Run(subject, func(t *testing.T) {
			if err := nc.PublishRequest(subject, nc.NewRespInbox(), []byte(`{"seq":1}`)); err != nil {
				t.Fatal(err)
			}
			eventstoretest.WaitViolation(t, violations, subject)
		})
	}
}

// On a cluster, a session begun through one node is served (and ended)
// through another: nothing about it lives in a node's memory.
func TestSessionsAcrossClusterNodes(t *testing.T) {
	ctx := context.Background()
	c := eventstoretest.StartCluster(t, 3)
	a, b := c.Open(0, 3), c.Open(1, 3)
	ua, ub := openUsers(t, a, accounts.UsersConfig{}), openUsers(t, b, accounts.UsersConfig{})
	id, _, err := ua.NewSession(ctx, domain.User{ID: "u1", Email: "a@example.com", Account: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if sess, ok, err := ub.Session(ctx, id); err != nil || !ok || sess.UserID != "u1" {
		t.Fatalf("the other node: %+v %v %v", sess, ok, err)
	}
	if err := ub.EndSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ua.Session(ctx, id); err != nil || ok {
		t.Fatalf("ended on one node, alive on the other: %v %v", ok, err)
	}
}
