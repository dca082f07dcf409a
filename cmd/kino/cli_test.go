package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

func TestCLIErrorsAreOneLineWithNonZeroExit(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir())
	h.mustCLI("accounts", "create", "acme", "--plan", "pro")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"accounts", "create", "acme", "--plan", "pro"}, "already exists"},
		{[]string{"accounts", "create", "other", "--plan", "gold"}, "plan"},
		{[]string{"accounts", "create", "Bad_Slug"}, "slug"},
		{[]string{"keys", "create", "nobody"}, "not found"},
		{[]string{"keys", "list", "nobody"}, "not found"},
		{[]string{"keys", "revoke", "01ARZ3NDEKTSV4RRFFQ69G5FAV"}, "not found"},
		{[]string{"collections", "create", "acme", "Bad", "x"}, "slug"},
		{[]string{"collections", "create", "nobody", "main", "Main"}, "not found"},
		{[]string{"history", "01ARZ3NDEKTSV4RRFFQ69G5FAV"}, "not found"},
		{[]string{"history", "../x"}, "not found"},
		{[]string{"keys", "create"}, "arg"},
		{[]string{"worker", "--workers", "0", "--webhook-workers", "0"}, "nothing to do"},
		{[]string{"worker", "--workers", "0", "--cdn-url", "cdn.example.com"}, "--cdn-url must be an absolute http or https URL"},
		{[]string{"worker", "--workers", "0", "--cdn-url", "ftp://cdn.example.com"}, "--cdn-url must be an absolute http or https URL"},
		{[]string{"worker", "--workers", "0", "--ladder-lanes", "three"}, `--ladder-lanes "three": want auto, one or two`},
		{[]string{"serve", "--workers", "0", "--ladder-lanes", "Two"}, `--ladder-lanes "Two": want auto, one or two`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), append(tt.args, h.natsArgs...), &out, &errb)
			if code == 0 {
				t.Fatalf("exit 0; stdout %q", out.String())
			}
			msg := errb.String()
			if strings.Count(strings.TrimSpace(msg), "\n") != 0 || !strings.Contains(msg, tt.want) {
				t.Fatalf("stderr %q: want one line mentioning %q", msg, tt.want)
			}
		})
	}
}

func TestCLIAdminFlow(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir())
	// Flags may stand before or after positional arguments.
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"accounts", "create", "--nats", h.nats, "--data", h.data, "--plan", "business", "acme"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	keyOut := h.mustCLI("keys", "create", "acme", "--label", "ci")
	key := lastLine(keyOut)
	if !domain.WellFormedKey(key) {
		t.Fatalf("key is not alone on the last line:\n%s", keyOut)
	}
	h.mustCLI("collections", "create", "acme", "news", "World News")
	r := h.do("GET", "/v1/collections/news", key, nil)
	wantStatus(t, r, 200)
	if r.json(t)["name"] != "World News" {
		t.Fatalf("collection: %s", r.body)
	}
	if r.header.Get("X-RateLimit-Limit") != "1000" {
		t.Fatal("account plan not applied")
	}
	h.mustCLI("accounts", "set-plan", "acme", "free")
	if r := h.do("GET", "/v1/collections", key, nil); r.header.Get("X-RateLimit-Limit") != "60" {
		t.Fatalf("plan change not applied: %v", r.header)
	}
	// accounts set-storage-quota: the account's own quota, none, the plan's.
	limit := func() any {
		return h.do("GET", "/v1/account", key, nil).json(t)["limits"].(map[string]any)["storageBytes"]
	}
	if out := h.mustCLI("accounts", "set-storage-quota", "acme", "500GiB"); !strings.Contains(out, "storage quota of 500.0 GiB") || limit() != float64(500<<30) {
		t.Fatalf("set-storage-quota 500GiB: %s, limit %v", out, limit())
	}
	if h.mustCLI("accounts", "set-storage-quota", "acme", "none"); limit() != float64(0) {
		t.Fatalf("set-storage-quota none: limit %v", limit())
	}
	if h.mustCLI("accounts", "set-storage-quota", "acme", "plan"); limit() != float64(testPlans()[domain.PlanFree].StorageBytes) {
		t.Fatalf("set-storage-quota plan: limit %v", limit())
	}
	for _, bad := range []string{"-1", "lots", "99999999TiB", "0"} {
		if _, err := h.cli("accounts", "set-storage-quota", "acme", bad); err == nil {
			t.Fatalf("set-storage-quota %s: no error", bad)
		}
	}
	if _, err := h.cli("accounts", "set-storage-quota", "nobody", "1GiB"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("set-storage-quota of a missing account: %v", err)
	}
	list := h.mustCLI("keys", "list", "acme")
	// Given only --data, an operator command finds the NATS kino serve
	// started there (on a random port here, not the default).
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"keys", "list", "acme", "--data", h.data}, &out, &errb); code != 0 || out.String() != list {
		t.Fatalf("keys list --data alone: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(list, "ci") || !strings.Contains(list, key[:13]) || strings.Contains(list, key) {
		t.Fatalf("keys list:\n%s", list)
	}
	// keys revoke: the key is refused at once, and listed revoked.
	second := lastLine(h.mustCLI("keys", "create", "acme", "--label", "rotated"))
	var keyID string
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, "ci") {
			keyID = strings.Fields(line)[0]
		}
	}
	h.mustCLI("keys", "revoke", keyID)
	if r := h.do("GET", "/v1/videos", key, nil); r.status != 401 {
		t.Fatalf("a revoked key: %d %s", r.status, r.body)
	}
	if out := h.mustCLI("keys", "list", "acme"); !strings.Contains(out, "revoked") || strings.Contains(out, second) {
		t.Fatalf("keys list after revoke:\n%s", out)
	}
	key = second

	up := h.upload(key, "news", "a.mp4", clip(t))
	wantStatus(t, up, 202)
	id := up.json(t)["video"].(map[string]any)["id"].(string)
	hist := h.mustCLI("history", id)
	lines := strings.Split(strings.TrimSpace(hist), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "SEQ") || !strings.Contains(lines[1], "UploadAccepted") || !strings.Contains(lines[1], `"filename":"a.mp4"`) {
		t.Fatalf("history:\n%s", hist)
	}

	for _, cmd := range [][]string{{"--help"}, {"serve", "--help"}, {"keys", "revoke", "--help"}, {"history", "--help"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), cmd, &out, &errb); code != 0 || !strings.Contains(out.String(), "Usage") {
			t.Fatalf("kino %v: exit %d\n%s%s", cmd, code, out.String(), errb.String())
		}
	}
}

// kino bench --quick runs in the test suite, so the bench cannot rot.
func TestBenchQuick(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	args := []string{"bench", "--quick", "--json", "--kino-binary", buildKino(t)} // the cdn measure's own kino process
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("kino bench --quick: exit %d\n%s", code, errb.String())
	}
	var results []struct {
		Measure string  `json:"measure"`
		Kino    float64 `json:"kino"`
		Ratio   float64 `json:"ratio"`
		Goal    string  `json:"goal"`
	}
	// 17 (one of them /cdn against nginx, which .ci/run installs; without
	// it the bench says so and leaves that one out), search (2), and
	// outputs (1) and fastpath (1).
	want, wantNginx := 21, 1
	if _, err := exec.LookPath("nginx"); err != nil {
		if _, err := os.Stat("/usr/sbin/nginx"); err != nil {
			want, wantNginx = 20, 0
		}
	}
	if err := json.Unmarshal(out.Bytes(), &results); err != nil || len(results) != want {
		t.Fatalf("results: %v\n%s", err, out.String())
	}
	nginx := 0
	for _, r := range results {
		if strings.Contains(r.Measure, "vs nginx") {
			nginx++
		}
	}
	if nginx != wantNginx {
		t.Fatalf("%d measures against nginx, want %d (dir; --quick leaves out the object store)\n%s", nginx, wantNginx, out.String())
	}
	for i, r := range results {
		if i == 4 { // RSS growth: may be zero
			continue
		}
		if r.Kino <= 0 || r.Ratio <= 0 || r.Goal == "" {
			t.Errorf("measure %+v", r)
		}
	}
}
