package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/objects"
	"github.com/kino-video/kino/transport/s3/s3test"
)

// One library's life as its operator runs it, around a single transcode:
//
//   - /metrics on --metrics-addr (never on the API's listener) moves with
//     the work: answers by route template (no ids), upload bytes, the
//     transcode's outcome, wait and playable time (from the stream),
//     storage and the queue by plan, the read models' lag, NATS;
//   - kino backup while kino serves, the data directory destroyed, kino
//     restore into a new one: every GET answers as before, the video plays,
//     a playback token of before still plays, the read models verify;
//   - kino media migrate copies the library from the directory into S3
//     (and the JetStream bucket) while kino serves, each file checked; a
//     second run copies nothing; kino serve --media s3 on the old data
//     directory then serves the video from the bucket alone.
func TestALibrarysLife(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	h := start(t, data, withTranscoder, func(c *Config) { c.MetricsAddr = "127.0.0.1:0" })
	if r := h.get(h.url + "/metrics"); r.status != 404 {
		t.Fatalf("/metrics on the API's listener: %d", r.status)
	}
	idle := h.scrape(t)
	if value(idle, "kino_nats_connected", nil) != 1 || value(idle, "kino_event_store_writable", nil) != 1 ||
		value(idle, "go_goroutines", nil) <= 0 || value(idle, "kino_storage_bytes", map[string]string{"plan": "pro"}) != 0 {
		t.Fatal("the gauges of an idle kino are not there")
	}

	key := h.account("acme", domain.PlanPro)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	clip := makeClip(t, "a.mp4", 320, 180, 2, true)
	id := h.uploadID(key, "main", "a.mp4", clip)
	v := h.waitStatus(key, id, domain.StatusCompleted)
	wantStatus(t, h.do("GET", "/v1/videos/01ARZ3NDEKTSV4RRFFQ69G5FAV", key, nil), 404)
	wantStatus(t, h.do("GET", "/v1/no-such-route/01ARZ3NDEKTSV4RRFFQ69G5FAV", key, nil), 404)
	preview := h.get(v["previewUrl"].(string))
	if preview.status != 200 {
		t.Fatalf("preview: %d", preview.status)
	}
	h.settle()
	t.Run("metrics", func(t *testing.T) { wantMetrics(t, h, len(clip)) })

	// What the API answers, with the server's address as "ORIGIN" (the
	// restored one listens elsewhere).
	r := h.do("POST", "/v1/videos/"+id+"/playback-tokens", key, map[string]any{"ttl": 3600})
	wantStatus(t, r, 201)
	token := r.json(t)["token"].(string)
	answers := func(h *harness) map[string]string {
		out := map[string]string{}
		for _, p := range []string{"/v1/videos/" + id, "/v1/videos", "/v1/collections"} {
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

	c := s3test.Start(t).Bucket(t)
	migrate := []string{"media", "migrate", "--to", "s3", "--from", "dir", "--s3-endpoint", c.Endpoint, "--s3-bucket", c.Bucket,
		"--s3-region", c.Region, "--s3-path-style", "--s3-credentials-file", c.CredentialsFile}
	out, err = h.cli(migrate...)
	if err != nil || !strings.Contains(out, "1 videos from dir to s3: ") || strings.Contains(out, " 0 files copied") || !strings.Contains(out, " 0 failed") {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	if out, err := h.cli(migrate...); err != nil || !strings.Contains(out, ": 0 files copied (0 bytes)") {
		t.Fatalf("second migrate: %v\n%s", err, out)
	}
	// Into the JetStream object store (made as kino serve --media nats
	// makes it), and from there into S3 again: everything is there.
	if _, err := objects.Open(context.Background(), h.m.store); err != nil {
		t.Fatal(err)
	}
	if out, err := h.cli("media", "migrate", "--to", "nats", "--from", "dir"); err != nil || !strings.Contains(out, "1 videos from dir to nats: ") || strings.Contains(out, " 0 files copied") {
		t.Fatalf("migrate to nats: %v\n%s", err, out)
	}
	if out, err := h.cli(append(migrate, "--from", "nats")...); err != nil || !strings.Contains(out, "1 videos from nats to s3: 0 files copied (0 bytes)") {
		t.Fatalf("migrate from nats: %v\n%s", err, out)
	}
	if out, err := h.cli("media", "migrate", "--to", "s3", "--from", "dir", "--s3-endpoint", c.Endpoint, "--s3-bucket", "no-such-bucket",
		"--s3-path-style", "--s3-credentials-file", c.CredentialsFile); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("migrate into a missing bucket: %v\n%s", err, out)
	}
	h.stop()

	t.Run("restore", func(t *testing.T) {
		restored := filepath.Join(t.TempDir(), "restored")
		if out, errOut, code := runCLI("restore", "--from", backupDir, "--data", restored); code != 0 || !strings.Contains(out, "restored the backup") {
			t.Fatalf("restore: exit %d\n%s%s", code, out, errOut)
		}
		if _, errOut, code := runCLI("restore", "--from", backupDir, "--data", restored); code == 0 || !strings.Contains(errOut, "not empty") {
			t.Fatalf("a restore over a data directory: exit %d %s", code, errOut)
		}
		h := start(t, restored)
		defer h.stop()
		after := answers(h)
		for p, want := range before {
			if after[p] != want {
				t.Errorf("GET %s after the restore:\n%s\nbefore:\n%s", p, after[p], want)
			}
		}
		if _, hgt := ffprobe(t, h.m.CDNURL+"/"+id+"/hls/180p/index.m3u8").video(); hgt != 180 {
			t.Fatalf("the restored video decodes at height %d", hgt)
		}
		wantStatus(t, h.do("PATCH", "/v1/videos/"+id, key, map[string]any{"playbackPolicy": "signed"}), 200)
		if r := h.get(h.m.CDNURL + "/" + id + "/thumbnail.jpg?token=" + token); r.status != 200 {
			t.Fatalf("a token minted before the backup: %d %s", r.status, r.body)
		}
		if out, err := h.cli("replay", "--verify"); err != nil || !strings.Contains(out, "match") {
			t.Fatalf("replay --verify: %v\n%s", err, out)
		}
	})

	t.Run("served from S3", func(t *testing.T) {
		// Nothing of the video is left where --media dir kept it.
		if err := os.Rename(filepath.Join(data, "media", id), filepath.Join(t.TempDir(), id)); err != nil {
			t.Fatal(err)
		}
		h := start(t, data, func(cfg *Config) { cfg.Media, cfg.S3 = mediaS3, c })
		defer h.stop()
		v := h.waitStatus(key, id, domain.StatusCompleted)
		if again := h.get(v["previewUrl"].(string)); again.status != 200 || !bytes.Equal(again.body, preview.body) {
			t.Fatalf("preview from the bucket: %d, %d bytes", again.status, len(again.body))
		}
		if master := h.get(v["playlistUrl"].(string)); master.status != 200 {
			t.Fatalf("master from the bucket: %d", master.status)
		}
		dst := filepath.Join(t.TempDir(), "original.mp4")
		if err := h.m.media.Fetch(context.Background(), id, ".mp4", dst); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(dst); !bytes.Equal(got, clip) {
			t.Fatal("the original in the bucket differs from the upload")
		}
	})
}

// wantMetrics checks a scrape after one pro account uploaded a video of
// size bytes, which completed.
func wantMetrics(t *testing.T, h *harness, size int) {
	t.Helper()
	after := h.scrape(t)
	for _, c := range []struct {
		name    string
		labels  map[string]string
		atLeast float64
	}{
		{"kino_http_requests_total", map[string]string{"route": "/v1/videos/{id}", "method": "GET", "status": "200"}, 1},
		{"kino_http_requests_total", map[string]string{"route": "/v1/videos/{id}", "method": "GET", "status": "404"}, 1},
		{"kino_http_request_duration_seconds", map[string]string{"route": "/v1/videos", "method": "POST"}, 1},
		{"kino_http_requests_total", map[string]string{"route": "unmatched", "method": "GET", "status": "404"}, 1},
		{"kino_transcode_jobs_total", map[string]string{"outcome": "succeeded"}, 1},
		{"kino_transcode_wait_seconds", map[string]string{"plan": "pro"}, 1},
		{"kino_transcode_seconds_per_rendition", nil, 1},
		{"kino_playable_seconds", nil, 1},
		{"kino_storage_bytes", map[string]string{"plan": "pro"}, float64(size)},
	} {
		if got := value(after, c.name, c.labels); got < c.atLeast {
			t.Errorf("%s%v = %v, want at least %v", c.name, c.labels, got, c.atLeast)
		}
	}
	if got := value(after, "kino_upload_bytes_total", nil); got != float64(size) {
		t.Errorf("upload bytes %v, want %d", got, size)
	}
	if n := value(after, "kino_videos_processing", map[string]string{"plan": "pro"}) + value(after, "kino_videos_pending", map[string]string{"plan": "pro"}); n != 0 {
		t.Errorf("%v videos queued or processing after the transcode", n)
	}
	if lag := value(after, "kino_read_model_lag_events", nil); lag != 0 {
		t.Errorf("read model lag %v after settling", lag)
	}
	// No label carries an id.
	for _, m := range after["kino_http_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if domain.ValidID(l.GetValue()) || len(l.GetValue()) > 40 {
				t.Fatalf("a label carries %q", l.GetValue())
			}
		}
	}
	// Every metric the shipped dashboard and alerts use is one kino serves.
	for _, f := range []string{"../../docs/monitoring/grafana-dashboard.json", "../../docs/monitoring/alerts.yml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range regexp.MustCompile(`kino_[a-z_]+`).FindAllString(string(b), -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
			if _, ok := after[base]; !ok && name != "kino_" {
				t.Errorf("%s names %s, which /metrics does not serve", f, name)
			}
		}
	}
}
