package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/httpapi/respond"
)

type unfinishedList struct {
	Data []struct {
		ID, Filename, Collection, CreatedAt, ExpiresAt string
		Length, Offset                                 int64
		Direct                                         bool
	}
}

func (a *testAPI) unfinished(key string) unfinishedList {
	a.t.Helper()
	r := a.do("GET", "/v1/uploads", key, "")
	var l unfinishedList
	if r.status != 200 || r.header.Get("Cache-Control") != "no-store" {
		a.t.Fatalf("GET /v1/uploads: %d %v %s", r.status, r.header, r.body)
	}
	if err := json.Unmarshal(r.body, &l); err != nil || l.Data == nil {
		a.t.Fatalf("GET /v1/uploads: %s (%v)", r.body, err)
	}
	return l
}

func (l unfinishedList) ids() []string {
	var ids []string
	for _, u := range l.Data {
		ids = append(ids, u.ID)
	}
	return ids
}

// GET /v1/uploads lists the caller's unfinished uploads, newest first,
// direct ones included; never another account's, nor a finished one, nor
// an expired one; and a listed upload can be DELETEd at
// /v1/uploads/tus/{id} with the account's key, direct ones too.
func TestUploadsListsUnfinished(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t, func(c *Config) { c.Uploads.TusExpiry = time.Hour })
	key := a.account("acme", domain.PlanPro)
	other := a.account("other", domain.PlanPro)
	wantError(t, a.do("GET", "/v1/uploads", "", ""), 401, respond.LabelMissingKey)
	if l := a.unfinished(key); len(l.Data) != 0 {
		t.Fatalf("no uploads yet: %v", l)
	}

	file := clip(3000)
	start := a.clock.Now()
	old := a.tusCreate(key, len(file))
	if r := a.tusPatch(old, key, 0, file[:1000]); r.status != 204 {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	a.clock.Set(start.Add(time.Minute))
	finished := a.tusCreate(key, len(file))
	if r := a.tusPatch(finished, key, 0, file); r.status != 204 {
		t.Fatalf("PATCH all: %d %s", r.status, r.body)
	}
	a.clock.Set(start.Add(2 * time.Minute))
	url, _ := a.directURL(key)
	cr := a.tusReq("POST", url, "", map[string]string{"Upload-Length": "3000",
		"Upload-Metadata": tusMeta("filename", `<img src=x onerror=alert(1)>.mp4`, "collection", "main")}, file[:500])
	if cr.status != 201 {
		t.Fatalf("direct creation: %d %s", cr.status, cr.body)
	}
	direct := cr.header.Get("Location")
	a.clock.Set(start.Add(3 * time.Minute))
	theirs := a.tusCreate(other, len(file))

	idOf := func(loc string) string { return loc[strings.LastIndex(loc, "/")+1:] }
	l := a.unfinished(key)
	if got, want := strings.Join(l.ids(), " "), idOf(direct)+" "+idOf(old); got != want {
		t.Fatalf("acme's unfinished uploads: %s, want %s (newest first)", got, want)
	}
	d, o := l.Data[0], l.Data[1]
	if !d.Direct || d.Filename != "<img src=x onerror=alert(1)>.mp4" || d.Offset != 500 || d.Length != 3000 || d.Collection != "main" {
		t.Fatalf("direct upload listed as %+v", d)
	}
	if o.Direct || o.Filename != "clip.mp4" || o.Offset != 1000 || o.Length != 3000 || o.Collection != "main" ||
		o.CreatedAt != domain.FormatTime(start) || o.ExpiresAt != domain.FormatTime(start.Add(time.Hour)) {
		t.Fatalf("upload listed as %+v", o)
	}
	if got := a.unfinished(other).ids(); len(got) != 1 || got[0] != idOf(theirs) {
		t.Fatalf("other's unfinished uploads: %v", got)
	}

	// The account's key DELETEs both, the direct one at its plain URL.
	for _, id := range []string{d.ID, o.ID} {
		if r := a.tusReq("DELETE", "/v1/uploads/tus/"+id, key, nil, nil); r.status != 204 {
			t.Fatalf("DELETE %s: %d %s", id, r.status, r.body)
		}
	}
	if l := a.unfinished(key); len(l.Data) != 0 {
		t.Fatalf("after DELETE: %v", l.ids())
	}
	// Another account's upload stays out of reach.
	wantError(t, a.tusReq("DELETE", "/v1/uploads/tus/"+idOf(theirs), key, nil, nil), 404, "Not found")

	// Expired uploads are not listed (they answer 410 and are swept).
	a.clock.Set(start.Add(3*time.Minute + time.Hour))
	if l := a.unfinished(other); len(l.Data) != 0 {
		t.Fatalf("expired upload listed: %v", l.ids())
	}
}
