package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

// captionForm is a multipart body of the caption upload's fields and file.
func captionForm(file []byte, fields ...[2]string) (io.Reader, string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		_ = mw.WriteField(f[0], f[1])
	}
	if file != nil {
		fw, _ := mw.CreateFormFile("file", "subs.srt")
		_, _ = fw.Write(file)
	}
	_ = mw.Close()
	return &buf, mw.FormDataContentType()
}

func (a *testAPI) addCaptions(key, id string, file []byte, fields ...[2]string) response {
	a.t.Helper()
	body, ct := captionForm(file, fields...)
	req, _ := http.NewRequest("POST", a.srv.URL+"/v1/videos/"+id+"/captions", body)
	req.Header.Set("Content-Type", ct)
	return a.request(req, key)
}

// withHLS puts a one-rung HLS stream into video id's media: its master,
// its playlist, and a real MPEG-TS segment whose first presentation time
// is 6.376778 s (573910 in 90 kHz units).
func (a *testAPI) withHLS(id string) {
	a.t.Helper()
	dir, err := a.media.Dir(id)
	if err != nil {
		a.t.Fatal(err)
	}
	seg, err := os.ReadFile("../hls/testdata/segment.ts")
	if err != nil {
		a.t.Fatal(err)
	}
	files := map[string]string{
		"hls/master.m3u8":       "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-STREAM-INF:BANDWIDTH=300000,RESOLUTION=320x180,CODECS=\"avc1.64000d,mp4a.40.2\"\n180p/index.m3u8\n",
		"hls/180p/index.m3u8":   "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:1\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:1.000000,\nseg_00000.ts\n#EXT-X-ENDLIST\n",
		"hls/180p/seg_00000.ts": string(seg),
	}
	for rel, data := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			a.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			a.t.Fatal(err)
		}
	}
}

const srt = "\ufeff1\r\n00:00:00,500 --> 00:00:01,500\r\n<i>Hello</i> & welcome\r\n\r\n2\r\n00:00:01,600 --> 00:00:01,900\r\nBye\r\n"

// An SRT file becomes a READY WebVTT track: listed on the video, served
// as a subtitles rendition of its HLS stream (the master names it, its
// playlist spans the video, its WebVTT maps time 0 to the first segment's
// first presentation time), and gone from all of them once deleted.
func TestCaptionsUploadAndServe(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	id := a.completedVideo(key)
	a.withHLS(id)

	r := a.addCaptions(key, id, []byte(srt), [2]string{"language", "pt-br"}, [2]string{"default", "true"})
	if r.status != 201 {
		t.Fatalf("add: %d %s", r.status, r.body)
	}
	var track struct {
		ID, Language, Label, Source, Status string
		Default                             bool
		Cues                                int
		URL                                 *string
	}
	if err := json.Unmarshal(r.body, &track); err != nil {
		t.Fatal(err)
	}
	if track.Language != "pt-BR" || track.Label != "Português (Brasil)" || !track.Default || track.Status != "READY" ||
		track.Source != "uploaded" || track.Cues != 2 || track.URL == nil || !strings.HasSuffix(*track.URL, "/cdn/"+id+"/hls/captions/"+track.ID+".vtt") {
		t.Fatalf("track %s", r.body)
	}
	if v := a.do("GET", "/v1/videos/"+id, key, ""); !bytes.Contains(v.body, []byte(`"captions":[{"id":"`+track.ID)) {
		t.Fatalf("video without its track: %s", v.body)
	}

	master := a.do("GET", "/cdn/"+id+"/hls/master.m3u8", "", "")
	wantLines(t, "master", master, 200,
		`#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",LANGUAGE="pt-BR",NAME="Português (Brasil)",DEFAULT=YES,AUTOSELECT=YES,URI="captions/`+track.ID+`.m3u8"`,
		`#EXT-X-STREAM-INF:BANDWIDTH=300000,RESOLUTION=320x180,CODECS="avc1.64000d,mp4a.40.2",SUBTITLES="subs"`)
	wantLines(t, "subtitles playlist", a.do("GET", "/cdn/"+id+"/hls/captions/"+track.ID+".m3u8", "", ""), 200,
		"#EXT-X-TARGETDURATION:1", "#EXTINF:1.000,", track.ID+".vtt", "#EXT-X-ENDLIST")
	vtt := a.do("GET", "/cdn/"+id+"/hls/captions/"+track.ID+".vtt", "", "")
	wantLines(t, "WebVTT", vtt, 200, "WEBVTT", "X-TIMESTAMP-MAP=MPEGTS:573910,LOCAL:00:00:00.000",
		"00:00:00.500 --> 00:00:01.500", "<i>Hello</i> &amp; welcome", "00:00:01.600 --> 00:00:01.900")
	if ct := vtt.header.Get("Content-Type"); ct != "text/vtt; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	own := a.do("GET", "/v1/videos/"+id+"/captions/"+track.ID, key, "")
	if own.status != 200 || !bytes.Contains(own.body, []byte(`"id":"`+track.ID)) {
		t.Fatalf("get: %d %s", own.status, own.body)
	}
	req, _ := http.NewRequest("GET", a.srv.URL+"/v1/videos/"+id+"/captions/"+track.ID, nil)
	req.Header.Set("Accept", "text/vtt")
	if r := a.request(req, key); r.status != 200 || !strings.HasPrefix(string(r.body), "WEBVTT\n\n00:00:00.500") {
		t.Fatalf("get as WebVTT: %d %q", r.status, r.body)
	}

	// Signed: every URI carries the token; nothing without one.
	wantStatus := func(what string, r response, status int) {
		t.Helper()
		if r.status != status {
			t.Fatalf("%s: %d %s", what, r.status, r.body)
		}
	}
	wantStatus("make signed", a.do("PATCH", "/v1/videos/"+id, key, `{"playbackPolicy":"signed"}`), 200)
	wantStatus("signed master without a token", a.do("GET", "/cdn/"+id+"/hls/master.m3u8", "", ""), 403)
	wantStatus("signed track without a token", a.do("GET", "/cdn/"+id+"/hls/captions/"+track.ID+".vtt", "", ""), 403)
	var tok struct{ Token string }
	_ = json.Unmarshal(a.do("POST", "/v1/videos/"+id+"/playback-tokens", key, "").body, &tok)
	q := "?token=" + tok.Token
	wantLines(t, "signed master", a.do("GET", "/cdn/"+id+"/hls/master.m3u8"+q, "", ""), 200,
		`URI="captions/`+track.ID+`.m3u8`+q+`"`, "180p/index.m3u8"+q)
	wantLines(t, "signed subtitles playlist", a.do("GET", "/cdn/"+id+"/hls/captions/"+track.ID+".m3u8"+q, "", ""), 200, track.ID+".vtt"+q)
	wantStatus("signed track with its token", a.do("GET", "/cdn/"+id+"/hls/captions/"+track.ID+".vtt"+q, "", ""), 200)
	wantStatus("make public", a.do("PATCH", "/v1/videos/"+id, key, `{"playbackPolicy":"public"}`), 200)

	// Gone once deleted.
	wantStatus("delete", a.do("DELETE", "/v1/videos/"+id+"/captions/"+track.ID, key, ""), 204)
	wantStatus("delete again", a.do("DELETE", "/v1/videos/"+id+"/captions/"+track.ID, key, ""), 404)
	wantStatus("deleted track's WebVTT", a.do("GET", "/cdn/"+id+"/hls/captions/"+track.ID+".vtt", "", ""), 404)
	if m := a.do("GET", "/cdn/"+id+"/hls/master.m3u8", "", ""); bytes.Contains(m.body, []byte("SUBTITLES")) {
		t.Fatalf("master after the deletion:\n%s", m.body)
	}
	if l := a.do("GET", "/v1/videos/"+id+"/captions", key, ""); string(l.body) != `{"data":[]}`+"\n" && string(l.body) != `{"data":[]}` {
		t.Fatalf("list after the deletion: %s", l.body)
	}
}

func wantLines(t *testing.T, what string, r response, status int, lines ...string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: %d %s", what, r.status, r.body)
	}
	for _, l := range lines {
		if !bytes.Contains(r.body, []byte(l)) {
			t.Fatalf("%s lacks %q:\n%s", what, l, r.body)
		}
	}
}

// Every bad caption upload or request is a 4xx in the error shape, and
// stores nothing.
func TestCaptionsRefused(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	other := a.account("other", domain.PlanPro)
	id := a.completedVideo(key) // 1 s long
	ok := [2]string{"language", "en"}
	events := func() int {
		n, _, err := a.store.Load(t.Context(), videoStream(id))
		if err != nil {
			t.Fatal(err)
		}
		return len(n)
	}
	before := events()
	tests := []struct {
		name   string
		key    string
		file   []byte
		fields [][2]string
		status int
	}{
		{"another account's video", other, []byte(srt), [][2]string{ok}, 404},
		{"no file", key, nil, [][2]string{ok}, 400},
		{"no language", key, []byte(srt), nil, 400},
		{"a language that is no tag", key, []byte(srt), [][2]string{{"language", "english please"}}, 400},
		{"an undetermined language", key, []byte(srt), [][2]string{{"language", "und"}}, 400},
		{"an unknown language", key, []byte(srt), [][2]string{{"language", "xx"}}, 400},
		{"a PNG", key, []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), [][2]string{ok}, 415},
		{"a cue at 10 hours", key, []byte("WEBVTT\n\n10:00:00.000 --> 10:00:01.000\nlate\n"), [][2]string{ok}, 400},
		{"a bidi label", key, []byte(srt), [][2]string{ok, {"label", "a\u202eb"}}, 400},
		{"default not a boolean", key, []byte(srt), [][2]string{ok, {"default", "yes"}}, 400},
		{"an unknown field", key, []byte(srt), [][2]string{ok, {"kind", "captions"}}, 400},
		{"a file of 3 MiB", key, bytes.Repeat([]byte("a"), 3<<20), [][2]string{ok}, 413},
	}
	for _, tc := range tests {
		r := a.addCaptions(tc.key, id, tc.file, tc.fields...)
		if r.status != tc.status {
			t.Errorf("%s: %d %s; want %d", tc.name, r.status, r.body, tc.status)
			continue
		}
		var e map[string]any
		if json.Unmarshal(r.body, &e) != nil || e["error"] == nil || e["message"] == "" || len(e) != 2 {
			t.Errorf("%s: body %s is not {error, message}", tc.name, r.body)
		}
	}
	// Not multipart at all, and a Content-Length far over the limit.
	if r := a.do("POST", "/v1/videos/"+id+"/captions", key, `{"language":"en"}`); r.status != 400 {
		t.Errorf("JSON body: %d %s", r.status, r.body)
	}
	body, ct := captionForm(nil, ok)
	req, _ := http.NewRequest("POST", a.srv.URL+"/v1/videos/"+id+"/captions", io.MultiReader(body, bytes.NewReader(make([]byte, 50<<20))))
	req.ContentLength = 50 << 20
	req.Header.Set("Content-Type", ct)
	if r := a.request(req, key); r.status != 413 {
		t.Errorf("50 MB: %d %s", r.status, r.body)
	}
	if n := events(); n != before {
		t.Fatalf("refusals stored %d events", n-before)
	}

	// While a video is processed its length is not known: the plan's
	// longest video bounds the cues (pro: 6 h).
	up := a.upload(key, "pending.mp4", []byte("\x00\x00\x00\x18ftypmp42 video"))
	var pending struct{ Video struct{ ID string } }
	_ = json.Unmarshal(up.body, &pending)
	if r := a.addCaptions(key, pending.Video.ID, []byte("WEBVTT\n\n10:00:00.000 --> 10:00:01.000\nlate\n"), ok); r.status != 400 {
		t.Errorf("a cue at 10 hours on a PENDING video: %d %s", r.status, r.body)
	}
	if r := a.addCaptions(key, pending.Video.ID, []byte(srt), ok); r.status != 201 {
		t.Errorf("captions of a PENDING video: %d %s", r.status, r.body)
	}

	// Labels tell tracks apart; generation needs an engine.
	if r := a.addCaptions(key, id, []byte(srt), ok); r.status != 201 {
		t.Fatalf("add: %d %s", r.status, r.body)
	}
	if r := a.addCaptions(key, id, []byte(srt), [2]string{"language", "en-GB"}, [2]string{"label", "english"}); r.status != 409 {
		t.Errorf("same label: %d %s", r.status, r.body)
	}
	if r := a.do("POST", "/v1/videos/"+id+"/captions/generate", key, `{"language":"en"}`); r.status != 400 ||
		!strings.Contains(string(r.body), "does not generate captions") {
		t.Errorf("generate without an engine: %d %s", r.status, r.body)
	}
	if r := a.do("GET", "/v1/videos/"+id+"/captions/01JTRACK00000000000000000Z", key, ""); r.status != 404 {
		t.Errorf("unknown track: %d %s", r.status, r.body)
	}
	if r := a.do("GET", "/v1/videos/"+id+"/captions", other, ""); r.status != 404 {
		t.Errorf("another account's list: %d %s", r.status, r.body)
	}
}

// Generation: a PENDING track in a language the engine knows; the
// language's name labels it.
func TestCaptionsGenerateRequest(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *Config) { c.Captions.Languages = []string{"en"} })
	key := a.account("acme", domain.PlanPro)
	id := a.completedVideo(key)
	r := a.do("POST", "/v1/videos/"+id+"/captions/generate", key, `{"language":"en-US"}`)
	if r.status != 202 || !bytes.Contains(r.body, []byte(`"status":"PENDING"`)) || !bytes.Contains(r.body, []byte(`"source":"generated"`)) ||
		!bytes.Contains(r.body, []byte(`"label":"American English (auto-generated)"`)) || !bytes.Contains(r.body, []byte(`"url":null`)) {
		t.Fatalf("generate: %d %s", r.status, r.body)
	}
	if r := a.do("POST", "/v1/videos/"+id+"/captions/generate", key, `{"language":"en-US","label":"Other"}`); r.status != 409 {
		t.Errorf("a second generation in that language while one runs: %d %s", r.status, r.body)
	}
	if r := a.do("POST", "/v1/videos/"+id+"/captions/generate", key, `{"language":"fr"}`); r.status != 400 {
		t.Errorf("a language the engine does not know: %d %s", r.status, r.body)
	}
	if m := a.do("GET", "/cdn/"+id+"/hls/captions/"+strings.Repeat("0", 26)+".vtt", "", ""); m.status != 404 {
		t.Errorf("a pending or unknown track's WebVTT: %d", m.status)
	}
}
