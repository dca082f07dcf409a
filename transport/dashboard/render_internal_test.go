package dashboard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/wire"
)

func ptr[T any](v T) *T { return &v }

// TestPagesRender renders every page with empty and with full data: no
// template error, the layout around it, and hostile strings escaped.
func TestPagesRender(t *testing.T) {
	d, err := New(Config{API: http.NotFoundHandler(), CDNURL: "http://cdn.test/cdn", HLSJS: true})
	if err != nil {
		t.Fatal(err)
	}
	const evil = `<script>alert(1)</script>`
	me := identity{ID: "u1", Email: evil + "@x.test", Account: "acme", Operator: true}
	video := wire.Video{ID: "01J", Filename: evil + ".mp4", Status: domain.StatusCompleted, Duration: ptr(61.4),
		OriginalSize: 12345678, ProcessedSize: ptr(int64(2345678)), PlaylistURL: ptr("http://cdn.test/cdn/a/master.m3u8"),
		ThumbnailURL: ptr("http://cdn.test/cdn/a/thumb.jpg"), PreviewURL: ptr("http://cdn.test/cdn/a/preview.mp4"),
		Resolutions: []string{"240p", "720p"}, Collection: wire.CollectionRef{Slug: "main", Name: evil},
		CreatedAt: "2026-11-22T12:00:00Z", UpdatedAt: "2026-11-22T12:01:00Z", Progress: ptr(1.0)}
	processing := video
	processing.ID, processing.Status, processing.PlaylistURL, processing.ThumbnailURL, processing.Progress = "01K", domain.StatusProcessing, nil, nil, ptr(0.42)
	failed := video
	failed.ID, failed.Status, failed.PlaylistURL, failed.ErrorMessage = "01L", domain.StatusFailed, nil, ptr(evil)
	coll := wire.Collection{Slug: "main", Name: evil, VideoCount: 3, CreatedAt: "2026-11-22T12:00:00Z"}
	key := Key{ID: "k1", Prefix: "kino_live_ab12", Label: evil, CreatedAt: "2026-11-22T12:00:00Z", LastUsedAt: ptr("2026-11-22T12:05:00Z")}
	hook := wire.Webhook{ID: "w1", URL: "https://example.test/" + evil, Events: []string{"video.completed"}, CreatedAt: "2026-11-22T12:00:00Z"}
	usage := Usage{Slug: "acme", Plan: "pro", StorageBytes: 1 << 30, Videos: map[string]int{"COMPLETED": 2, "PROCESSING": 1}}
	usage.RateLimit.Limit, usage.RateLimit.Remaining = 300, 299
	usage.Limits.StorageBytes = 10 << 30
	acct := Account{Slug: "acme", Plan: "pro", CreatedAt: "2026-11-22T12:00:00Z", Videos: map[string]int{"COMPLETED": 2}, StorageBytes: 99}
	health := &Health{Status: "degraded", Queues: map[string]*int64{"transcode": ptr(int64(2)), "deliveries": nil},
		Checks: map[string]string{"media": "ok"}, Errors: []string{evil}, Workers: []Worker{{Name: "host:1", Role: "serve", LastSeen: "2026-11-22T12:00:00Z", Running: 1}}}
	health.NATS.Connected, health.NATS.URL = true, "nats://127.0.0.1:4222"
	health.ReadModels.Lag, health.ReadModels.LastSeq, health.ReadModels.Error = ptr(uint64(0)), ptr(uint64(9)), ptr(evil)
	cases := []struct {
		page        string
		empty, full any
	}{
		{"login", struct{ Next string }{}, struct{ Next string }{"/videos/x?" + evil}},
		{"password", struct{ Token string }{}, struct{ Token string }{evil}},
		{"error", errNotFound, &apiError{Status: 503, Label: "Service Unavailable", Message: evil}},
		{"videos", VideosPage{Statuses: statuses}, VideosPage{Videos: []wire.Video{video, processing, failed}, Collections: []wire.Collection{coll},
			Collection: "main", Status: "COMPLETED", Search: evil, Tag: evil, Statuses: statuses, Next: "/?cursor=x", First: "/", Query: "limit=50"}},
		{"video", VideoPage{Video: processing}, VideoPage{Video: video, EmbedCode: evil, Events: []wire.Event{{Seq: 1, Type: "UploadAccepted", OccurredAt: "2026-11-22T12:00:00Z"}}}},
		{"upload", UploadPage{}, UploadPage{Collections: []wire.Collection{coll}, Selected: "main"}},
		{"collections", []wire.Collection{}, []wire.Collection{coll}},
		{"keys", []Key{}, []Key{key, {ID: "k2", Prefix: "kino_live_cd34", Label: "x", CreatedAt: "2026-11-22T12:00:00Z"}}},
		{"key", Key{}, key},
		{"webhooks", WebhooksPage{}, WebhooksPage{Webhooks: []wire.Webhook{hook}, Events: []string{"video.completed", "video.failed"}}},
		{"webhook", WebhookPage{Webhook: hook}, WebhookPage{Webhook: hook, Deliveries: []wire.Delivery{
			{DeliveryID: "d1", Event: "webhook.test", Attempt: 1, Succeeded: true, StatusCode: ptr(200), At: "2026-11-22T12:00:00Z"},
			{DeliveryID: "d2", Event: "video.completed", VideoID: ptr("01J"), Attempt: 8, GaveUp: true, StatusCode: ptr(500), Error: ptr(evil)}}}},
		{"usage", UsagePage{Statuses: statuses}, UsagePage{Usage: usage, Statuses: statuses}},
		{"admin", AdminPage{Plans: plans, Statuses: statuses, HealthError: evil}, AdminPage{Accounts: []Account{acct},
			Users:  []User{{ID: "u", Email: evil, Account: "acme", CreatedAt: "2026-11-22T12:00:00Z"}, {ID: "o", Email: "op@x.test", Operator: true, PasswordSet: true}},
			Health: health, Plans: plans, Statuses: statuses}},
		{"account", AdminAccountPage{Plans: plans}, AdminAccountPage{Account: acct, Keys: []Key{key}, Plans: plans}},
		{"signingkeys", []wire.SigningKey{}, []wire.SigningKey{{ID: "01SK", Algorithm: "EdDSA", Label: evil, CreatedAt: "2026-11-22T12:00:00Z"}}},
	}
	if len(cases) != len(pageNames) {
		t.Fatalf("%d cases for %d pages", len(cases), len(pageNames))
	}
	for _, c := range cases {
		t.Run(c.page, func(t *testing.T) {
			for i, data := range []any{c.empty, c.full} {
				for _, who := range []identity{{}, me} {
					w := httptest.NewRecorder()
					d.render(w, httptest.NewRequest("GET", "/", nil), 200, c.page, view{Title: evil, Me: who, Data: data})
					body := w.Body.String()
					if w.Code != 200 || !strings.Contains(body, `<main id="main"`) || !strings.Contains(body, "</html>") {
						t.Fatalf("data %d: %d\n%s", i, w.Code, body)
					}
					if strings.Contains(body, evil) {
						t.Fatalf("data %d shows an unescaped string:\n%s", i, body)
					}
				}
			}
		})
	}
}

func TestLocalNext(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "",
		"/":                       "/",
		"/videos/01J?x=1":         "/videos/01J?x=1",
		"//evil.test/":            "",
		"/\\evil.test":            "",
		"https://evil.test/":      "",
		"javascript:alert(1)":     "",
		"evil.test":               "",
		"/%2F%2Fevil.test":        "/%2F%2Fevil.test", // a path on this site
		"/ok\r\nSet-Cookie: a=b":  "",
		"\t//evil.test":           "",
		"/\t/evil.test":           "",
		"/admin":                  "/admin",
		"///evil.test":            "",
		"/x@evil.test":            "/x@evil.test",
		"http:/evil.test":         "",
		"/redirect?u=//evil.test": "/redirect?u=//evil.test",
	} {
		if got := localNext(in); got != want {
			t.Errorf("localNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWithoutAssets: a kino built without `just assets` says so where it
// matters, and what to run.
func TestWithoutAssets(t *testing.T) {
	d, err := New(Config{API: http.NotFoundHandler(), HLSJS: false})
	if err != nil {
		t.Fatal(err)
	}
	was := tusBuilt
	tusBuilt = false
	defer func() { tusBuilt = was }()
	me := identity{ID: "u", Email: "a@x.test", Account: "acme"}
	for page, data := range map[string]any{
		"upload": UploadPage{Collections: []wire.Collection{{Slug: "main", Name: "Main"}}},
		"video":  VideoPage{Video: wire.Video{ID: "v", Status: domain.StatusCompleted, PlaylistURL: ptr("http://cdn.test/p.m3u8")}},
	} {
		w := httptest.NewRecorder()
		d.render(w, httptest.NewRequest("GET", "/", nil), 200, page, view{Title: "x", Me: me, Data: data})
		body := w.Body.String()
		if !strings.Contains(body, "<code>just assets</code>") || strings.Contains(body, "tus.min.js") || strings.Contains(body, "hls.min.js") {
			t.Errorf("%s without assets:\n%s", page, body)
		}
	}
}

// The video page in each state beyond the contract's: the player while
// PROCESSING once playable, the token request of a signed video, the
// queue position and ETA, Retry on FAILED only, the storyboard and
// download links, and the policy toggle.
func TestVideoPageStates(t *testing.T) {
	d, err := New(Config{API: http.NotFoundHandler(), CDNURL: "http://cdn.test/cdn", HLSJS: true})
	if err != nil {
		t.Fatal(err)
	}
	base := wire.Video{ID: "01J", Filename: "a.mp4", Status: domain.StatusPending, OriginalSize: 10,
		Collection: wire.CollectionRef{Slug: "main", Name: "Main"}, CreatedAt: "2026-11-22T12:00:00Z",
		UpdatedAt: "2026-11-22T12:00:00Z", Progress: ptr(0.0), PlaybackPolicy: domain.PlaybackPublic}
	with := func(change func(*wire.Video)) wire.Video {
		v := base
		change(&v)
		return v
	}
	tests := []struct {
		name      string
		v         wire.Video
		want, not []string
	}{
		{"pending in line", with(func(v *wire.Video) { v.QueuePosition = ptr(3) }),
			[]string{"Waiting: 2 in line before it", `data-cell="eta"`, "Make signed"}, []string{`id="player"`, ">Retry<"}},
		{"processing, not playable yet", with(func(v *wire.Video) {
			v.Status, v.Progress, v.Speed, v.ETA = domain.StatusProcessing, ptr(0.25), ptr(2.0), ptr(75.0)
		}), []string{"25% · about 2 min left · 2.0× real time", "<progress"}, []string{`id="player"`}},
		{"processing and playable, signed", with(func(v *wire.Video) {
			v.Status, v.Progress, v.PlaybackPolicy = domain.StatusProcessing, ptr(0.5), domain.PlaybackSigned
			v.PlaylistURL = ptr("http://cdn.test/cdn/01J/hls/master.m3u8")
		}), []string{`id="player"`, `data-signed="true"`, `data-playable="true"`, "<progress", "It plays already", "Make public", "answer 403 without"},
			[]string{" poster=", "Open the shareable player page"}},
		{"completed with outputs", with(func(v *wire.Video) {
			v.Status, v.Progress = domain.StatusCompleted, ptr(1.0)
			v.PlaylistURL, v.ThumbnailURL = ptr("http://cdn.test/cdn/01J/hls/master.m3u8"), ptr("http://cdn.test/cdn/01J/thumbnail.jpg")
			v.StoryboardURL, v.DownloadURL = ptr("http://cdn.test/cdn/01J/storyboard.vtt"), ptr("http://cdn.test/cdn/01J/download.mp4")
		}), []string{`id="player"`, `poster="http://cdn.test/cdn/01J/thumbnail.jpg"`, `id="u-storyboard"`, `id="u-download"`, ">Download MP4<",
			`data-storyboard="http://cdn.test/cdn/01J/storyboard.vtt"`, `href="/play/01J"`}, []string{"<progress", `data-signed`, ">Retry<"}},
		{"failed", with(func(v *wire.Video) {
			v.Status, v.Progress, v.ErrorMessage = domain.StatusFailed, nil, ptr("No video stream found.")
		}),
			[]string{">Retry<", `data-api="/v1/videos/01J/retry"`, "No video stream found."}, []string{`id="player"`, "<progress"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			d.render(w, httptest.NewRequest("GET", "/videos/01J", nil), 200, "video",
				view{Title: "a", Me: identity{ID: "u", Account: "acme"}, Data: VideoPage{Video: tt.v}})
			body := w.Body.String()
			for _, s := range tt.want {
				if !strings.Contains(body, s) {
					t.Errorf("no %q in\n%s", s, body)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(body, s) {
					t.Errorf("%q in\n%s", s, body)
				}
			}
		})
	}
}

func TestLiveText(t *testing.T) {
	tests := []struct {
		v    wire.Video
		want string
	}{
		{wire.Video{Status: domain.StatusPending}, "Waiting for a transcoder"},
		{wire.Video{Status: domain.StatusPending, QueuePosition: ptr(1)}, "Waiting: next in line"},
		{wire.Video{Status: domain.StatusPending, QueuePosition: ptr(2)}, "Waiting: 1 in line before it"},
		{wire.Video{Status: domain.StatusProcessing}, "0%"},
		{wire.Video{Status: domain.StatusProcessing, Progress: ptr(0.424), ETA: ptr(9.2)}, "42% · about 10 s left"},
		{wire.Video{Status: domain.StatusProcessing, Progress: ptr(1.5), ETA: ptr(3725.0), Speed: ptr(0.55)}, "100% · about 1 h 3 min left · 0.6× real time"},
		{wire.Video{Status: domain.StatusCompleted, Progress: ptr(1.0), ETA: ptr(3.0)}, ""},
	}
	for _, tt := range tests {
		if got := liveText(tt.v); got != tt.want {
			t.Errorf("liveText(%+v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// The usage page shows the storage used against the plan's quota as a
// meter (no script), and no meter when the plan has no quota.
func TestUsagePageShowsTheStorageQuota(t *testing.T) {
	d, err := New(Config{API: http.NotFoundHandler(), HLSJS: true})
	if err != nil {
		t.Fatal(err)
	}
	render := func(u Usage) string {
		w := httptest.NewRecorder()
		d.render(w, httptest.NewRequest("GET", "/usage", nil), 200, "usage", view{Title: "Usage", Data: UsagePage{Usage: u, Statuses: []domain.Status{domain.StatusCompleted}}})
		return w.Body.String()
	}
	u := Usage{Slug: "acme", Plan: "free", StorageBytes: 3 << 30}
	u.Limits.StorageBytes = 10 << 30
	body := render(u)
	for _, want := range []string{`<meter id="storage-used" min="0" max="10737418240" high="9663676416" value="3221225472"`, "3.0 GiB of 10.0 GiB"} {
		if !strings.Contains(body, want) {
			t.Errorf("with a quota: no %q in\n%s", want, body)
		}
	}
	u.Limits.StorageBytes = 0
	if body := render(u); strings.Contains(body, "<meter") || !strings.Contains(body, "<dd>none</dd>") {
		t.Errorf("without a quota:\n%s", body)
	}
}
