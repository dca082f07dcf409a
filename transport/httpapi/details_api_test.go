package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
)

// fmtJSON writes a decoded JSON value back as JSON (maps in key order).
func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// uploadWith posts a multipart upload with extra fields before the file.
func (a api) uploadWith(key, filename string, file []byte, fields ...[2]string) httpapitest.Response {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("collection", "main")
	for _, f := range fields {
		_ = mw.WriteField(f[0], f[1])
	}
	fw, _ := mw.CreateFormFile("file", filename)
	_, _ = fw.Write(file)
	_ = mw.Close()
	return a.Request(http.MethodPost, "/v1/videos", key, mw.FormDataContentType(), &buf)
}

// Details come in with a multipart upload, show on the Video and in lists,
// change by PATCH; every bad value is a 400 that leaves nothing behind.
func TestVideoDetails(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	key := a.Account("acme", domain.PlanPro)
	wantStatus(t, a.Do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	data := clip(t)

	up := a.uploadWith(key, "talk.mp4", data, [2]string{"title", " Launch talk "}, [2]string{"description", "Line 1\r\nLine 2"},
		[2]string{"tags", "launch, talk"}, [2]string{"tags", "Launch"}, [2]string{"metadata[order_id]", "A-42"})
	wantStatus(t, up, 202)
	id := up.JSON(t)["video"].(map[string]any)["id"].(string)
	v := a.Do("GET", "/v1/videos/"+id, key, nil).JSON(t)
	if v["title"] != "Launch talk" || v["description"] != "Line 1\nLine 2" || fmtJSON(v["tags"]) != `["launch","talk"]` || fmtJSON(v["metadata"]) != `{"order_id":"A-42"}` {
		t.Fatalf("details: %v", v)
	}
	list := a.Do("GET", "/v1/videos", key, nil).JSON(t)["videos"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["title"] != "Launch talk" {
		t.Fatalf("list: %v", list)
	}

	// Refused at upload: nothing is stored (no video, no file).
	before := a.events(t, "", "")
	for name, fields := range map[string][][2]string{
		"a title with a bidi override": {{"title", "evil\u202etxt.exe"}},
		"a title over 200 characters":  {{"title", strings.Repeat("t", 201)}},
		"a bad metadata key":           {{"metadata[no spaces]", "1"}},
		"an unclosed metadata key":     {{"metadata[a", "1"}},
		"an empty metadata value":      {{"metadata[a]", ""}},
		"a title twice":                {{"title", "a"}, {"title", "b"}},
		"21 tags":                      {{"tags", strings.Repeat("x,", 10) + "a,b,c,d,e,f,g,h,i,j,k"}},
		"a huge description":           {{"description", strings.Repeat("d", 4*domain.MaxDescriptionLen+1)}},
	} {
		if r := a.uploadWith(key, "b.mp4", data, fields...); r.Status != 400 {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	// Sent after the file, a bad title is refused once the file is in: the
	// file is removed again.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("collection", "main")
	fw, _ := mw.CreateFormFile("file", "c.mp4")
	_, _ = fw.Write(data)
	_ = mw.WriteField("title", "a\x00b")
	_ = mw.Close()
	wantError(t, a.Request(http.MethodPost, "/v1/videos", key, mw.FormDataContentType(), &buf), 400, "Bad request")
	if after := a.events(t, "", ""); after != before {
		t.Fatalf("refused uploads wrote %d events", after-before)
	}
	entries, _ := os.ReadDir(a.MediaDir())
	incoming, _ := os.ReadDir(filepath.Join(a.MediaDir(), ".incoming"))
	var videos int
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			videos++
		}
	}
	if videos != 1 || len(incoming) != 0 {
		t.Fatalf("media: %d video directories, %d incoming files; want 1 and 0", videos, len(incoming))
	}

	// PATCH: title, tags replaced, metadata merged, in one event.
	r := a.Do("PATCH", "/v1/videos/"+id, key, `{"title":"New","tags":["a"],"metadata":{"order_id":null,"plan":"pro"}}`)
	wantStatus(t, r, 200)
	if v := r.JSON(t); v["title"] != "New" || fmtJSON(v["tags"]) != `["a"]` || fmtJSON(v["metadata"]) != `{"plan":"pro"}` || v["description"] != "Line 1\nLine 2" {
		t.Fatalf("patched: %v", v)
	}
	if n := a.events(t, "", `"type":"VideoDetailsChanged"`); n != 1 {
		t.Fatalf("%d VideoDetailsChanged events", n)
	}
	// The same again changes nothing.
	wantStatus(t, a.Do("PATCH", "/v1/videos/"+id, key, `{"title":"New"}`), 200)
	if n := a.events(t, "", `"type":"VideoDetailsChanged"`); n != 1 {
		t.Fatalf("an unchanged PATCH wrote an event (%d)", n)
	}
	// A null title is the default again; metadata null clears it.
	if v := a.Do("PATCH", "/v1/videos/"+id, key, `{"title":null,"metadata":null,"description":""}`).JSON(t); v["title"] != "talk" || fmtJSON(v["metadata"]) != `{}` || v["description"] != "" {
		t.Fatalf("reset: %v", v)
	}

	other := a.Account("other", domain.PlanPro)
	for name, tc := range map[string]struct {
		key, body string
		status    int
	}{
		"empty":                 {key, `{}`, 400},
		"unknown field":         {key, `{"filename":"x.mp4"}`, 400},
		"tags not an array":     {key, `{"tags":"a,b"}`, 400},
		"a tag with a comma":    {key, `{"tags":["a,b"],"playbackPolicy":"signed"}`, 400},
		"metadata not strings":  {key, `{"metadata":{"a":1}}`, 400},
		"title not a string":    {key, `{"title":5}`, 400},
		"another account's":     {other, `{"title":"mine"}`, 404},
		"too many metadata":     {key, `{"metadata":{` + manyKeys(domain.MaxMetadataKeys+1) + `}}`, 400},
		"a newline in a title":  {key, `{"title":"a\nb"}`, 400},
		"a zero width in a tag": {key, `{"tags":["a\u200bb"]}`, 400},
	} {
		r := a.Do("PATCH", "/v1/videos/"+id, tc.key, tc.body)
		if r.Status != tc.status || !strings.Contains(string(r.Body), `"message"`) {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	// The refused tag left the policy alone too.
	if v := a.Do("GET", "/v1/videos/"+id, key, nil).JSON(t); v["playbackPolicy"] != "public" || v["title"] != "talk" {
		t.Fatalf("after refusals: %v", v)
	}
}

// tus carries details in Upload-Metadata and refuses bad ones at
// creation, before any byte is sent.
func TestTusDetails(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	key := a.Account("acme", domain.PlanPro)
	wantStatus(t, a.Do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	meta := func(kv ...string) string {
		var pairs []string
		for i := 0; i < len(kv); i += 2 {
			pairs = append(pairs, kv[i]+" "+base64.StdEncoding.EncodeToString([]byte(kv[i+1])))
		}
		return strings.Join(pairs, ",")
	}
	create := func(m string) httpapitest.Response {
		req, _ := http.NewRequest("POST", a.URL+"/v1/uploads/tus", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("Upload-Length", "1000")
		req.Header.Set("Upload-Metadata", m)
		return a.Send(req, nil)
	}
	wantStatus(t, create(meta("filename", "a.mp4", "collection", "main", "title", "T", "tags", "x,y", "metadata[k]", "v")), 201)
	for _, bad := range []string{
		meta("filename", "a.mp4", "collection", "main", "title", "a\u202eb"),
		meta("filename", "a.mp4", "collection", "main", "metadata[bad key]", "v"),
		meta("filename", "a.mp4", "collection", "main", "tags", strings.Repeat("t", domain.MaxTagLen+1)),
	} {
		wantError(t, create(bad), 400, "Bad request")
	}
}

func manyKeys(n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, `"k`+strings.Repeat("x", i)+`":"v"`)
	}
	return strings.Join(parts, ",")
}

// GET /v1/videos finds videos by their words, tags and metadata, and
// pages by cursor; every bad parameter is a 400 naming it.
func TestSearchAndCursors(t *testing.T) {
	t.Parallel()
	a := startAPI(t)
	key := a.Account("acme", domain.PlanPro)
	other := a.Account("other", domain.PlanPro)
	for _, k := range []string{key, other} {
		wantStatus(t, a.Do("POST", "/v1/collections", k, map[string]string{"slug": "main", "name": "Main"}), 201)
	}
	data := clip(t)
	up := func(k, filename string, fields ...[2]string) string {
		r := a.uploadWith(k, filename, data, fields...)
		wantStatus(t, r, 202)
		return r.JSON(t)["video"].(map[string]any)["id"].(string)
	}
	launch := up(key, "a.mp4", [2]string{"title", "Launch Talk"}, [2]string{"tags", "Keynote"}, [2]string{"metadata[order_id]", "A-42"})
	cafe := up(key, "Café crème.mp4", [2]string{"description", "Über the talks"})
	plain := up(key, "holiday.mov")
	up(other, "launch.mp4", [2]string{"title", "Launch talk"}, [2]string{"tags", "keynote"}, [2]string{"metadata[order_id]", "A-42"})

	ids := func(path string) []string {
		t.Helper()
		r := a.Do("GET", path, key, nil)
		wantStatus(t, r, 200)
		var out []string
		for _, v := range r.JSON(t)["videos"].([]any) {
			out = append(out, v.(map[string]any)["id"].(string))
		}
		return out
	}
	for path, want := range map[string][]string{
		"/v1/videos?q=launch":                       {launch},
		"/v1/videos?q=TALK+":                        {launch},       // a whole word: not "talks"
		"/v1/videos?q=tal":                          {cafe, launch}, // prefix: talk, talks
		"/v1/videos?q=tal%20":                       nil,            // a whole word now
		"/v1/videos?q=cafe+uber":                    {cafe},
		"/v1/videos?q=.*(cafe)%5B%5D":               {cafe},
		"/v1/videos?q=holiday":                      {plain},
		"/v1/videos?tag=keynote":                    {launch},
		"/v1/videos?metadata%5Border_id%5D=A-42":    {launch},
		"/v1/videos?metadata%5Border_id%5D=A-4":     nil,
		"/v1/videos?sort=oldest":                    {launch, cafe, plain},
		"/v1/videos":                                {plain, cafe, launch},
		"/v1/videos?q=talk&tag=keynote&sort=newest": {launch},
		"/v1/videos?createdAfter=2000-01-01T00:00:00Z&createdBefore=2999-01-01T00:00:00.5Z": {plain, cafe, launch},
		"/v1/videos?createdBefore=2000-01-01T00:00:00Z":                                     nil,
	} {
		if got := ids(path); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}

	// Cursors walk without repeats; the last page has none.
	r := a.Do("GET", "/v1/videos?limit=2", key, nil).JSON(t)
	next, _ := r["nextCursor"].(string)
	if len(r["videos"].([]any)) != 2 || next == "" {
		t.Fatalf("first page: %v", r)
	}
	r = a.Do("GET", "/v1/videos?limit=2&cursor="+next, key, nil).JSON(t)
	if vs := r["videos"].([]any); len(vs) != 1 || vs[0].(map[string]any)["id"] != launch || r["nextCursor"] != nil {
		t.Fatalf("second page: %v", r)
	}
	// Another account with the same cursor sees only its own videos.
	r = a.Do("GET", "/v1/videos?limit=2&cursor="+next, other, nil).JSON(t)
	for _, v := range r["videos"].([]any) {
		if id := v.(map[string]any)["id"]; id == launch || id == cafe || id == plain {
			t.Fatalf("another account's cursor page shows %v", id)
		}
	}

	for path, want := range map[string]string{
		"/v1/videos?q=" + strings.Repeat("a", 201):  "at most 200",
		"/v1/videos?q=...":                          "no words",
		"/v1/videos?q=a+b+c+d+e+f+g+h+i":            "at most 8 words",
		"/v1/videos?tag=" + strings.Repeat("t", 41): "tag",
		"/v1/videos?metadata%5Bno+space%5D=1":       "metadata filter",
		"/v1/videos?metadata%5Ba%5D=":               "metadata[a]",
		"/v1/videos?createdAfter=yesterday":         "createdAfter",
		"/v1/videos?sort=title":                     "sort",
		"/v1/videos?cursor=forged":                  "cursor",
		"/v1/videos?cursor=" + next + "&q=talk":     "another query",
		"/v1/videos?cursor=AAAAAAAAAAAAAAAAAAAAAA":  "cursor",
		"/v1/videos?collection=main&cursor=" + next: "another query",
	} {
		r := a.Do("GET", path, key, nil)
		if r.Status != 400 || !strings.Contains(string(r.Body), want) {
			t.Errorf("%s: %d %s (want 400 naming %q)", path, r.Status, r.Body, want)
		}
	}
}
