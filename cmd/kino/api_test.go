package main

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
)

var (
	videoFields    = httpapitest.VideoFields
	checkTimestamp = httpapitest.WantTimestamp
)

func TestRestartKeepsEverything(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	h := start(t, data)
	key := h.account("acme", domain.PlanPro)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	up := h.upload(key, "main", "a.mp4", clip(t))
	wantStatus(t, up, 202)
	vid := up.json(t)["video"].(map[string]any)["id"].(string)
	before := h.do("GET", "/v1/videos/"+vid, key, nil)
	h.stop()

	h = start(t, data)
	after := h.do("GET", "/v1/videos/"+vid, key, nil)
	wantStatus(t, after, 200)
	if !bytes.Equal(before.body, after.body) {
		t.Fatalf("video changed across a restart:\n%s\n%s", before.body, after.body)
	}
	h.stop()

	// The read models are derived: without them, a start rebuilds them
	// from the stream.
	if err := os.Remove(filepath.Join(data, "projections.db")); err != nil {
		t.Fatal(err)
	}
	h = start(t, data)
	rebuilt := h.do("GET", "/v1/videos/"+vid, key, nil)
	if !bytes.Equal(before.body, rebuilt.body) {
		t.Fatalf("rebuilt video differs:\n%s\n%s", before.body, rebuilt.body)
	}
	if _, err := os.Stat(filepath.Join(data, "media", vid, "original.mp4")); err != nil {
		t.Fatal(err)
	}
}

func TestDevBootstrapOnlyOnEmptyStore(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	var out bytes.Buffer
	h := start(t, data, func(c *Config) { c.Dev, c.Stdout = true, &out })
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("--dev printed %q", out.String())
	}
	key := lines[1]
	if !domain.WellFormedKey(key) || h.m.DevKey != key {
		t.Fatalf("--dev printed %q", out.String())
	}
	// The dashboard user's one-time link sets its password and logs in.
	link, err := url.Parse(lines[3])
	if err != nil || link.Path != "/password" || link.Query().Get("token") == "" {
		t.Fatalf("--dev printed no password link: %q", out.String())
	}
	pw := h.do("POST", "/auth/password", "", map[string]string{"token": link.Query().Get("token"), "password": "a long enough password"})
	if pw.status != 200 || !strings.Contains(string(pw.body), DevUserEmail) {
		t.Fatalf("the dev user's link: %d %s", pw.status, pw.body)
	}
	r := h.do("GET", "/v1/collections/default", key, nil)
	wantStatus(t, r, 200)
	if r := h.upload(key, "default", "a.mp4", clip(t)); r.status != 202 {
		t.Fatalf("upload with dev key: %d %s", r.status, r.body)
	}
	if r := h.do("GET", "/v1/videos", key, nil); r.header.Get("X-RateLimit-Limit") != "1000" {
		t.Fatal("dev account is not on the business plan")
	}
	h.stop()
	out.Reset()
	h = start(t, data, func(c *Config) { c.Dev, c.Stdout = true, &out })
	if out.Len() != 0 || h.m.DevKey != "" {
		t.Fatalf("second --dev start printed %q", out.String())
	}
	wantStatus(t, h.do("GET", "/v1/videos", key, nil), 200)
}

// Health and readiness are served, readiness wired to the embedded
// server, the media directory and the disk. The API's routes are tested
// in transport/httpapi.
func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir())
	wantStatus(t, h.do("GET", "/healthz", "", nil), 200)
	if r := h.do("GET", "/readyz", "", nil); r.status != 200 || !strings.Contains(string(r.body), `"status":"ready"`) {
		t.Fatalf("readyz: %d %s", r.status, r.body)
	}
}

// With --nats, serve embeds nothing and uses the given server.
func TestServeAgainstExternalNATS(t *testing.T) {
	t.Parallel()
	srv := eventstoretest.Server(t, t.TempDir())
	data := t.TempDir()
	h := start(t, data, func(c *Config) { c.NATSURL, c.NATSAuth = srv.URL(), srv.Auth(eventstore.RoleServe) })
	if h.nats != srv.URL() {
		t.Fatalf("serve uses %s, want %s", h.nats, srv.URL())
	}
	if _, err := os.Stat(filepath.Join(data, "nats")); !os.IsNotExist(err) {
		t.Fatalf("an embedded store was created: %v", err)
	}
	key := h.account("acme", domain.PlanPro)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	wantStatus(t, h.upload(key, "main", "a.mp4", clip(t)), 202)
}
