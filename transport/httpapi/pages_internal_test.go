package httpapi

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
)

// /embed plays a public video in any site's iframe; /play names its embed
// and oEmbed; /oembed answers oEmbed 1.0 for public videos only.
func TestEmbedAndOEmbed(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	id := a.completedVideo(key)
	origin := a.srv.URL

	e := a.do("GET", "/embed/"+id, "", "")
	csp := e.header.Get("Content-Security-Policy")
	if e.status != 200 || !strings.Contains(csp, "frame-ancestors 'self' *") || e.header.Get("X-Frame-Options") != "" {
		t.Fatalf("embed: %d %v", e.status, e.header)
	}
	if page := string(e.body); !strings.Contains(page, `data-src="`) || !strings.Contains(page, `class="embed"`) || !strings.Contains(page, `<script src="/assets/play.js"></script>`) {
		t.Fatalf("embed page:\n%s", page)
	}

	p := a.do("GET", "/play/"+id, "", "")
	oembed := origin + "/oembed?format=json&amp;url=" + url.QueryEscape(origin+"/play/"+id)
	if page := string(p.body); !strings.Contains(page, `<link rel="alternate" type="application/json+oembed" href="`+oembed+`"`) ||
		!strings.Contains(page, `<title>clip · kino</title>`) || !strings.Contains(page, origin+"/embed/"+id) {
		t.Fatalf("play page:\n%s", page)
	}

	o := a.do("GET", "/oembed?format=json&maxwidth=320&url="+url.QueryEscape(origin+"/play/"+id), "", "")
	var got map[string]any
	if err := json.Unmarshal(o.body, &got); o.status != 200 || err != nil {
		t.Fatalf("oembed: %d %s", o.status, o.body)
	}
	html, _ := got["html"].(string)
	if got["version"] != "1.0" || got["type"] != "video" || got["title"] != "clip" || got["width"] != 320.0 || got["height"] != 180.0 ||
		!strings.Contains(html, `<iframe src="`+origin+`/embed/`+id+`" width="320" height="180"`) || got["provider_name"] != "kino" {
		t.Fatalf("oembed: %s", o.body)
	}
	for q, status := range map[string]int{
		"format=xml&url=" + url.QueryEscape(origin+"/play/"+id):             501,
		"url=" + url.QueryEscape("https://elsewhere.example/play/"+id):      404,
		"url=" + url.QueryEscape(origin+"/play/01ARZ3NDEKTSV4RRFFQ69G5FAV"): 404,
		"url=" + url.QueryEscape(origin+"/cdn/"+id+"/hls/master.m3u8"):      404,
		"maxwidth=0&url=" + url.QueryEscape(origin+"/play/"+id):             400,
		"": 400,
	} {
		if r := a.do("GET", "/oembed?"+q, "", ""); r.status != status || !strings.Contains(string(r.body), `"message"`) {
			t.Errorf("oembed?%s: %d %s, want %d", q, r.status, r.body, status)
		}
	}

	// A signed video: no oEmbed, no embed without a token, and its pages
	// name nothing of it.
	res, err := eventstore.Execute[domain.Video](context.Background(), a.store, videoStream(id),
		domain.SetPlaybackPolicy{Account: "acme", Policy: domain.PlaybackSigned})
	if err != nil {
		t.Fatal(err)
	}
	a.settle(res.LastSeq())
	if r := a.do("GET", "/oembed?url="+url.QueryEscape(origin+"/play/"+id), "", ""); r.status != 401 {
		t.Fatalf("oembed of a signed video: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/play/" + id, "/embed/" + id} {
		r := a.do("GET", path, "", "")
		if r.status != 403 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || strings.Contains(string(r.body), "clip") ||
			!strings.Contains(string(r.body), "This video is private") {
			t.Fatalf("%s of a signed video without a token: %d %s", path, r.status, r.body)
		}
	}
	if r := a.do("GET", "/embed/"+id, "", ""); strings.Contains(r.header.Get("Content-Security-Policy"), "*") {
		t.Fatalf("a signed video's embed may be framed anywhere: %v", r.header)
	}
}

// The pages answer people, not programs: HTML that never names the file
// or an internal status.
func TestPagesSpeakHTML(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *Config) { c.Playback.FrameAncestors = []string{"https://blog.example"} })
	key := a.account("acme", domain.PlanPro)
	r := a.upload(key, "secret-plans.mp4", []byte("\x00\x00\x00\x18ftypmp42 video"))
	var up struct{ Video struct{ ID string } }
	if err := json.Unmarshal(r.body, &up); err != nil {
		t.Fatal(err)
	}
	pending := up.Video.ID
	p := a.do("GET", "/play/"+pending, "", "")
	if p.status != 200 || !strings.Contains(string(p.body), "still being processed") || strings.Contains(string(p.body), "PENDING") {
		t.Fatalf("a pending video's page: %d %s", p.status, p.body)
	}
	res, err := eventstore.Execute[domain.Video](context.Background(), a.store, videoStream(pending), domain.DeleteVideo{Account: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	a.settle(res.LastSeq())
	for _, path := range []string{"/play/" + pending, "/embed/" + pending, "/play/01ARZ3NDEKTSV4RRFFQ69G5FAV", "/play/nope"} {
		r := a.do("GET", path, "", "")
		if r.status != 404 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(string(r.body), "Video not found") ||
			strings.Contains(string(r.body), "secret-plans") {
			t.Fatalf("%s: %d %v %s", path, r.status, r.header, r.body)
		}
	}
	id := a.completedVideo(key)
	if e := a.do("GET", "/embed/"+id, "", ""); !strings.Contains(e.header.Get("Content-Security-Policy"), "frame-ancestors 'self' https://blog.example") {
		t.Fatalf("the operator's frame ancestors: %v", e.header)
	}
}

// A collection's embedOrigins are the only sites (besides kino) that may
// frame its videos' pages; a bad origin is a 400 that changes nothing;
// [] goes back to the default.
func TestCollectionEmbedOrigins(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	key := a.account("acme", domain.PlanPro)
	id := a.completedVideo(key) // in "main"
	for _, bad := range []string{`["https://a.com/path"]`, `["https://a.com; script-src *"]`, `"https://a.com"`, `["javascript:alert(1)"]`} {
		if r := a.do("PATCH", "/v1/collections/main", key, `{"name":"Renamed","embedOrigins":`+bad+`}`); r.status != 400 {
			t.Errorf("embedOrigins %s: %d %s", bad, r.status, r.body)
		}
	}
	if r := a.do("GET", "/v1/collections/main", key, ""); !strings.Contains(string(r.body), `"name":"Main"`) || !strings.Contains(string(r.body), `"embedOrigins":[]`) {
		t.Fatalf("a refused PATCH changed the collection: %s", r.body)
	}
	r := a.do("PATCH", "/v1/collections/main", key, `{"embedOrigins":["https://Blog.example.com","https://*.example.org"]}`)
	if r.status != 200 || !strings.Contains(string(r.body), `"embedOrigins":["https://blog.example.com","https://*.example.org"]`) {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	for _, page := range []string{"/embed/", "/play/"} {
		p := a.do("GET", page+id, "", "")
		csp := p.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'self' https://blog.example.com https://*.example.org;") && !strings.HasSuffix(csp, "frame-ancestors 'self' https://blog.example.com https://*.example.org") {
			t.Errorf("%s CSP: %s", page, csp)
		}
		if p.header.Get("X-Frame-Options") != "" {
			t.Errorf("%s keeps X-Frame-Options", page)
		}
	}
	if r := a.do("PATCH", "/v1/collections/main", key, `{"embedOrigins":[]}`); r.status != 200 {
		t.Fatalf("reset: %d %s", r.status, r.body)
	}
	if csp := a.do("GET", "/embed/"+id, "", "").header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'self' *") {
		t.Errorf("default again: %s", csp)
	}
}
