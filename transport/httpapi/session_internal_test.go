package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/accounts"
)

// withUsers enables logins, with cheap argon2 parameters: these tests
// check the logic, not the cost.
func withUsers(t *testing.T) func(*Config) {
	return func(c *Config) {
		sessions, err := kv.OpenSessions(context.Background(), c.Store.(*eventstore.Store), accounts.DefaultSessionTTL)
		if err != nil {
			t.Fatal(err)
		}
		u, err := accounts.NewUsers(c.Store, sessions, accounts.UsersConfig{Argon2: accounts.Argon2Params{Memory: 1024, Time: 1, Threads: 1}})
		if err != nil {
			t.Fatal(err)
		}
		c.Users = u
	}
}

const testPassword = "a long enough password"

// user creates a user (of account, or an operator when account is "")
// and sets its password through its link, over HTTP; it returns the
// session cookie that gave.
func (a *testAPI) user(email, account string) *http.Cookie {
	a.t.Helper()
	res, token, err := a.s.cfg.Users.CreateUser(context.Background(), accounts.NewUser{Email: email, Account: account, Operator: account == ""})
	if err != nil {
		a.t.Fatal(err)
	}
	a.settle(res.LastSeq())
	r := a.post("/auth/password", `{"token":"`+token+`","password":"`+testPassword+`"}`, nil)
	if r.status != 200 {
		a.t.Fatalf("set password: %d %s", r.status, r.body)
	}
	return sessionOf(a.t, r)
}

func sessionOf(t *testing.T, r response) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == sessionCookie || c.Name == secureSessionCookie {
			return c
		}
	}
	t.Fatalf("no session cookie in %v", r.header)
	return nil
}

// send makes a request with a session cookie (nil: none) and extra headers.
func (a *testAPI) send(method, path, body string, cookie *http.Cookie, header ...string) response {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if cookie != nil {
		req.AddCookie(&http.Cookie{Name: cookie.Name, Value: cookie.Value})
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return a.request(req, "")
}

func (a *testAPI) post(path, body string, cookie *http.Cookie, header ...string) response {
	a.t.Helper()
	return a.send("POST", path, body, cookie, header...)
}

func (a *testAPI) login(email, pw string, header ...string) response {
	a.t.Helper()
	return a.post("/auth/login", `{"email":"`+email+`","password":"`+pw+`"}`, nil, header...)
}

func TestLoginMeLogout(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, withUsers(t))
	a.account("acme", domain.PlanFree)
	first := a.user("ada@example.com", "acme")
	if !first.HttpOnly || first.SameSite != http.SameSiteLaxMode || first.Secure || first.Path != "/" || first.Name != sessionCookie {
		t.Fatalf("cookie %+v", first)
	}

	wantError(t, a.login("ada@example.com", testPassword+"!"), 401, "Invalid credentials")
	wantError(t, a.login("nobody@example.com", testPassword), 401, "Invalid credentials")
	wantError(t, a.post("/auth/login", `{"email":`, nil), 400, "Bad request")
	r := a.login("ADA@example.com", testPassword)
	if r.status != 200 {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	var ans struct {
		User     Identity `json:"user"`
		Redirect string   `json:"redirect"`
	}
	if err := json.Unmarshal(r.body, &ans); err != nil || ans.User.Email != "ada@example.com" || ans.User.Account != "acme" || ans.User.Operator || ans.Redirect != "/" || ans.User.UserID == "" {
		t.Fatalf("login answered %s", r.body)
	}
	second := sessionOf(t, r)
	if second.Value == first.Value {
		t.Fatal("two logins share a session id")
	}

	me := a.send("GET", "/auth/me", "", second)
	var who Identity
	if me.status != 200 || json.Unmarshal(me.body, &who) != nil || who != ans.User {
		t.Fatalf("me: %d %s", me.status, me.body)
	}
	wantError(t, a.send("GET", "/auth/me", "", nil), 401, "Unauthorized")
	wantError(t, a.send("GET", "/auth/me", "", &http.Cookie{Name: sessionCookie, Value: strings.Repeat("A", 43)}), 401, "Unauthorized")

	out := a.post("/auth/logout", "", second)
	if out.status != 204 {
		t.Fatalf("logout: %d %s", out.status, out.body)
	}
	if c := sessionOf(t, out); c.MaxAge >= 0 || c.Value != "" {
		t.Fatalf("logout left the cookie %+v", c)
	}
	wantError(t, a.send("GET", "/auth/me", "", second), 401, "Unauthorized")
	if r := a.send("GET", "/auth/me", "", first); r.status != 200 {
		t.Fatalf("logging out one session ended another: %d", r.status)
	}
}

func TestOperatorLoginRedirectsToAdmin(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, withUsers(t))
	a.user("op@example.com", "")
	r := a.login("op@example.com", testPassword)
	if r.status != 200 || !strings.Contains(string(r.body), `"redirect":"/admin"`) || !strings.Contains(string(r.body), `"operator":true`) {
		t.Fatalf("operator login: %d %s", r.status, r.body)
	}
}

func TestPasswordLinkWorksOnce(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, withUsers(t))
	a.account("acme", domain.PlanFree)
	res, token, err := a.s.cfg.Users.CreateUser(context.Background(), accounts.NewUser{Email: "ada@example.com", Account: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	a.settle(res.LastSeq())
	wantError(t, a.post("/auth/password", `{"token":"`+token+`","password":"short"}`, nil), 400, "Bad request")
	wantError(t, a.post("/auth/password", `{"token":"`+strings.Repeat("x", 43)+`","password":"`+testPassword+`"}`, nil), 400, "Bad request")
	if r := a.post("/auth/password", `{"token":"`+token+`","password":"`+testPassword+`"}`, nil); r.status != 200 {
		t.Fatalf("set password: %d %s", r.status, r.body)
	}
	wantError(t, a.post("/auth/password", `{"token":"`+token+`","password":"`+testPassword+`2"}`, nil), 400, "Bad request")
	if r := a.login("ada@example.com", testPassword); r.status != 200 {
		t.Fatalf("login with the password set: %d %s", r.status, r.body)
	}
}

// A new password ends the sessions begun with the old one; removing the
// user ends them all.
func TestSessionsEndWithThePassword(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, withUsers(t))
	a.account("acme", domain.PlanFree)
	old := a.user("ada@example.com", "acme")
	res, token, err := a.s.cfg.Users.IssuePasswordLink(context.Background(), "ada@example.com", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	a.settle(res.LastSeq())
	r := a.post("/auth/password", `{"token":"`+token+`","password":"another long password"}`, nil)
	if r.status != 200 {
		t.Fatalf("new password: %d %s", r.status, r.body)
	}
	fresh := sessionOf(t, r)
	wantError(t, a.send("GET", "/auth/me", "", old), 401, "Unauthorized")
	if r := a.send("GET", "/v1/videos", "", fresh); r.status != 200 {
		t.Fatalf("the new session: %d %s", r.status, r.body)
	}
	res, err = eventstore.Execute[domain.User](context.Background(), a.store, domain.UserStream("ada@example.com"), domain.RemoveUser{})
	if err != nil {
		t.Fatal(err)
	}
	a.settle(res.LastSeq())
	wantError(t, a.send("GET", "/v1/videos", "", fresh), 401, "Unauthorized")
}

// A session cookie authenticates every /v1 route of the user's account,
// never another account's things; an Authorization header wins over it.
func TestCookieAuthOnV1(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, withUsers(t))
	acmeKey := a.account("acme", domain.PlanFree)
	umbrellaKey := a.account("umbrella", domain.PlanFree)
	ada := a.user("ada@example.com", "acme")
	bob := a.user("bob@example.com", "umbrella")
	op := a.user("op@example.com", "")

	up := a.upload(acmeKey, "clip.mp4", video(1000))
	if up.status != 202 {
		t.Fatalf("upload: %d %s", up.status, up.body)
	}
	var up2 struct{ Video struct{ ID string } }
	_ = json.Unmarshal(up.body, &up2)
	v := up2.Video

	r := a.send("GET", "/v1/videos/"+v.ID, "", ada)
	if r.status != 200 || r.header.Get("X-RateLimit-Limit") == "" {
		t.Fatalf("ada's own video: %d %s", r.status, r.body)
	}
	wantError(t, a.send("GET", "/v1/videos/"+v.ID, "", bob), 404, "Not found")
	wantError(t, a.send("GET", "/v1/videos", "", op), 403, "Forbidden")
	// Authorization wins: ada's cookie with umbrella's key is umbrella.
	req, _ := http.NewRequest("GET", a.srv.URL+"/v1/videos/"+v.ID, nil)
	req.AddCookie(&http.Cookie{Name: ada.Name, Value: ada.Value})
	wantError(t, a.request(req, umbrellaKey), 404, "Not found")
	// A write through the cookie is the account's.
	if r := a.post("/v1/collections", `{"slug":"web","name":"Web"}`, ada); r.status != 201 {
		t.Fatalf("create collection with the cookie: %d %s", r.status, r.body)
	}
	if r := a.do("GET", "/v1/collections/web", acmeKey, ""); r.status != 200 {
		t.Fatalf("the account's key sees it: %d", r.status)
	}
}

// Cookie-authenticated unsafe requests from another origin are refused;
// same-origin ones and API-key requests pass.
func TestCrossOriginProtection(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, withUsers(t))
	key := a.account("acme", domain.PlanFree)
	ada := a.user("ada@example.com", "acme")
	wantError(t, a.post("/v1/collections", `{"slug":"x","name":"X"}`, ada, "Sec-Fetch-Site", "cross-site"), 403, "Forbidden")
	wantError(t, a.post("/v1/collections", `{"slug":"x","name":"X"}`, ada, "Origin", "https://evil.example"), 403, "Forbidden")
	wantError(t, a.send("DELETE", "/v1/collections/main", "", ada, "Sec-Fetch-Site", "cross-site"), 403, "Forbidden")
	if r := a.post("/v1/collections", `{"slug":"x","name":"X"}`, ada, "Sec-Fetch-Site", "same-origin"); r.status != 201 {
		t.Fatalf("same-origin: %d %s", r.status, r.body)
	}
	if r := a.send("GET", "/v1/collections", "", ada, "Sec-Fetch-Site", "cross-site"); r.status != 200 {
		t.Fatalf("a cross-site GET: %d %s", r.status, r.body)
	}
	req, _ := http.NewRequest("POST", a.srv.URL+"/v1/collections", strings.NewReader(`{"slug":"y","name":"Y"}`))
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if r := a.request(req, key); r.status != 201 {
		t.Fatalf("an API key from anywhere: %d %s", r.status, r.body)
	}
	// A POST is checked as a POST, even when X-HTTP-Method-Override makes
	// it a HEAD of a tus upload.
	wantError(t, a.post("/v1/uploads/tus/01ARZ3NDEKTSV4RRFFQ69G5FAV", "", ada, "Sec-Fetch-Site", "cross-site",
		"X-HTTP-Method-Override", "HEAD", "Tus-Resumable", "1.0.0"), 403, "Forbidden")
	wantError(t, a.login("ada@example.com", testPassword, "Sec-Fetch-Site", "cross-site"), 403, "Forbidden")
	wantError(t, a.post("/auth/logout", "", ada, "Origin", "https://evil.example"), 403, "Forbidden")
	if r := a.send("GET", "/auth/me", "", ada); r.status != 200 {
		t.Fatal("the refused logout logged out")
	}
}

func TestLoginLimits(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, withUsers(t), func(c *Config) {
		c.Limits.LoginsPerAddress, c.Limits.LoginsPerUser = 3, 2
		c.Limits.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	a.account("acme", domain.PlanFree)
	a.user("ada@example.com", "acme") // its password link counts against 127.0.0.1, not the clients below
	from := func(client, email string) response {
		return a.login(email, "wrong password!", "X-Forwarded-For", client)
	}
	wantError(t, from("192.0.2.1", "ada@example.com"), 401, "Invalid credentials")
	wantError(t, from("192.0.2.1", "ada@example.com"), 401, "Invalid credentials")
	r := from("192.0.2.1", "ada@example.com")
	wantError(t, r, 429, "Rate limit exceeded") // the email's limit
	if r.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	wantError(t, from("192.0.2.2", "Ada@example.com"), 429, "Rate limit exceeded") // from anywhere
	wantError(t, from("192.0.2.1", "bob@example.com"), 429, "Rate limit exceeded") // the address's limit
	wantError(t, from("192.0.2.3", "bob@example.com"), 401, "Invalid credentials")
	// Even the right password waits.
	wantError(t, a.login("ada@example.com", testPassword, "X-Forwarded-For", "192.0.2.4"), 429, "Rate limit exceeded")
	a.clock.Set(a.clock.Now().Add(time.Minute))
	if r := a.login("ada@example.com", testPassword, "X-Forwarded-For", "192.0.2.1"); r.status != 200 {
		t.Fatalf("a minute later: %d %s", r.status, r.body)
	}
}

func TestKeysFromTheDashboard(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, withUsers(t))
	acmeKey := a.account("acme", domain.PlanFree)
	umbrellaKey := a.account("umbrella", domain.PlanFree)
	ada := a.user("ada@example.com", "acme")
	bob := a.user("bob@example.com", "umbrella")

	// API keys do not manage keys.
	wantError(t, a.do("GET", "/v1/keys", acmeKey, ""), 403, "Forbidden")
	wantError(t, a.do("POST", "/v1/keys", acmeKey, `{"label":"x"}`), 403, "Forbidden")

	r := a.post("/v1/keys", `{"label":"ci"}`, ada)
	if r.status != 201 {
		t.Fatalf("create key: %d %s", r.status, r.body)
	}
	var created struct {
		ID, Key, Prefix, Label, CreatedAt string
	}
	if err := json.Unmarshal(r.body, &created); err != nil || !domain.WellFormedKey(created.Key) || created.Label != "ci" ||
		!strings.HasPrefix(created.Key, created.Prefix) || created.ID == "" || created.CreatedAt == "" {
		t.Fatalf("created %s", r.body)
	}
	wantError(t, a.post("/v1/keys", `{"label":"bad\u202elabel"}`, ada), 400, "Bad request")

	// The new key works on the API, and its use shows in the list.
	if r := a.do("GET", "/v1/videos", created.Key, ""); r.status != 200 {
		t.Fatalf("the new key: %d %s", r.status, r.body)
	}
	type keyView struct {
		ID         string
		LastUsedAt *string
	}
	var list struct{ Data []keyView }
	eventstoretest.Eventually(t, "the key's last use", func() bool {
		r := a.send("GET", "/v1/keys", "", ada)
		if r.status != 200 || json.Unmarshal(r.body, &list) != nil {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		for _, k := range list.Data {
			if k.ID == created.ID {
				return k.LastUsedAt != nil
			}
		}
		t.Fatalf("the new key is not listed: %s", r.body)
		return false
	})
	if len(list.Data) != 2 || strings.Contains(string(a.send("GET", "/v1/keys", "", ada).body), created.Key) {
		t.Fatalf("list %+v (the key itself must never be listed)", list.Data)
	}

	// Another account's key is not found, and stays alive.
	var theirs struct{ Data []keyView }
	_ = json.Unmarshal(a.send("GET", "/v1/keys", "", bob).body, &theirs)
	if len(theirs.Data) != 1 {
		t.Fatalf("bob's keys: %+v", theirs)
	}
	wantError(t, a.send("DELETE", "/v1/keys/"+theirs.Data[0].ID, "", ada), 404, "Not found")
	if r := a.do("GET", "/v1/videos", umbrellaKey, ""); r.status != 200 {
		t.Fatal("ada revoked bob's key")
	}
	if r := a.send("DELETE", "/v1/keys/"+created.ID, "", ada); r.status != 204 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	wantError(t, a.do("GET", "/v1/videos", created.Key, ""), 401, "Invalid API key")
	wantError(t, a.send("DELETE", "/v1/keys/"+created.ID, "", ada), 404, "Not found")
}

func TestOperatorOnly(t *testing.T) {
	t.Parallel()
	const token = "0123456789abcdef0123456789abcdef"
	a := newTestAPI(t, withUsers(t), func(c *Config) {
		c.Admin.Token = token
		c.Origin.PublicURL = "https://kino.example.com"
	})
	a.account("acme", domain.PlanFree)
	op := a.user("op@example.com", "")
	ada := a.user("ada@example.com", "acme")

	wantError(t, a.send("GET", "/v1/admin/users", "", ada), 403, "Forbidden")
	wantError(t, a.send("GET", "/v1/admin/users", "", nil), 401, "Missing API key")
	wantError(t, a.do("GET", "/v1/admin/users", "wrong", ""), 401, "Invalid API key")
	r := a.post("/v1/admin/users", `{"email":"carol@example.com","account":"acme"}`, op)
	if r.status != 201 {
		t.Fatalf("create user: %d %s", r.status, r.body)
	}
	var created struct {
		User userView
		Link string
	}
	if err := json.Unmarshal(r.body, &created); err != nil || created.User.Email != "carol@example.com" || created.User.PasswordSet {
		t.Fatalf("created %s", r.body)
	}
	link, err := url.Parse(created.Link)
	if err != nil || link.Scheme+"://"+link.Host != "https://kino.example.com" || link.Path != "/password" {
		t.Fatalf("link %q", created.Link)
	}
	wantError(t, a.post("/v1/admin/users", `{"email":"carol@example.com","operator":true}`, op), 409, "Conflict")
	wantError(t, a.post("/v1/admin/users", `{"email":"dan@example.com","account":"nope"}`, op), 404, "Not found")
	wantError(t, a.post("/v1/admin/users", `{"email":"dan@example.com","account":"acme","operator":true}`, op), 400, "Bad request")
	wantError(t, a.post("/v1/admin/users", `{"email":"dan@example.com","operator":true}`, op, "Sec-Fetch-Site", "cross-site"), 403, "Forbidden")

	set := a.post("/auth/password", `{"token":"`+link.Query().Get("token")+`","password":"`+testPassword+`"}`, nil)
	if set.status != 200 {
		t.Fatalf("the link: %d %s", set.status, set.body)
	}
	if c := sessionOf(t, set); c.Name != secureSessionCookie || !c.Secure {
		t.Fatalf("with an https public URL the cookie is %+v", c)
	}

	// The admin token still works.
	r = a.do("GET", "/v1/admin/users", token, "")
	var list struct{ Data []userView }
	if r.status != 200 || json.Unmarshal(r.body, &list) != nil || len(list.Data) != 3 {
		t.Fatalf("users by token: %d %s", r.status, r.body)
	}
	r = a.do("GET", "/v1/admin/users?account=acme", token, "")
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Data) != 2 {
		t.Fatalf("acme's users: %s", r.body)
	}
	for _, u := range list.Data {
		if u.Email == "carol@example.com" && !u.PasswordSet {
			t.Fatalf("carol's password is set: %+v", u)
		}
	}
}

// The cookie is Secure (and __Host-) when the browser came over HTTPS: by
// TLS, or by a trusted proxy's X-Forwarded-Proto; an untrusted peer's
// header is ignored.
func TestSecureCookieBehindAProxy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		trusted string
		secure  bool
	}{
		{"trusted proxy", "127.0.0.0/8", true},
		{"untrusted peer", "192.0.2.0/24", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAPI(t, withUsers(t), func(c *Config) {
				c.Limits.TrustedProxies = []netip.Prefix{netip.MustParsePrefix(tc.trusted)}
			})
			a.user("op@example.com", "")
			r := a.login("op@example.com", testPassword, "X-Forwarded-Proto", "https")
			c := sessionOf(t, r)
			if c.Secure != tc.secure || (c.Name == secureSessionCookie) != tc.secure {
				t.Fatalf("cookie %+v", c)
			}
			// Read back under the same name.
			if r := a.send("GET", "/auth/me", "", c, "X-Forwarded-Proto", "https"); r.status != 200 {
				t.Fatalf("me: %d %s", r.status, r.body)
			}
		})
	}
}

// A logged-in browser has a budget of its own: an account whose API keys
// used up the plan's minute still reaches its dashboard, and a dashboard
// left polling never spends what the keys need. GET /v1/account through
// the browser reports the keys' budget without spending it.
func TestBrowserHasItsOwnRateBudget(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, withUsers(t), func(c *Config) {
		p := testPlans()
		l := p[domain.PlanFree]
		l.RequestsPerMinute = 3
		p[domain.PlanFree] = l
		c.Plans = p
	})
	key := a.account("acme", domain.PlanFree)
	ada := a.user("ada@example.com", "acme")
	for i := 0; ; i++ { // the keys spend the plan's minute
		r := a.do("GET", "/v1/videos", key, "")
		if r.status == 429 {
			break
		}
		if r.status != 200 || i == 3 {
			t.Fatalf("key request %d: %d %s", i, r.status, r.body)
		}
	}

	r := a.send("GET", "/v1/videos", "", ada)
	if r.status != 200 || r.header.Get("X-RateLimit-Limit") != strconv.Itoa(SessionRequestsPerMinute) {
		t.Fatalf("the browser after the keys' minute ran out: %d limit %q %s", r.status, r.header.Get("X-RateLimit-Limit"), r.body)
	}
	r = a.send("GET", "/v1/account", "", ada)
	var acct struct {
		RateLimit struct{ Limit, Remaining int }
	}
	if err := json.Unmarshal(r.body, &acct); err != nil || r.status != 200 {
		t.Fatalf("account: %d %s", r.status, r.body)
	}
	if acct.RateLimit.Limit != 3 || acct.RateLimit.Remaining != 0 {
		t.Fatalf("the browser is told the keys' budget: %+v", acct.RateLimit)
	}
	// The browser's requests spent none of the keys' budget: still refused.
	wantError(t, a.do("GET", "/v1/videos", key, ""), 429, "Rate limit exceeded")
}

// A node whose read models do not know the user yet (a node catching up,
// or rebuilding) answers 503 and leaves the session alone: sessions are
// shared by every node, and one lagging node must not log everyone out.
func TestLaggingReadModelsDoNotEndSessions(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, withUsers(t))
	a.account("acme", domain.PlanFree)
	ada := a.user("ada@example.com", "acme")

	// A second node on the same NATS whose read models are empty and whose
	// projector never runs: it cannot catch up.
	srv := a.stoppedNode(0)
	req, _ := http.NewRequest("GET", srv.URL+"/auth/me", nil)
	req.AddCookie(&http.Cookie{Name: ada.Name, Value: ada.Value})
	wantError(t, a.request(req, ""), 503, "Service unavailable")

	if r := a.send("GET", "/auth/me", "", ada); r.status != 200 {
		t.Fatalf("the session after a lagging node saw it: %d %s", r.status, r.body)
	}
}

// A node whose read models hold the user as it was before a new password
// or its removal through another node does not honour the user's older
// sessions: it answers 503 until it has caught up, never 200.
func TestLaggingNodeRefusesSessionsEndedElsewhere(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, withUsers(t))
	a.account("acme", domain.PlanFree)
	ada := a.user("ada@example.com", "acme")

	// A second node on the same NATS whose projector follows the stream up
	// to here, then stops.
	last, err := a.store.LastSeq(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	srv := a.stoppedNode(last)
	me := func() response {
		req, _ := http.NewRequest("GET", srv.URL+"/auth/me", nil)
		req.AddCookie(&http.Cookie{Name: ada.Name, Value: ada.Value})
		return a.request(req, "")
	}
	if r := me(); r.status != 200 {
		t.Fatalf("the session on the stopped node before any change: %d %s", r.status, r.body)
	}

	// A new password through the first node: its old sessions end there,
	// and the stopped node, which still holds the old password, refuses
	// them too (without ending them: it cannot tell).
	res, token, err := a.s.cfg.Users.IssuePasswordLink(context.Background(), "ada@example.com", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	a.settle(res.LastSeq())
	if r := a.post("/auth/password", `{"token":"`+token+`","password":"another long password"}`, nil); r.status != 200 {
		t.Fatalf("new password: %d %s", r.status, r.body)
	}
	wantError(t, me(), 503, "Service unavailable")
	wantError(t, a.send("GET", "/auth/me", "", ada), 401, "Unauthorized")
}

// stoppedNode serves the API as a second node on the same NATS would,
// with read models of its own whose projector follows the stream up to
// sequence upTo (not at all when 0), then stops.
func (a *testAPI) stoppedNode(upTo uint64) *httptest.Server {
	a.t.Helper()
	db, err := projections.OpenDB(filepath.Join(a.t.TempDir(), "projections.db"))
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { db.Close() })
	proj, err := projections.NewProjector(db, a.store, a.s.cfg.Log)
	if err != nil {
		a.t.Fatal(err)
	}
	if upTo > 0 {
		ctx, stop := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- proj.Run(ctx) }()
		wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := proj.WaitFor(wctx, upTo); err != nil {
			a.t.Fatal(err)
		}
		stop()
		<-ran
	}
	cfg := a.s.cfg
	cfg.DB, cfg.Projector = db, proj
	node, err := New(cfg)
	if err != nil {
		a.t.Fatal(err)
	}
	srv := httptest.NewServer(node.Handler())
	a.t.Cleanup(srv.Close)
	return srv
}

// Made-up session cookies on /auth/me (which every dashboard page asks)
// count against the client address like wrong keys: past the limit, 429.
func TestMadeUpSessionCookiesAreLimited(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, withUsers(t), func(c *Config) { c.Limits.AuthFailuresPerMinute = 5 })
	for i := range 5 {
		r := a.send("GET", "/auth/me", "", &http.Cookie{Name: sessionCookie, Value: fmt.Sprintf("made-up-%d", i)})
		wantError(t, r, 401, "Unauthorized")
	}
	wantError(t, a.send("GET", "/auth/me", "", &http.Cookie{Name: sessionCookie, Value: "made-up-6"}), 429, "Rate limit exceeded")
}
