package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

// post sends a JSON body to path with a session cookie (nil: none).
func (h *harness) post(path, body string, cookie *http.Cookie) (int, *http.Cookie, string) {
	h.t.Helper()
	req, err := http.NewRequest("POST", h.url+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var got *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "kino_session" {
			got = &http.Cookie{Name: c.Name, Value: c.Value}
		}
	}
	return resp.StatusCode, got, string(b)
}

// cookieDo sends a request with a session cookie and checks the exchange
// against docs/openapi.yaml, as h.request does for API keys.
func (h *harness) cookieDo(method, path string, cookie *http.Cookie, body string) response {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.url+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	req.AddCookie(cookie)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	var sent []byte
	if body != "" {
		sent = []byte(body)
	}
	r := h.api.Send(req, sent)
	return response{status: r.Status, header: r.Header, body: r.Body}
}

// The dashboard's key routes and the operator's user routes answer as
// docs/openapi.yaml says.
func TestKeysAndUsersMatchTheContract(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir())
	key := h.account("acme", domain.PlanFree)
	login := func(args ...string) *http.Cookie {
		t.Helper()
		link, err := url.Parse(lastLine(h.mustCLI(append([]string{"users", "create"}, args...)...)))
		if err != nil {
			t.Fatal(err)
		}
		status, cookie, answer := h.post("/auth/password", `{"token":"`+link.Query().Get("token")+`","password":"a long enough password"}`, nil)
		if status != 200 || cookie == nil {
			t.Fatalf("set password: %d %s", status, answer)
		}
		return cookie
	}
	ada, op := login("acme", "ada@example.com"), login("--operator", "op@example.com")

	r := h.cookieDo("POST", "/v1/keys", ada, `{"label":"ci"}`)
	wantStatus(t, r, 201)
	id, _ := r.json(t)["id"].(string)
	wantStatus(t, h.do("GET", "/v1/videos", key, nil), 200) // a last use to list
	wantStatus(t, h.cookieDo("GET", "/v1/keys", ada, ""), 200)
	wantError(t, h.do("GET", "/v1/keys", key, nil), 403, "Forbidden")
	wantStatus(t, h.cookieDo("DELETE", "/v1/keys/"+id, ada, ""), 204)
	wantError(t, h.cookieDo("DELETE", "/v1/keys/"+id, ada, ""), 404, "Not found")

	wantStatus(t, h.cookieDo("POST", "/v1/admin/users", op, `{"email":"bob@example.com","account":"acme"}`), 201)
	wantStatus(t, h.cookieDo("GET", "/v1/admin/users", op, ""), 200)
	wantError(t, h.cookieDo("GET", "/v1/admin/users", ada, ""), 403, "Forbidden")
	wantError(t, h.cookieDo("POST", "/v1/admin/users", op, `{"email":"bob@example.com","operator":true}`), 409, "Conflict")
}

// The operator creates users with the CLI; the link it prints sets the
// password once and logs in; the session then works on the API.
func TestUsersCLIPrintsALinkThatWorksOnce(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir())
	h.account("acme", domain.PlanFree)

	out := h.mustCLI("users", "create", "acme", "Ada@Example.com", "--url", h.url)
	link, err := url.Parse(lastLine(out))
	if err != nil || link.Path != "/password" || !strings.HasPrefix(lastLine(out), h.url+"/password?token=") {
		t.Fatalf("kino users create printed %q", out)
	}
	token := link.Query().Get("token")
	body := `{"token":"` + token + `","password":"a long enough password"}`
	status, cookie, answer := h.post("/auth/password", body, nil)
	if status != 200 || cookie == nil || !strings.Contains(answer, `"email":"ada@example.com"`) {
		t.Fatalf("the link: %d %s", status, answer)
	}
	if status, _, answer := h.post("/auth/password", body, nil); status != 400 {
		t.Fatalf("the link a second time: %d %s", status, answer)
	}
	req, _ := http.NewRequest("GET", h.url+"/v1/videos", nil)
	req.AddCookie(cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the session on the API: %d", resp.StatusCode)
	}
	if status, _, answer := h.post("/auth/login", `{"email":"ada@example.com","password":"a long enough password"}`, nil); status != 200 {
		t.Fatalf("login: %d %s", status, answer)
	}

	op := h.mustCLI("users", "create", "--operator", "op@example.com")
	if !strings.HasPrefix(lastLine(op), "http://localhost:8080/password?token=") {
		t.Fatalf("the default --url: %q", op)
	}
	all := h.mustCLI("users", "list")
	if !strings.Contains(all, "ada@example.com") || !strings.Contains(all, "op@example.com") || !strings.Contains(all, "(operator)") || strings.Contains(all, "argon2") {
		t.Fatalf("kino users list:\n%s", all)
	}
	if acme := h.mustCLI("users", "list", "acme"); !strings.Contains(acme, "ada@example.com") || strings.Contains(acme, "op@example.com") {
		t.Fatalf("kino users list acme:\n%s", acme)
	}
	// Removed, ada's session ends and the email is free again.
	if out := h.mustCLI("users", "remove", "ADA@example.com"); !strings.Contains(out, "ada@example.com") {
		t.Fatalf("kino users remove: %q", out)
	}
	resp, err = http.DefaultClient.Do(req.Clone(req.Context()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("a removed user's session: %d", resp.StatusCode)
	}
	if strings.Contains(h.mustCLI("users", "list"), "ada@example.com") {
		t.Fatal("a removed user is listed")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"users", "remove", "ada@example.com"}, "not found"},
		{[]string{"users", "create", "nobody", "x@example.com"}, "not found"},
		{[]string{"users", "create", "acme", "op@example.com"}, "already exists"},
		{[]string{"users", "create", "acme", "not an email"}, "email"},
		{[]string{"users", "create", "--operator", "a@example.com", "extra"}, "arg"},
	} {
		if _, err := h.cli(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kino %s: %v; want an error with %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
