package main

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
)

// TestSignedPlayback drives signed playback through kino serve's own
// wiring (the token keys in its ring in NATS): a video uploaded
// into a signed collection is signed; its media answer 403 without a
// token; with kino's token the master playlist lists media playlists that
// list segments, every one carrying the token and served; a token made by
// the customer's backend with go-jose and a signing key from the API
// plays until the key is deleted. Then Chromium with hls.js: it plays
// with a token on the master playlist only; without one, with an expired
// one, or with another video's, hls.js fails with a network error.
func TestSignedPlayback(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withTranscoder)
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]any{"slug": "private", "name": "Private", "playbackPolicy": "signed"}), 201)
	clip := makeClip(t, "clip.mp4", 640, 360, 3, true)
	id := h.uploadID(key, "private", "clip.mp4", clip)
	other := h.uploadID(key, "private", "other.mp4", clip)
	v := h.waitStatus(key, id, domain.StatusCompleted)
	h.waitStatus(key, other, domain.StatusCompleted)
	playlist, _ := v["playlistUrl"].(string)
	thumb, _ := v["thumbnailUrl"].(string)
	preview, _ := v["previewUrl"].(string)
	if v["playbackPolicy"] != "signed" || playlist == "" || strings.Contains(playlist, "token") {
		t.Fatalf("video %v", v)
	}
	for _, u := range []string{playlist, thumb, preview} {
		if r := h.get(u); r.status != 403 {
			t.Fatalf("%s without a token: %d", u, r.status)
		}
	}
	token := func(id string) string {
		r := h.do("POST", "/v1/videos/"+id+"/playback-tokens", key, map[string]any{"ttl": 600})
		wantStatus(t, r, 201)
		return r.json(t)["token"].(string)
	}
	tok := token(id)

	// Follow the playlists as a player does: every URI carries the token
	// and is served.
	uri := regexp.MustCompile(`(?m)^[^#\s][^\s]*$|URI="([^"]+)"`)
	var follow func(u string, depth int) int
	follow = func(u string, depth int) int {
		r := h.get(u)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", u, r.status, r.body)
		}
		if !strings.HasSuffix(strings.SplitN(u, "?", 2)[0], ".m3u8") || depth > 2 {
			return 1
		}
		if cc := r.header.Get("Cache-Control"); !strings.HasPrefix(cc, "private") {
			t.Fatalf("%s: Cache-Control %q", u, cc)
		}
		n := 0
		base, _ := url.Parse(u)
		for _, m := range uri.FindAllStringSubmatch(string(r.body), -1) {
			ref := m[0]
			if m[1] != "" {
				ref = m[1]
			}
			if !strings.HasSuffix(ref, "token="+tok) {
				t.Fatalf("%s lists %q without the token", u, ref)
			}
			next, _ := base.Parse(ref)
			n += follow(next.String(), depth+1)
		}
		return n
	}
	if n := follow(playlist+"?token="+tok, 0); n < 3 {
		t.Fatalf("followed only %d files", n)
	}
	if r := h.get(thumb + "?token=" + tok); r.status != 200 {
		t.Fatalf("thumbnail: %d", r.status)
	}
	if r := h.get(thumb + "?token=" + token(other)); r.status != 403 {
		t.Fatalf("another video's token: %d", r.status)
	}

	// A customer's backend signs with its signing key (go-jose, not kino's
	// library).
	r := h.do("POST", "/v1/signing-keys", key, map[string]any{"label": "backend"})
	wantStatus(t, r, 201)
	ck := r.json(t)
	blk, _ := pem.Decode([]byte(ck["privateKey"].(string)))
	priv, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	kid := ck["id"].(string)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: priv.(ed25519.PrivateKey), KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	customer, err := josejwt.Signed(signer).Claims(josejwt.Claims{Subject: id, Expiry: josejwt.NewNumericDate(h.now.Now().Add(time.Hour))}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	if r := h.get(playlist + "?token=" + customer); r.status != 200 {
		t.Fatalf("customer token: %d %s", r.status, r.body)
	}
	wantStatus(t, h.do("DELETE", "/v1/signing-keys/"+kid, key, nil), 204)
	if r := h.get(playlist + "?token=" + customer); r.status != 403 {
		t.Fatalf("customer token of a deleted key: %d", r.status)
	}

	t.Run("browser", func(t *testing.T) {
		b := browserTools(t)
		site := b.site(t, "player.html", nil)
		type findings struct {
			OK       bool     `json:"ok"`
			Error    string   `json:"error"`
			Errors   []string `json:"errors"`
			PlayedTo float64  `json:"playedTo"`
			CDN      [][3]any `json:"cdn"`
		}
		play := func(tok, want string) findings {
			t.Helper()
			q := url.Values{"playlist": {playlist}, "thumbnail": {thumb}, "preview": {preview}}
			if tok != "" {
				q = url.Values{"playlist": {playlist + "?token=" + tok}, "thumbnail": {thumb + "?token=" + tok}, "preview": {preview + "?token=" + tok}}
			}
			var f findings
			b.run(t, want, &f, "signed.mjs", site+"/?"+q.Encode(), want)
			return f
		}
		refusedWith403 := func(name string, f findings) {
			t.Helper()
			if !slices.ContainsFunc(f.CDN, func(c [3]any) bool { return c[0] == "hls/master.m3u8" && c[2] == float64(403) }) {
				t.Fatalf("%s: /cdn answers %v", name, f.CDN)
			}
			for _, c := range f.CDN {
				if c[2] == float64(200) && (strings.HasSuffix(c[0].(string), ".m4s") || strings.HasSuffix(c[0].(string), ".mp4")) {
					t.Fatalf("%s: a segment was served: %v", name, f.CDN)
				}
			}
		}

		tok := token(id)
		f := play(tok, "play")
		segments := 0
		for _, c := range f.CDN {
			if c[1] != true || (c[2] != float64(200) && c[2] != float64(206)) {
				t.Fatalf("a /cdn request without the token or refused: %v", f.CDN)
			}
			if strings.HasSuffix(c[0].(string), ".m4s") {
				segments++
			}
		}
		if segments == 0 {
			t.Fatalf("no segment fetched: %v", f.CDN)
		}
		t.Logf("played to %.1fs with a token on the master playlist only; %d /cdn requests, all with it", f.PlayedTo, len(f.CDN))

		refusedWith403("no token", play("", "refused"))
		refusedWith403("another video's token", play(token(other), "refused"))
		// Expiry on kino's clock: the token that played above no longer does.
		h.now.Set(h.now.Now().Add(11 * time.Minute))
		refusedWith403("expired token", play(tok, "refused"))
	})
}

// kino playback-keys rotate revokes every token kino signed, on the
// running kino serve within about a second; with --grace the tokens of
// the key before stay good. A token is judged before the file is looked
// for: 404 (no thumbnail yet) means the token passed, 403 that it did not.
func TestPlaybackKeyRotation(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir())
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]any{"slug": "private", "name": "Private", "playbackPolicy": "signed"}), 201)
	id := h.uploadID(key, "private", "clip.mp4", clip(t))
	token := func() string {
		r := h.do("POST", "/v1/videos/"+id+"/playback-tokens", key, map[string]any{"ttl": 600})
		wantStatus(t, r, 201)
		return r.json(t)["token"].(string)
	}
	thumb := h.m.CDNURL + "/" + id + "/thumbnail.jpg?token="
	first := token()
	if r := h.get(thumb + first); r.status != 404 {
		t.Fatalf("a fresh token: %d %s", r.status, r.body)
	}

	if out := h.mustCLI("playback-keys", "rotate"); !strings.Contains(out, "refused from now on") {
		t.Fatalf("rotate: %s", out)
	}
	eventstoretest.Eventually(t, "the rotated-out token refused", func() bool { return h.get(thumb+first).status == 403 })
	second := token()
	if r := h.get(thumb + second); r.status != 404 {
		t.Fatalf("a token of the new key: %d %s", r.status, r.body)
	}

	if out := h.mustCLI("playback-keys", "rotate", "--grace", "1h"); !strings.Contains(out, "accepted until") {
		t.Fatalf("rotate --grace: %s", out)
	}
	list := h.mustCLI("playback-keys", "list")
	if lines := strings.Split(strings.TrimSpace(list), "\n"); len(lines) != 3 || !strings.Contains(list, "current") || !strings.Contains(list, "retiring") {
		t.Fatalf("list:\n%s", list)
	}
	third := token()
	for _, tok := range []string{second, third} {
		if r := h.get(thumb + tok); r.status != 404 {
			t.Fatalf("within the grace: %d %s", r.status, r.body)
		}
	}
	if _, err := h.cli("playback-keys", "rotate", "--grace", "-1s"); err == nil {
		t.Fatal("a negative grace was taken")
	}
	if _, err := h.cli("playback-keys", "rotate", "--grace", "200h"); err == nil {
		t.Fatal("a grace past the longest token life was taken")
	}
}
