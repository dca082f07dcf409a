package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

// kino backup while kino serves, the data directory destroyed, kino
// restore into a new one: kino serve there answers every GET as before,
// the video plays, a playback token minted before the backup still
// plays, the read models verify, and no transcode is queued again.
func TestBackupAndRestore(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	h := start(t, data, withTranscoder)
	key := h.account("acme", domain.PlanPro)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	id := h.uploadID(key, "main", "a.mp4", makeClip(t, "a.mp4", 320, 180, 2, true))
	h.waitStatus(key, id, domain.StatusCompleted)
	r := h.do("POST", "/v1/videos/"+id+"/playback-tokens", key, map[string]any{"ttl": 3600})
	wantStatus(t, r, 201)
	token := r.json(t)["token"].(string)
	// What the API answers, with this server's address as "ORIGIN" (the
	// restored one listens elsewhere).
	answers := func(h *harness) map[string]string {
		out := map[string]string{}
		for _, p := range []string{"/v1/videos/" + id, "/v1/videos", "/v1/collections", "/v1/account"} {
			r := h.do("GET", p, key, nil)
			wantStatus(t, r, 200)
			out[p] = strings.ReplaceAll(string(r.body), h.url, "ORIGIN")
		}
		return out
	}
	before := answers(h)

	backupDir := filepath.Join(t.TempDir(), "backup")
	out, err := h.cli("backup", "--to", backupDir, "--with-secret-key")
	if err != nil || !strings.Contains(out, "backed up") || !strings.Contains(out, " 1 media directories") {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	var m manifest
	if b, err := os.ReadFile(filepath.Join(backupDir, manifestFile)); err != nil || json.Unmarshal(b, &m) != nil || len(m.Streams) < 4 || !m.SecretKey {
		t.Fatalf("manifest %s: %v", b, err)
	}
	if _, err := h.cli("backup", "--to", backupDir); err == nil {
		t.Fatal("a backup over another was taken")
	}
	h.stop()
	if err := os.RemoveAll(data); err != nil { // the machine is lost
		t.Fatal(err)
	}

	restored := filepath.Join(t.TempDir(), "restored")
	if out, errOut, code := runCLI("restore", "--from", backupDir, "--data", restored); code != 0 || !strings.Contains(out, "restored the backup") {
		t.Fatalf("restore: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := runCLI("restore", "--from", backupDir, "--data", restored); code == 0 || !strings.Contains(errOut, "not empty") {
		t.Fatalf("a restore over a data directory: exit %d %s", code, errOut)
	}
	h = start(t, restored)
	after := answers(h)
	for p, want := range before {
		// The account's rate-limit window is the one thing that moved.
		if p != "/v1/account" && after[p] != want {
			t.Errorf("GET %s after the restore:\n%s\nbefore:\n%s", p, after[p], want)
		}
	}
	v := h.do("GET", "/v1/videos/"+id, key, nil).json(t)
	if _, hgt := ffprobe(t, h.m.CDNURL+"/"+id+"/hls/180p/index.m3u8").video(); hgt != 180 {
		t.Fatalf("the restored video decodes at height %d", hgt)
	}
	wantStatus(t, h.do("PATCH", "/v1/videos/"+id, key, map[string]any{"playbackPolicy": "signed"}), 200)
	if r := h.get(v["thumbnailUrl"].(string) + "?token=" + token); r.status != 200 {
		t.Fatalf("a token minted before the backup: %d %s", r.status, r.body)
	}
	if out, err := h.cli("replay", "--verify"); err != nil || !strings.Contains(out, "match") {
		t.Fatalf("replay --verify: %v\n%s", err, out)
	}
}
