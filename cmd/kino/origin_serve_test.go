package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

// kino serve without --cdn-url: a client that reached kino at its LAN
// address gets media URLs on that address (and they play there); a Host
// header that is not a plain host[:port] is not reflected; webhook bodies,
// which have no request, name the listen address (127.0.0.1:<port>).
func TestServeMediaURLsFollowTheRequestsHost(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withTranscoder)
	key := h.account("acme", domain.PlanPro)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	id := h.uploadID(key, "main", "clip.mp4", clip(t))
	h.waitStatus(key, id, domain.StatusCompleted)
	port := strconv.Itoa(h.m.listener.Addr().(*net.TCPAddr).Port)
	if want := "http://127.0.0.1:" + port + "/cdn"; h.m.CDNURL != want || h.m.publicCDN != "" {
		t.Fatalf("webhook cdn %q (explicit %q), want %q", h.m.CDNURL, h.m.publicCDN, want)
	}
	playlist := func(host string) string {
		t.Helper()
		req, err := http.NewRequest("GET", h.url+"/v1/videos/"+id, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v struct{ PlaylistURL string }
		if err := json.Unmarshal(b, &v); err != nil || resp.StatusCode != 200 {
			t.Fatalf("Host %q: %d %s", host, resp.StatusCode, b)
		}
		return v.PlaylistURL
	}
	tail := "/cdn/" + id + "/hls/master.m3u8"
	if got := playlist("192.168.1.5:8080"); got != "http://192.168.1.5:8080"+tail {
		t.Fatalf("LAN Host: %s", got)
	}
	// Reached at 127.0.0.1:<port>, the URL names that, and is served there.
	got := playlist("127.0.0.1:" + port)
	if got != "http://127.0.0.1:"+port+tail {
		t.Fatalf("loopback Host: %s", got)
	}
	if r := h.get(got); r.status != 200 || !strings.HasPrefix(string(r.body), "#EXTM3U") {
		t.Fatalf("playlist at the request's origin: %d", r.status)
	}
	// net/http refuses the worst Host values itself; these pass it.
	for _, host := range []string{"evil'host.example", "user@evil.example", "evil.example:" + strconv.Itoa(99999)} {
		if got := playlist(host); got != "http://127.0.0.1:"+port+tail {
			t.Fatalf("Host %q reflected: %s", host, got)
		}
	}
}
