package apiclient_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/apiclient"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
)

// A collection's settings: chosen on create, changed by an update, kept
// by a rename; an empty update and another account's collection refused.
func TestCollectionSettings(t *testing.T) {
	t.Parallel()
	k, c := setup(t, httpapitest.Options{}, domain.PlanPro)
	main, err := c.Collection(ctx(t), "main")
	if err != nil || main.PlaybackPolicy != apiclient.PlaybackPublic || !main.Downloads {
		t.Fatalf("defaults: %+v %v", main, err)
	}
	priv, err := c.CreateCollectionWith(ctx(t), "private", "Private",
		apiclient.CollectionSettings{PlaybackPolicy: apiclient.PlaybackSigned, Downloads: apiclient.Bool(false)})
	if err != nil || priv.PlaybackPolicy != apiclient.PlaybackSigned || priv.Downloads || priv.Name != "Private" {
		t.Fatalf("create: %+v %v", priv, err)
	}
	tests := []struct {
		name   string
		update apiclient.CollectionUpdate
		policy apiclient.PlaybackPolicy
		dl     bool
		title  string
	}{
		{"downloads on", apiclient.CollectionUpdate{CollectionSettings: apiclient.CollectionSettings{Downloads: apiclient.Bool(true)}}, apiclient.PlaybackSigned, true, "Private"},
		{"public", apiclient.CollectionUpdate{CollectionSettings: apiclient.CollectionSettings{PlaybackPolicy: apiclient.PlaybackPublic}}, apiclient.PlaybackPublic, true, "Private"},
		{"rename keeps the settings", apiclient.CollectionUpdate{Name: "Staff only"}, apiclient.PlaybackPublic, true, "Staff only"},
		{"all at once", apiclient.CollectionUpdate{Name: "Members", CollectionSettings: apiclient.CollectionSettings{
			PlaybackPolicy: apiclient.PlaybackSigned, Downloads: apiclient.Bool(false)}}, apiclient.PlaybackSigned, false, "Members"},
	}
	for _, tt := range tests {
		got, err := c.UpdateCollection(ctx(t), "private", tt.update)
		if err != nil || got.PlaybackPolicy != tt.policy || got.Downloads != tt.dl || got.Name != tt.title {
			t.Fatalf("%s: %+v %v", tt.name, got, err)
		}
	}
	if all, err := c.Collections(ctx(t)); err != nil || len(all) != 2 || all[1].Slug != "private" || all[1].PlaybackPolicy != apiclient.PlaybackSigned {
		t.Fatalf("list: %+v %v", all, err)
	}
	if _, err := c.UpdateCollection(ctx(t), "private", apiclient.CollectionUpdate{}); !errors.Is(err, apiclient.ErrBadRequest) {
		t.Fatalf("an empty update: %v", err)
	}
	if _, err := c.UpdateCollection(ctx(t), "private", apiclient.CollectionUpdate{CollectionSettings: apiclient.CollectionSettings{PlaybackPolicy: "secret"}}); !errors.Is(err, apiclient.ErrBadRequest) {
		t.Fatalf("an unknown policy: %v", err)
	}
	if _, err := c.CreateCollectionWith(ctx(t), "odd", "Odd", apiclient.CollectionSettings{PlaybackPolicy: "Signed"}); !errors.Is(err, apiclient.ErrBadRequest) {
		t.Fatalf("create with an unknown policy: %v", err)
	}
	rival := &apiclient.Client{BaseURL: k.BaseURL, Key: k.Account("rival", domain.PlanPro)}
	if _, err := rival.UpdateCollection(ctx(t), "private", apiclient.CollectionUpdate{Name: "Mine"}); !errors.Is(err, apiclient.ErrNotFound) {
		t.Fatalf("another account's collection: %v", err)
	}
}

// uploadAccepted is the data of a video's UploadAccepted event.
func uploadAccepted(t *testing.T, c *apiclient.Client, id string) map[string]any {
	t.Helper()
	events, err := c.VideoEvents(ctx(t), id)
	if err != nil || len(events) == 0 || events[0].Type != "UploadAccepted" {
		t.Fatalf("events of %s: %v %v", id, events, err)
	}
	var data map[string]any
	if err := json.Unmarshal(events[0].Data, &data); err != nil {
		t.Fatal(err)
	}
	return data
}

// Every way of uploading takes the playback policy and download
// overrides, and without them the video has its collection's settings;
// SetPlaybackPolicy changes a video's policy afterwards.
func TestUploadOverridesAndSetPlaybackPolicy(t *testing.T) {
	t.Parallel()
	k, c := setup(t, httpapitest.Options{}, domain.PlanPro)
	if _, err := c.CreateCollectionWith(ctx(t), "nodl", "No downloads", apiclient.CollectionSettings{
		PlaybackPolicy: apiclient.PlaybackSigned, Downloads: apiclient.Bool(false)}); err != nil {
		t.Fatal(err)
	}
	data := notAVideo(3000)
	multipart := func(coll string, opts ...apiclient.UploadOption) string {
		up, err := c.Upload(ctx(t), bytes.NewReader(data), int64(len(data)), "a.mp4", coll, nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return up.Video.ID
	}
	tus := func(coll string, opts ...apiclient.UploadOption) string {
		u, err := c.UploadResumable(ctx(t), bytes.NewReader(data), int64(len(data)), "b.mp4", coll, apiclient.TusOptions{}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return u.VideoID()
	}
	direct := func(coll string, opts ...apiclient.UploadOption) string {
		d, err := c.CreateDirectUpload(ctx(t), coll, 0, opts...)
		if err != nil {
			t.Fatal(err)
		}
		u, err := (&apiclient.Client{}).CreateResumableAt(ctx(t), d.URL, int64(len(data)), "c.mp4")
		if err != nil {
			t.Fatal(err)
		}
		if err := u.Send(ctx(t), bytes.NewReader(data), apiclient.TusOptions{}); err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
	for name, up := range map[string]func(string, ...apiclient.UploadOption) string{"multipart": multipart, "tus": tus, "direct": direct} {
		t.Run(name, func(t *testing.T) {
			tests := []struct {
				coll     string
				opts     []apiclient.UploadOption
				policy   apiclient.PlaybackPolicy
				download bool
			}{
				{"main", nil, apiclient.PlaybackPublic, true},
				{"nodl", nil, apiclient.PlaybackSigned, false},
				{"main", []apiclient.UploadOption{apiclient.WithPlaybackPolicy(apiclient.PlaybackSigned), apiclient.WithDownload(false)}, apiclient.PlaybackSigned, false},
				{"nodl", []apiclient.UploadOption{apiclient.WithPlaybackPolicy(apiclient.PlaybackPublic), apiclient.WithDownload(true)}, apiclient.PlaybackPublic, true},
			}
			for i, tt := range tests {
				id := up(tt.coll, tt.opts...)
				k.Settle()
				v, err := c.Video(ctx(t), id)
				if err != nil || v.PlaybackPolicy != tt.policy {
					t.Fatalf("%d: policy %q, want %q (%v)", i, v.PlaybackPolicy, tt.policy, err)
				}
				// Whether the video gets a download is in its upload's event.
				if got := uploadAccepted(t, c, id)["download"] == true; got != tt.download {
					t.Fatalf("%d: download %v, want %v: %v", i, got, tt.download, uploadAccepted(t, c, id))
				}
			}
		})
	}
	if _, err := c.Upload(ctx(t), bytes.NewReader(data), int64(len(data)), "a.mp4", "main", nil, apiclient.WithPlaybackPolicy("private")); !errors.Is(err, apiclient.ErrBadRequest) {
		t.Fatalf("an unknown policy: %v", err)
	}

	id := multipart("main")
	for _, p := range []apiclient.PlaybackPolicy{apiclient.PlaybackSigned, apiclient.PlaybackSigned, apiclient.PlaybackPublic} {
		v, err := c.SetPlaybackPolicy(ctx(t), id, p)
		if err != nil || v.ID != id || v.PlaybackPolicy != p {
			t.Fatalf("set %s: %+v %v", p, v, err)
		}
	}
	if _, err := c.SetPlaybackPolicy(ctx(t), id, "open"); !errors.Is(err, apiclient.ErrBadRequest) {
		t.Fatalf("an unknown policy: %v", err)
	}
	rival := &apiclient.Client{BaseURL: k.BaseURL, Key: k.Account("rival", domain.PlanPro)}
	if _, err := rival.SetPlaybackPolicy(ctx(t), id, apiclient.PlaybackSigned); !errors.Is(err, apiclient.ErrNotFound) {
		t.Fatalf("another account's video: %v", err)
	}
	if _, err := rival.CreatePlaybackToken(ctx(t), id, 0, ""); !errors.Is(err, apiclient.ErrNotFound) {
		t.Fatalf("a token for another account's video: %v", err)
	}
}

// fetch GETs u with header h and returns the status and body.
func fetch(t *testing.T, u string, h http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A signed video's media answer 403 without a token and 200 with one,
// made by kino (CreatePlaybackToken) or by the customer's backend
// (SignPlaybackToken with a signing key); not with a token of another
// video, a deleted key's, or from another origin than the token's.
func TestSignedPlayback(t *testing.T) {
	t.Parallel()
	_, c := setup(t, httpapitest.Options{Transcode: true}, domain.PlanPro)
	clip, err := os.ReadFile(ffmpegtest.Clip(t, t.TempDir(), "clip.mp4", 320, 180, 1, false))
	if err != nil {
		t.Fatal(err)
	}
	up := func(opts ...apiclient.UploadOption) apiclient.Video {
		u, err := c.Upload(ctx(t), bytes.NewReader(clip), int64(len(clip)), "clip.mp4", "main", nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.Wait(ctx(t), u.Video.ID, apiclient.WaitOptions{Interval: poll})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := up(apiclient.WithPlaybackPolicy(apiclient.PlaybackSigned))
	other := up() // public
	if v.PlaybackPolicy != apiclient.PlaybackSigned || v.ThumbnailURL == nil || v.PlaylistURL == nil || strings.Contains(*v.PlaylistURL, "token") {
		t.Fatalf("signed video: %+v", v)
	}
	thumb, playlist := *v.ThumbnailURL, *v.PlaylistURL
	if status, body := fetch(t, thumb, nil); status != 403 || !strings.Contains(body, `"Forbidden"`) {
		t.Fatalf("without a token: %d %s", status, body)
	}
	if status, _ := fetch(t, *other.ThumbnailURL, nil); status != 200 {
		t.Fatalf("a public video's thumbnail: %d", status)
	}

	tok, err := c.CreatePlaybackToken(ctx(t), v.ID, 2*time.Minute, "")
	if err != nil || tok.Token == "" || tok.ExpiresAt.Before(time.Now().Add(time.Minute)) || tok.ExpiresAt.After(time.Now().Add(3*time.Minute)) {
		t.Fatalf("token: %+v %v", tok, err)
	}
	if status, _ := fetch(t, apiclient.WithToken(thumb, tok.Token), nil); status != 200 {
		t.Fatalf("with kino's token: %d", status)
	}
	// The master playlist lists its media playlists with the token.
	status, body := fetch(t, apiclient.WithToken(playlist, tok.Token), nil)
	if status != 200 || !strings.Contains(body, "token="+url.QueryEscape(tok.Token)) {
		t.Fatalf("the playlist with a token: %d\n%s", status, body)
	}
	otherTok, err := c.CreatePlaybackToken(ctx(t), other.ID, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := fetch(t, apiclient.WithToken(thumb, otherTok.Token), nil); status != 403 {
		t.Fatalf("another video's token: %d", status)
	}
	if _, err := c.CreatePlaybackToken(ctx(t), v.ID, time.Second, ""); !errors.Is(err, apiclient.ErrBadRequest) {
		t.Fatalf("a ttl under a minute: %v", err)
	}

	// Bound to an origin: only requests from it.
	bound, err := c.CreatePlaybackToken(ctx(t), v.ID, 0, "https://shop.example")
	if err != nil {
		t.Fatal(err)
	}
	for origin, want := range map[string]int{"https://shop.example": 200, "https://evil.example": 403, "": 403} {
		h := http.Header{}
		if origin != "" {
			h.Set("Origin", origin)
		}
		if status, _ := fetch(t, apiclient.WithToken(thumb, bound.Token), h); status != want {
			t.Fatalf("origin %q: %d, want %d", origin, status, want)
		}
	}

	// The customer's backend signs its own tokens.
	key, err := c.CreateSigningKey(ctx(t), "web backend")
	if err != nil || key.ID == "" || key.Algorithm != "EdDSA" || key.Label != "web backend" || !strings.HasPrefix(key.PrivateKey, "-----BEGIN PRIVATE KEY-----") {
		t.Fatalf("signing key: %+v %v", key.SigningKey, err)
	}
	keys, err := c.SigningKeys(ctx(t))
	if err != nil || len(keys) != 1 || keys[0].ID != key.ID || keys[0].CreatedAt.IsZero() {
		t.Fatalf("signing keys: %+v %v", keys, err)
	}
	own, err := apiclient.SignPlaybackToken(key.PrivateKey, key.ID, v.ID, time.Minute, "")
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := fetch(t, apiclient.WithToken(thumb, own.Token), nil); status != 200 {
		t.Fatalf("with the backend's token: %d", status)
	}
	wrongVideo, _ := apiclient.SignPlaybackToken(key.PrivateKey, key.ID, other.ID, time.Minute, "")
	if status, _ := fetch(t, apiclient.WithToken(thumb, wrongVideo.Token), nil); status != 403 {
		t.Fatalf("the backend's token for another video: %d", status)
	}
	// A key kino does not know, under the right kid, is refused.
	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(stranger)
	forged, err := apiclient.SignPlaybackToken(string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), key.ID, v.ID, time.Minute, "")
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := fetch(t, apiclient.WithToken(thumb, forged.Token), nil); status != 403 {
		t.Fatalf("a token signed with another key: %d", status)
	}
	if err := c.DeleteSigningKey(ctx(t), key.ID); err != nil {
		t.Fatal(err)
	}
	if status, _ := fetch(t, apiclient.WithToken(thumb, own.Token), nil); status != 403 {
		t.Fatalf("a deleted key's token: %d", status)
	}
	if keys, err := c.SigningKeys(ctx(t)); err != nil || len(keys) != 0 {
		t.Fatalf("after the delete: %+v %v", keys, err)
	}
	if err := c.DeleteSigningKey(ctx(t), key.ID); !errors.Is(err, apiclient.ErrNotFound) {
		t.Fatalf("deleted twice: %v", err)
	}
}

// RetryVideo queues a FAILED video again; a video that is not FAILED is
// a conflict.
func TestRetryVideo(t *testing.T) {
	t.Parallel()
	_, c := setup(t, httpapitest.Options{Transcode: true}, domain.PlanPro)
	id := upload(t, c, "broken.mp4", notAVideo(4000))
	if _, err := c.Wait(ctx(t), id, apiclient.WaitOptions{Interval: poll}); !errors.Is(err, apiclient.ErrFailed) {
		t.Fatalf("the broken upload: %v", err)
	}
	up, err := c.RetryVideo(ctx(t), id)
	if err != nil || up.Video.ID != id || up.Video.Status != apiclient.StatusPending || up.Video.Collection != "main" || up.Message == "" {
		t.Fatalf("retry: %+v %v", up, err)
	}
	v, err := c.Wait(ctx(t), id, apiclient.WaitOptions{Interval: poll})
	if !errors.Is(err, apiclient.ErrFailed) || v.Status != apiclient.StatusFailed {
		t.Fatalf("after the retry: %+v %v", v, err)
	}
	events, err := c.VideoEvents(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	retried := 0
	for _, e := range events {
		if e.Type == "TranscodeRetried" {
			retried++
		}
	}
	if retried != 1 {
		t.Fatalf("%d TranscodeRetried in %v", retried, events)
	}
	ok := upload(t, c, "pending.mp4", notAVideo(4000))
	if _, err := c.RetryVideo(ctx(t), ok); err != nil && !errors.Is(err, apiclient.ErrConflict) {
		t.Fatalf("retrying a video that is not FAILED: %v", err)
	} else if err == nil {
		// It may have FAILED already on a fast machine: then it was
		// queued again, which is also right.
		if v, _ := c.Video(ctx(t), ok); v.Status == apiclient.StatusCompleted {
			t.Fatalf("retried %+v", v)
		}
	}
	if _, err := c.RetryVideo(ctx(t), "01ZZZZZZZZZZZZZZZZZZZZZZZZ"); !errors.Is(err, apiclient.ErrNotFound) {
		t.Fatalf("an unknown video: %v", err)
	}
}

func TestWithToken(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"https://cdn.example/cdn/01J/hls/master.m3u8", "https://cdn.example/cdn/01J/hls/master.m3u8?token=a.b-c_d"},
		{"https://cdn.example/cdn/01J/thumbnail.jpg?token=old", "https://cdn.example/cdn/01J/thumbnail.jpg?token=a.b-c_d"},
		{"https://cdn.example/cdn/01J/storyboard.vtt?v=2", "https://cdn.example/cdn/01J/storyboard.vtt?token=a.b-c_d&v=2"},
	}
	for _, tt := range tests {
		if got := apiclient.WithToken(tt.in, "a.b-c_d"); got != tt.want {
			t.Errorf("WithToken(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// SignPlaybackToken refuses what cannot make a token, and its errors
// never quote the key.
func TestSignPlaybackTokenRefuses(t *testing.T) {
	t.Parallel()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(priv)
	good := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	secretish := "-----BEGIN PRIVATE KEY-----\nTOPSECRETMATERIAL\n-----END PRIVATE KEY-----\n"
	tests := []struct {
		name            string
		pem, kid, video string
		ttl             time.Duration
	}{
		{"not PEM", secretish, "01K", "01V", time.Minute},
		{"no key id", good, "", "01V", time.Minute},
		{"no video", good, "01K", "", time.Minute},
		{"no ttl", good, "01K", "01V", 0},
	}
	for _, tt := range tests {
		_, err := apiclient.SignPlaybackToken(tt.pem, tt.kid, tt.video, tt.ttl, "")
		if err == nil || strings.Contains(err.Error(), "TOPSECRET") {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
	tok, err := apiclient.SignPlaybackToken(good, "01K", "01V", time.Hour, "https://shop.example")
	if err != nil || strings.Count(tok.Token, ".") != 2 || time.Until(tok.ExpiresAt) < 59*time.Minute {
		t.Fatalf("%+v %v", tok, err)
	}
}

// The client's Video reads every field kino adds to the contract's
// (playback policy, playlist while processing, speed, ETA, queue position,
// storyboard, download) in the wire goldens and
// writes the same bytes back (kino upload --json passes videos on).
func TestVideoGoldensRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file  string
		check func(apiclient.Video) bool
	}{
		{"video_processing_playable", func(v apiclient.Video) bool {
			return v.PlaybackPolicy == apiclient.PlaybackSigned && v.PlaylistURL != nil && v.Speed != nil && *v.Speed == 2.25 &&
				v.ETA != nil && *v.ETA == 12 && v.QueuePosition == nil && v.StoryboardURL == nil
		}},
		{"video_pending_queued", func(v apiclient.Video) bool {
			return v.Status == apiclient.StatusPending && v.QueuePosition != nil && *v.QueuePosition == 3 && v.Speed == nil && v.PlaybackPolicy == apiclient.PlaybackPublic
		}},
		{"video_completed_extras", func(v apiclient.Video) bool {
			return v.StoryboardURL != nil && strings.HasSuffix(*v.StoryboardURL, "/storyboard.vtt") && v.DownloadURL != nil &&
				strings.HasSuffix(*v.DownloadURL, "/download.mp4") && v.Speed == nil && v.QueuePosition == nil
		}},
	}
	for _, tt := range tests {
		raw, err := os.ReadFile("../wire/testdata/" + tt.file + ".golden")
		if err != nil {
			t.Fatal(err)
		}
		raw = bytes.TrimSpace(raw)
		var v apiclient.Video
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		if !tt.check(v) {
			t.Errorf("%s read as %+v", tt.file, v)
		}
		again, err := json.Marshal(v)
		if err != nil || !bytes.Equal(again, raw) {
			t.Errorf("%s written as\n%s\nwant\n%s", tt.file, again, raw)
		}
	}
}

// A subscription may list video.playable, kino's third kind.
func TestSubscribeToVideoPlayable(t *testing.T) {
	t.Parallel()
	_, c := setup(t, httpapitest.Options{}, domain.PlanPro)
	w, err := c.CreateWebhook(ctx(t), "https://example.com/hooks/kino", apiclient.EventVideoPlayable, apiclient.EventVideoCompleted)
	if err != nil || len(w.Events) != 2 || w.Events[0] != apiclient.EventVideoCompleted || w.Events[1] != apiclient.EventVideoPlayable {
		t.Fatalf("%+v %v", w, err)
	}
}

// While no transcoder runs, the account's PENDING videos wait in upload
// order: the client reads each one's place.
func TestQueuePosition(t *testing.T) {
	t.Parallel()
	_, c := setup(t, httpapitest.Options{}, domain.PlanPro)
	var ids []string
	for _, name := range []string{"a.mp4", "b.mp4", "c.mp4"} {
		ids = append(ids, upload(t, c, name, notAVideo(2000)))
	}
	for i, id := range ids {
		v, err := c.Video(ctx(t), id)
		if err != nil || v.QueuePosition == nil || *v.QueuePosition != i+1 || v.Speed != nil || v.ETA != nil {
			t.Fatalf("video %d: %+v %v", i, v, err)
		}
	}
	page, err := c.Videos(ctx(t), apiclient.ListOptions{})
	if err != nil || len(page) != 3 || page[0].QueuePosition == nil || *page[0].QueuePosition != 3 {
		t.Fatalf("list: %+v %v", page, err)
	}
}

// A subscription to video.playable gets it once, before video.completed,
// with the video PROCESSING and its playlist set; ReadWebhook reads it
// like the others.
func TestVideoPlayableDelivery(t *testing.T) {
	t.Parallel()
	_, c := setup(t, httpapitest.Options{Transcode: true, Webhooks: true}, domain.PlanPro)
	rcv := newReceiver(t)
	hook, err := c.CreateWebhook(ctx(t), rcv.srv.URL, apiclient.EventVideoPlayable, apiclient.EventVideoCompleted)
	if err != nil {
		t.Fatal(err)
	}
	rcv.setSecret(hook.Secret)
	clip, err := os.ReadFile(ffmpegtest.Clip(t, t.TempDir(), "clip.mp4", 320, 180, 1, false))
	if err != nil {
		t.Fatal(err)
	}
	id := upload(t, c, "clip.mp4", clip)
	if _, err := c.Wait(ctx(t), id, apiclient.WaitOptions{Interval: poll}); err != nil {
		t.Fatal(err)
	}
	first, second := rcv.next(t), rcv.next(t)
	if first.Type != apiclient.EventVideoPlayable || first.Video == nil || first.Video.ID != id || first.Video.Status != apiclient.StatusProcessing ||
		first.Video.PlaylistURL == nil || first.Video.ThumbnailURL != nil {
		t.Fatalf("first delivery: %+v %+v", first, first.Video)
	}
	if second.Type != apiclient.EventVideoCompleted || second.Video == nil || second.Video.ID != id || second.Video.Status != apiclient.StatusCompleted {
		t.Fatalf("second delivery: %+v", second)
	}
}
