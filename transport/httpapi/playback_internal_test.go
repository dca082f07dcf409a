package httpapi

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/golang-jwt/jwt/v5"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/playback"
	"github.com/kino-video/kino/transport/wire"
)

func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	return v
}

// Collections carry playbackPolicy and downloads: set at creation,
// changed by PATCH (alone or with the name), checked before anything is
// written; another account's collection is not found.
func TestCollectionPlaybackSettings(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	other := a.account("other", domain.PlanPro)

	r := a.do("POST", "/v1/collections", key, `{"slug":"private","name":"Private","playbackPolicy":"signed","downloads":false}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if c := decode[wire.Collection](t, r); c.PlaybackPolicy != domain.PlaybackSigned || c.Downloads {
		t.Fatalf("created %+v", c)
	}
	if c := decode[wire.Collection](t, a.do("GET", "/v1/collections/main", key, "")); c.PlaybackPolicy != domain.PlaybackPublic || !c.Downloads {
		t.Fatalf("defaults: %+v", c)
	}
	wantError(t, a.do("POST", "/v1/collections", key, `{"slug":"x","name":"X","playbackPolicy":"secret"}`), 400, "Bad request")
	wantError(t, a.do("POST", "/v1/collections", key, `{"slug":"x","name":"X","downloads":"yes"}`), 400, "Bad request")

	tests := []struct {
		name, body string
		status     int
		want       wire.Collection
	}{
		{"policy only", `{"playbackPolicy":"public"}`, 200, wire.Collection{Name: "Private", PlaybackPolicy: "public"}},
		{"downloads only", `{"downloads":true}`, 200, wire.Collection{Name: "Private", PlaybackPolicy: "public", Downloads: true}},
		{"all three", `{"name":"Hidden","playbackPolicy":"signed","downloads":false}`, 200, wire.Collection{Name: "Hidden", PlaybackPolicy: "signed"}},
		{"name only", `{"name":"Still hidden"}`, 200, wire.Collection{Name: "Still hidden", PlaybackPolicy: "signed"}},
		{"nothing", `{}`, 400, wire.Collection{}},
		{"bad policy with a name renames nothing", `{"name":"Renamed","playbackPolicy":"none"}`, 400, wire.Collection{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do("PATCH", "/v1/collections/private", key, tc.body)
			if tc.status != 200 {
				wantError(t, r, tc.status, "Bad request")
				return
			}
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			c := decode[wire.Collection](t, r)
			if c.Name != tc.want.Name || c.PlaybackPolicy != tc.want.PlaybackPolicy || c.Downloads != tc.want.Downloads {
				t.Fatalf("got %+v, want %+v", c, tc.want)
			}
		})
	}
	if c := decode[wire.Collection](t, a.do("GET", "/v1/collections/private", key, "")); c.Name != "Still hidden" {
		t.Fatalf("a refused PATCH changed the name: %+v", c)
	}
	wantError(t, a.do("PATCH", "/v1/collections/private", other, `{"playbackPolicy":"public"}`), 404, "Not found")
}

// uploadWith posts a multipart upload into collection with extra fields
// (sent before the file).
func (a *testAPI) uploadFields(key, collection string, fields map[string]string) response {
	a.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("collection", collection)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	fw, _ := mw.CreateFormFile("file", "clip.mp4")
	_, _ = fw.Write([]byte("\x00\x00\x00\x18ftypmp42 video"))
	_ = mw.Close()
	req, _ := http.NewRequest("POST", a.srv.URL+"/v1/videos", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return a.request(req, key)
}

// An upload gets its collection's policy and download setting unless it
// asks otherwise (multipart fields, tus metadata, a direct upload's
// request); bad values are refused; a direct upload URL's holder cannot
// change what its issuer set.
func TestUploadPlaybackDefaults(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	if r := a.do("POST", "/v1/collections", key, `{"slug":"signed","name":"S","playbackPolicy":"signed","downloads":false}`); r.status != 201 {
		t.Fatal(r.status)
	}
	video := func(r response) (domain.PlaybackPolicy, bool) {
		t.Helper()
		if r.status != 202 && r.status != 204 {
			t.Fatalf("upload: %d %s", r.status, r.body)
		}
		id := decode[wire.Uploaded](t, r).Video.ID
		a.s.awaitOwnWrites(context.Background(), "acme", allWrites) // as the account's next request would
		v, ok, err := a.s.cfg.DB.Video(id)
		if err != nil || !ok {
			t.Fatalf("video %s: %v %v", id, ok, err)
		}
		return v.PlaybackPolicy, v.WantsDownload
	}
	tests := []struct {
		name, collection string
		fields           map[string]string
		policy           domain.PlaybackPolicy
		download         bool
	}{
		{"public collection's defaults", "main", nil, "public", true},
		{"signed collection's defaults", "signed", nil, "signed", false},
		{"overridden to public with downloads", "signed", map[string]string{"playbackPolicy": "public", "download": "true"}, "public", true},
		{"overridden to signed without downloads", "main", map[string]string{"playbackPolicy": "signed", "download": "false"}, "signed", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, d := video(a.uploadFields(key, tc.collection, tc.fields))
			if p != tc.policy || d != tc.download {
				t.Fatalf("policy %q download %v, want %q %v", p, d, tc.policy, tc.download)
			}
		})
	}
	for _, f := range []map[string]string{{"playbackPolicy": "private"}, {"download": "yes"}} {
		wantError(t, a.uploadFields(key, "main", f), 400, "Bad request")
	}
	if left := a.incoming(); len(left) != 0 {
		t.Fatalf("refused uploads left files: %v", left)
	}

	// tus: Upload-Metadata keys, refused at creation when bad.
	meta := func(kv ...string) string {
		var parts []string
		for i := 0; i < len(kv); i += 2 {
			parts = append(parts, kv[i]+" "+base64.StdEncoding.EncodeToString([]byte(kv[i+1])))
		}
		return strings.Join(parts, ",")
	}
	body := []byte("\x00\x00\x00\x18ftypmp42 video")
	tusCreate := func(url, key, metadata string) response {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("Upload-Length", strconv.Itoa(len(body)))
		req.Header.Set("Upload-Metadata", metadata)
		req.Header.Set("Content-Type", "application/offset+octet-stream")
		return a.request(req, key)
	}
	idOf := func(r response) string {
		t.Helper()
		if r.status != 201 {
			t.Fatalf("tus create: %d %s", r.status, r.body)
		}
		if r.header.Get("Upload-Offset") != strconv.Itoa(len(body)) {
			t.Fatalf("tus create: not complete: %v %s", r.header, r.body)
		}
		loc := r.header.Get("Location")
		return loc[strings.LastIndex(loc, "/")+1:]
	}
	// The video as the account's next request would read it.
	stored := func(id string) projections.Video {
		t.Helper()
		a.s.awaitOwnWrites(context.Background(), "acme", allWrites)
		v, _, err := a.s.cfg.DB.Video(id)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	r := tusCreate(a.srv.URL+"/v1/uploads/tus", key, meta("filename", "a.mp4", "collection", "main", "playbackPolicy", "signed", "download", "false"))
	if v := stored(idOf(r)); v.PlaybackPolicy != domain.PlaybackSigned || v.WantsDownload {
		t.Fatalf("tus upload: %+v", v)
	}
	wantError(t, tusCreate(a.srv.URL+"/v1/uploads/tus", key, meta("filename", "a.mp4", "collection", "main", "playbackPolicy", "nope")), 400, "Bad request")

	// Direct uploads: the issuer's settings; the holder may not send any.
	r = a.do("POST", "/v1/uploads", key, `{"collection":"main","playbackPolicy":"signed","download":false}`)
	if r.status != 201 {
		t.Fatalf("direct: %d %s", r.status, r.body)
	}
	du := decode[wire.DirectUpload](t, r)
	wantError(t, tusCreate(du.URL, "", meta("filename", "a.mp4", "playbackPolicy", "public")), 400, "Bad request")
	if v := stored(idOf(tusCreate(du.URL, "", meta("filename", "a.mp4")))); v.PlaybackPolicy != domain.PlaybackSigned || v.WantsDownload {
		t.Fatalf("direct upload: %+v", v)
	}
	wantError(t, a.do("POST", "/v1/uploads", key, `{"collection":"main","playbackPolicy":"x"}`), 400, "Bad request")
}

// PATCH /v1/videos/{id} changes the policy and answers the Video.
func TestVideoPlaybackPolicy(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	other := a.account("other", domain.PlanPro)
	id := a.completedVideo(key)
	r := a.do("PATCH", "/v1/videos/"+id, key, `{"playbackPolicy":"signed"}`)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if v := decode[wire.Video](t, r); v.PlaybackPolicy != domain.PlaybackSigned || v.PlaylistURL == nil || strings.Contains(*v.PlaylistURL, "token") {
		t.Fatalf("video %+v", v)
	}
	wantError(t, a.do("PATCH", "/v1/videos/"+id, key, `{"playbackPolicy":"open"}`), 400, "Bad request")
	wantError(t, a.do("PATCH", "/v1/videos/"+id, key, `{}`), 400, "Bad request")
	// What this route cannot change is refused, not ignored (a client
	// would believe its rename worked).
	wantError(t, a.do("PATCH", "/v1/videos/"+id, key, `{"playbackPolicy":"public","filename":"x.mp4"}`), 400, "Bad request")
	wantError(t, a.do("PATCH", "/v1/videos/"+id, key, `{"playbackPolicy":1}`), 400, "Bad request")
	wantError(t, a.do("PATCH", "/v1/videos/"+id, other, `{"playbackPolicy":"public"}`), 404, "Not found")
	wantError(t, a.do("PATCH", "/v1/videos/01ARZ3NDEKTSV4RRFFQ69G5FAV", key, `{"playbackPolicy":"public"}`), 404, "Not found")
	if v := decode[wire.Video](t, a.do("GET", "/v1/videos/"+id, key, "")); v.PlaybackPolicy != domain.PlaybackSigned {
		t.Fatalf("after refusals: %+v", v)
	}
}

// POST .../playback-tokens: ttl bounds and default, origin checked, 404
// for another account's video.
func TestIssuePlaybackToken(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	other := a.account("other", domain.PlanPro)
	id := a.completedVideo(key)
	now := a.clock.Now()
	tests := []struct {
		name, body string
		status     int
		ttl        time.Duration
	}{
		{"default", ``, 201, time.Hour},
		{"shortest", `{"ttl":60}`, 201, time.Minute},
		{"longest", `{"ttl":604800}`, 201, 7 * 24 * time.Hour},
		{"with origin", `{"ttl":120,"origin":"https://Shop.example:8443"}`, 201, 2 * time.Minute},
		{"too short", `{"ttl":59}`, 400, 0},
		{"too long", `{"ttl":604801}`, 400, 0},
		{"origin with a path", `{"origin":"https://shop.example/page"}`, 400, 0},
		{"origin not http", `{"origin":"javascript:alert(1)"}`, 400, 0},
		// Hosts no browser ever sends as an origin: a token bound to one
		// could never play.
		{"origin wildcard", `{"origin":"https://*.shop.example"}`, 400, 0},
		{"origin unicode", `{"origin":"https://bücher.example"}`, 400, 0},
		{"origin port out of range", `{"origin":"https://shop.example:99999"}`, 400, 0},
		{"origin port zero", `{"origin":"https://shop.example:0"}`, 400, 0},
		{"origin trailing dot", `{"origin":"https://shop.example."}`, 400, 0},
		{"origin empty port", `{"origin":"https://shop.example:"}`, 400, 0},
		{"origin empty fragment", `{"origin":"https://shop.example#"}`, 400, 0},
		{"origin empty query", `{"origin":"https://shop.example?"}`, 400, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do("POST", "/v1/videos/"+id+"/playback-tokens", key, tc.body)
			if tc.status != 201 {
				wantError(t, r, tc.status, "Bad request")
				return
			}
			if r.status != 201 || r.header.Get("Cache-Control") != "no-store" {
				t.Fatalf("%d %v %s", r.status, r.header, r.body)
			}
			pt := decode[wire.PlaybackToken](t, r)
			if pt.ExpiresAt != domain.FormatTime(now.Add(tc.ttl)) {
				t.Fatalf("expiresAt %s, want %s", pt.ExpiresAt, domain.FormatTime(now.Add(tc.ttl)))
			}
			tok, _, err := jwt.NewParser().ParseUnverified(pt.Token, &playback.Claims{})
			if err != nil {
				t.Fatal(err)
			}
			c := tok.Claims.(*playback.Claims)
			ring, _, _ := a.s.cfg.Playback.Keys.Current(context.Background())
			if tok.Header["alg"] != "HS256" || tok.Header["kid"] != "kino-"+ring || c.Subject != id {
				t.Fatalf("token %v %+v", tok.Header, c)
			}
			if strings.Contains(tc.body, "origin") && c.Origin != "https://shop.example:8443" {
				t.Fatalf("origin claim %q", c.Origin)
			}
		})
	}
	wantError(t, a.do("POST", "/v1/videos/"+id+"/playback-tokens", other, ``), 404, "Not found")
}

// signedVideo is a completed video of key's account, made signed, with a
// master playlist, a media playlist, a segment, a thumbnail and a
// storyboard on disk.
func (a *testAPI) signedVideo(key string) string {
	a.t.Helper()
	id := a.completedVideo(key)
	if r := a.do("PATCH", "/v1/videos/"+id, key, `{"playbackPolicy":"signed"}`); r.status != 200 {
		a.t.Fatalf("%d %s", r.status, r.body)
	}
	dir, err := a.media.Dir(id)
	if err != nil {
		a.t.Fatal(err)
	}
	for rel, data := range map[string]string{
		"hls/master.m3u8": "#EXTM3U\n#EXT-X-VERSION:6\n" +
			`#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="audio",DEFAULT=YES,URI="audio/index.m3u8"` + "\n" +
			"#EXT-X-STREAM-INF:BANDWIDTH=400000,RESOLUTION=320x180,AUDIO=\"aud\"\n180p/index.m3u8\n",
		"hls/180p/index.m3u8":   "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:2.0,\nseg_00000.ts\n#EXT-X-ENDLIST\n",
		"hls/180p/seg_00000.ts": strings.Repeat("G", 376),
		"storyboard.vtt":        "WEBVTT\n\n00:00:00.000 --> 00:00:02.000\nstoryboard.jpg#xywh=0,0,160,90\n\n00:00:02.000 --> 00:00:04.000\nstoryboard.jpg#xywh=160,0,160,90\n",
		"storyboard.jpg":        "jpg",
	} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			a.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			a.t.Fatal(err)
		}
	}
	return id
}

// token asks kino for a playback token of video id.
func (a *testAPI) token(key, id, body string) string {
	a.t.Helper()
	r := a.do("POST", "/v1/videos/"+id+"/playback-tokens", key, body)
	if r.status != 201 {
		a.t.Fatalf("token: %d %s", r.status, r.body)
	}
	return decode[wire.PlaybackToken](a.t, r).Token
}

// signingKey creates a signing key for key's account and returns its id
// and private key.
func (a *testAPI) signingKey(key string) (string, ed25519.PrivateKey) {
	a.t.Helper()
	r := a.do("POST", "/v1/signing-keys", key, `{"label":"backend"}`)
	if r.status != 201 || r.header.Get("Cache-Control") != "no-store" {
		a.t.Fatalf("signing key: %d %s", r.status, r.body)
	}
	ck := decode[wire.CreatedSigningKey](a.t, r)
	blk, _ := pem.Decode([]byte(ck.PrivateKey))
	if blk == nil || blk.Type != "PRIVATE KEY" {
		a.t.Fatalf("private key is not PKCS#8 PEM: %q", ck.PrivateKey)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		a.t.Fatal(err)
	}
	return ck.ID, k.(ed25519.PrivateKey)
}

// sign makes a token with golang-jwt (for the hostile ones).
func sign(t *testing.T, m jwt.SigningMethod, kid string, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// joseSign signs claims as a customer's backend would, with go-jose (a
// JWT library kino does not use).
func joseSign(t *testing.T, kid string, priv ed25519.PrivateKey, claims any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: priv, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := josejwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// /cdn of a signed video: every way a token can be wrong is 403 with the
// error body; a kino token, a customer token (go-jose) and a matching
// origin are 200.
func TestSignedMediaTokens(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	other := a.account("other", domain.PlanPro)
	id := a.signedVideo(key)
	id2 := a.signedVideo(key)
	kid, priv := a.signingKey(key)
	otherKid, otherPriv := a.signingKey(other)
	pub := priv.Public().(ed25519.PublicKey)
	now := a.clock.Now()
	exp := now.Add(time.Hour).Unix()
	claims := func(extra ...any) jwt.MapClaims {
		c := jwt.MapClaims{"sub": id, "exp": exp}
		for i := 0; i < len(extra); i += 2 {
			if extra[i+1] == nil {
				delete(c, extra[i].(string))
			} else {
				c[extra[i].(string)] = extra[i+1]
			}
		}
		return c
	}
	kinoToken := a.token(key, id, "")
	originToken := a.token(key, id, `{"origin":"https://shop.example"}`)
	ringID, kinoKey, err := a.s.cfg.Playback.Keys.Current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	kinoKid := "kino-" + ringID
	tests := []struct {
		name, token string
		header      map[string]string
		status      int
	}{
		{name: "kino token", token: kinoToken, status: 200},
		{name: "customer token (go-jose)", token: joseSign(t, kid, priv, josejwt.Claims{Subject: id, Expiry: josejwt.NewNumericDate(now.Add(time.Minute))}), status: 200},
		{name: "customer token with nbf passed", token: sign(t, jwt.SigningMethodEdDSA, kid, priv, claims("nbf", now.Add(-time.Minute).Unix())), status: 200},
		{name: "origin from the Origin header", token: originToken, header: map[string]string{"Origin": "https://shop.example"}, status: 200},
		{name: "origin from the Referer", token: originToken, header: map[string]string{"Referer": "https://shop.example/watch?v=1"}, status: 200},
		{name: "no token", token: "", status: 403},
		{name: "wrong origin", token: originToken, header: map[string]string{"Origin": "https://evil.example"}, status: 403},
		{name: "origin-bound without Origin or Referer", token: originToken, status: 403},
		{name: "kino token of another video", token: a.token(key, id2, ""), status: 403},
		{name: "customer token of another video", token: sign(t, jwt.SigningMethodEdDSA, kid, priv, claims("sub", id2)), status: 403},
		{name: "no sub", token: sign(t, jwt.SigningMethodEdDSA, kid, priv, claims("sub", nil)), status: 403},
		{name: "no exp", token: sign(t, jwt.SigningMethodEdDSA, kid, priv, claims("exp", nil)), status: 403},
		{name: "expired", token: sign(t, jwt.SigningMethodEdDSA, kid, priv, claims("exp", now.Add(-time.Minute).Unix())), status: 403},
		{name: "not valid yet", token: sign(t, jwt.SigningMethodEdDSA, kid, priv, claims("nbf", now.Add(time.Minute).Unix())), status: 403},
		{name: "another account's signing key", token: sign(t, jwt.SigningMethodEdDSA, otherKid, otherPriv, claims()), status: 403},
		{name: "kid of this account's key, signed by another key", token: sign(t, jwt.SigningMethodEdDSA, kid, otherPriv, claims()), status: 403},
		{name: "unknown kid", token: sign(t, jwt.SigningMethodEdDSA, "01ARZ3NDEKTSV4RRFFQ69G5FAV", priv, claims()), status: 403},
		{name: "no kid", token: sign(t, jwt.SigningMethodEdDSA, "", priv, claims()), status: 403},
		{name: "alg none", token: sign(t, jwt.SigningMethodNone, kid, jwt.UnsafeAllowNoneSignatureType, claims()), status: 403},
		{name: "alg none with kid kino", token: sign(t, jwt.SigningMethodNone, "kino", jwt.UnsafeAllowNoneSignatureType, claims()), status: 403},
		{name: "HS256 keyed with the public key", token: sign(t, jwt.SigningMethodHS256, kid, []byte(pub), claims()), status: 403},
		{name: "HS256 keyed with the public key's base64", token: sign(t, jwt.SigningMethodHS256, kid, []byte(base64.RawURLEncoding.EncodeToString(pub)), claims()), status: 403},
		{name: "EdDSA with kid kino", token: sign(t, jwt.SigningMethodEdDSA, "kino", priv, claims()), status: 403},
		{name: "kino kid, another HS256 key", token: sign(t, jwt.SigningMethodHS256, "kino", bytes.Repeat([]byte{9}, 32), claims()), status: 403},
		{name: "HS512 with kino's key", token: sign(t, jwt.SigningMethodHS512, kinoKid, kinoKey, claims()), status: 403},
		{name: "kino's key under the old kid kino", token: sign(t, jwt.SigningMethodHS256, "kino", kinoKey, claims()), status: 403},
		{name: "kino's key under a key id not in the ring", token: sign(t, jwt.SigningMethodHS256, "kino-0000000000000000", kinoKey, claims()), status: 403},
		{name: "kino kid with nothing after it", token: sign(t, jwt.SigningMethodHS256, "kino-", kinoKey, claims()), status: 403},
		{name: "garbage", token: "not-a-token", status: 403},
		{name: "too long", token: sign(t, jwt.SigningMethodEdDSA, kid, priv, claims("pad", strings.Repeat("x", 5000))), status: 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, rel := range []string{"hls/180p/seg_00000.ts", "hls/master.m3u8", "thumbnail.jpg"} {
				req, _ := http.NewRequest("GET", a.srv.URL+"/cdn/"+id+"/"+rel+"?token="+tc.token, nil)
				for k, v := range tc.header {
					req.Header.Set(k, v)
				}
				r := a.request(req, "")
				if tc.status == 403 {
					wantError(t, r, 403, "Forbidden")
					continue
				}
				if r.status != 200 {
					t.Fatalf("%s: %d %s", rel, r.status, r.body)
				}
				if cc := r.header.Get("Cache-Control"); !strings.HasPrefix(cc, "private") {
					t.Fatalf("%s: Cache-Control %q", rel, cc)
				}
			}
		})
	}

	// Expiry, on kino's clock.
	a.clock.Set(now.Add(time.Hour + time.Minute))
	wantError(t, a.do("GET", "/cdn/"+id+"/thumbnail.jpg?token="+kinoToken, "", ""), 403, "Forbidden")
	a.clock.Set(now)

	// A deleted signing key signs nothing any more.
	customer := sign(t, jwt.SigningMethodEdDSA, kid, priv, claims())
	if r := a.do("GET", "/cdn/"+id+"/thumbnail.jpg?token="+customer, "", ""); r.status != 200 {
		t.Fatalf("before deletion: %d", r.status)
	}
	wantError(t, a.do("DELETE", "/v1/signing-keys/"+kid, other, ""), 404, "Not found")
	if r := a.do("DELETE", "/v1/signing-keys/"+kid, key, ""); r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	wantError(t, a.do("GET", "/cdn/"+id+"/thumbnail.jpg?token="+customer, "", ""), 403, "Forbidden")
	wantError(t, a.do("DELETE", "/v1/signing-keys/"+kid, key, ""), 404, "Not found")

	// Public again: no token needed.
	if r := a.do("PATCH", "/v1/videos/"+id, key, `{"playbackPolicy":"public"}`); r.status != 200 {
		t.Fatal(r.status)
	}
	if r := a.do("GET", "/cdn/"+id+"/thumbnail.jpg", "", ""); r.status != 200 || !strings.HasPrefix(r.header.Get("Cache-Control"), "public") {
		t.Fatalf("public: %d %v", r.status, r.header)
	}
}

// Signing keys: listed without private keys, at most 20 live.
func TestSigningKeys(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	other := a.account("other", domain.PlanPro)
	first, _ := a.signingKey(key)
	r := a.do("GET", "/v1/signing-keys", key, "")
	if r.status != 200 || strings.Contains(string(r.body), "PRIVATE") || strings.Contains(string(r.body), "publicKey") {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	if l := decode[wire.SigningKeys](t, r); len(l.SigningKeys) != 1 || l.SigningKeys[0].ID != first || l.SigningKeys[0].Algorithm != "EdDSA" || l.SigningKeys[0].Label != "backend" {
		t.Fatalf("list %+v", l)
	}
	if l := decode[wire.SigningKeys](t, a.do("GET", "/v1/signing-keys", other, "")); len(l.SigningKeys) != 0 {
		t.Fatalf("another account sees %+v", l)
	}
	for range domain.MaxLiveSigningKeys - 1 {
		a.signingKey(key)
	}
	wantError(t, a.do("POST", "/v1/signing-keys", key, ""), 409, "Conflict")
	// Nothing private at rest: the events hold the public half only.
	events, _, err := a.store.Load(context.Background(), domain.AccountStream("acme"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if b, _ := json.Marshal(e.Data); bytes.Contains(b, []byte("PRIVATE")) || len(b) > 400 {
			t.Fatalf("account event holds more than a public key: %s", b)
		}
	}
}

var tokenQuery = regexp.MustCompile(`[?&]token=([A-Za-z0-9_.-]+)`)

// Playlists and the storyboard of a signed video, fetched with a token,
// list every URI with that token (and nothing else changed); their
// answers are private, without the file's ETag; Range still works.
func TestSignedPlaylistsCarryTheToken(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	id := a.signedVideo(key)
	tok := a.token(key, id, "")
	for _, rel := range []string{"hls/master.m3u8", "hls/180p/index.m3u8", "storyboard.vtt"} {
		t.Run(rel, func(t *testing.T) {
			r := a.do("GET", "/cdn/"+id+"/"+rel+"?token="+tok, "", "")
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if cc := r.header.Get("Cache-Control"); cc != "private, no-cache" || r.header.Get("ETag") != "" {
				t.Fatalf("headers %v", r.header)
			}
			uris := 0
			for _, line := range strings.Split(string(r.body), "\n") {
				if line == "" || strings.HasPrefix(line, "WEBVTT") || strings.Contains(line, "-->") ||
					(strings.HasPrefix(line, "#") && !strings.Contains(line, "URI=")) {
					continue
				}
				uris++
				m := tokenQuery.FindAllStringSubmatch(line, -1)
				if len(m) != 1 || m[0][1] != tok {
					t.Fatalf("line without the token: %q", line)
				}
			}
			if uris == 0 {
				t.Fatalf("no URI in %s", r.body)
			}
			// Each listed URI is served with its token.
			if rel == "hls/180p/index.m3u8" {
				if r := a.do("GET", "/cdn/"+id+"/hls/180p/seg_00000.ts?token="+tok, "", ""); r.status != 200 {
					t.Fatalf("segment: %d", r.status)
				}
			}
			// A rewritten file's bytes depend on the token: a Range is
			// answered with the whole file (the rewrite streams: a 1-byte
			// Range must not cost a rewrite held in memory), HEAD with
			// none of it.
			req, _ := http.NewRequest("GET", a.srv.URL+"/cdn/"+id+"/"+rel+"?token="+tok, nil)
			req.Header.Set("Range", "bytes=0-5")
			if rr := a.request(req, ""); rr.status != 200 || !bytes.Equal(rr.body, r.body) || rr.header.Get("Accept-Ranges") != "" {
				t.Fatalf("range: %d %v %q", rr.status, rr.header, rr.body)
			}
			if rr := a.do("HEAD", "/cdn/"+id+"/"+rel+"?token="+tok, "", ""); rr.status != 200 || len(rr.body) != 0 {
				t.Fatalf("head: %d %q", rr.status, rr.body)
			}
		})
	}
}

// /cdn serves only files of a known video; playlists of a video still
// processing are not cached.
func TestCDNKnownVideosOnly(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	id := a.completedVideo(key)
	if r := a.do("GET", "/cdn/"+id+"/thumbnail.jpg", "", ""); r.status != 200 {
		t.Fatalf("%d", r.status)
	}
	dir, _ := a.media.Dir(id)
	if err := os.MkdirAll(filepath.Join(dir, "hls"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hls", "master.m3u8"), []byte("#EXTM3U\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := a.do("GET", "/cdn/"+id+"/hls/master.m3u8", "", ""); r.header.Get("Cache-Control") != "public, max-age=60" {
		t.Fatalf("completed playlist: %v", r.header)
	}
	// A processing video's playlist: no-cache.
	r := a.upload(key, "b.mp4", []byte("\x00\x00\x00\x18ftypmp42 video"))
	pid := decode[wire.Uploaded](t, r).Video.ID
	res, err := eventstore.Execute[domain.Video](context.Background(), a.store, videoStream(pid), domain.StartTranscode{Worker: "w", MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	a.settle(res.LastSeq())
	pdir, _ := a.media.Dir(pid)
	_ = os.MkdirAll(filepath.Join(pdir, "hls"), 0o755)
	_ = os.WriteFile(filepath.Join(pdir, "hls", "master.m3u8"), []byte("#EXTM3U\n"), 0o644)
	if r := a.do("GET", "/cdn/"+pid+"/hls/master.m3u8", "", ""); r.status != 200 || r.header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("processing playlist: %d %v", r.status, r.header)
	}
	// Deleted: its files are not served even while they linger.
	if r := a.do("DELETE", "/v1/videos/"+id, key, ""); r.status != 200 {
		t.Fatal(r.status)
	}
	wantError(t, a.do("GET", "/cdn/"+id+"/thumbnail.jpg", "", ""), 404, "Not found")
	wantError(t, a.do("GET", "/cdn/01ARZ3NDEKTSV4RRFFQ69G5FAV/thumbnail.jpg", "", ""), 404, "Not found")
}

// /play passes a well-formed ?token= on to its player's URLs.
func TestPlayPassesTheToken(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	id := a.signedVideo(key)
	tok := a.token(key, id, "")
	page := string(a.do("GET", "/play/"+id+"?token="+tok, "", "").body)
	if !strings.Contains(page, `data-src="http://cdn.example.test:8443/cdn/`+id+`/hls/master.m3u8?token=`+tok+`"`) {
		t.Fatalf("page: %s", page)
	}
	// Without a valid token a signed video's page shows nothing of it,
	// not even its name: 403 like its media.
	var filename string
	if v := decode[wire.Video](t, a.do("GET", "/v1/videos/"+id, key, "")); v.Filename != "" {
		filename = v.Filename
	}
	for _, q := range []string{"", `?token=x"><script>`, "?token=" + a.token(key, a.signedVideo(key), "")} {
		r := a.do("GET", "/play/"+id+q, "", "")
		if r.status != 403 || strings.Contains(string(r.body), filename) || strings.Contains(string(r.body), "<script>") {
			t.Fatalf("%q: %d %s", q, r.status, r.body)
		}
	}
	// An origin-bound token opens the page (its media requests check the
	// origin).
	if r := a.do("GET", "/play/"+id+"?token="+a.token(key, id, `{"origin":"https://shop.example"}`), "", ""); r.status != 200 {
		t.Fatalf("origin-bound: %d %s", r.status, r.body)
	}
}

// The token's length multiplies a playlist's size: tokens over 1 KiB are
// refused before anything parses them (4 KiB tokens would make a 6-hour
// playlist 22 MB per request).
func TestLongTokensRefused(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	id := a.signedVideo(key)
	kid, priv := a.signingKey(key)
	claims := jwt.MapClaims{"sub": id, "exp": a.clock.Now().Add(time.Hour).Unix()}
	claims["pad"] = strings.Repeat("p", 500)
	if tok := sign(t, jwt.SigningMethodEdDSA, kid, priv, claims); len(tok) > 1024 {
		t.Fatalf("padding too long: %d", len(tok))
	} else if r := a.do("GET", "/cdn/"+id+"/hls/master.m3u8?token="+tok, "", ""); r.status != 200 {
		t.Fatalf("a 1 KiB token: %d %s", r.status, r.body)
	}
	claims["pad"] = strings.Repeat("p", 800)
	wantError(t, a.do("GET", "/cdn/"+id+"/hls/master.m3u8?token="+sign(t, jwt.SigningMethodEdDSA, kid, priv, claims), "", ""), 403, "Forbidden")
}
