package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/queue"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/httpapi/admin"
)

const testAdminToken = "operator-token-0123456789abcdef"

// projReplayer runs replays on the test's real projector.
type projReplayer struct{ p *projections.Projector }

func (r projReplayer) Replay(ctx context.Context, verify bool, progress func(admin.ReplayProgress)) (any, error) {
	report := func(p projections.Progress) {
		progress(admin.ReplayProgress{Events: p.Applied, Total: p.Total, EventsPerSecond: p.PerSecond()})
	}
	if verify {
		diffs, _, err := r.p.Verify(ctx, 10, report)
		if diffs == nil {
			diffs = []string{}
		}
		return map[string]any{"differences": diffs}, err
	}
	_, err := r.p.Rebuild(ctx, report)
	return map[string]any{"rebuilt": true}, err
}

// newAdminAPI is the test API with the operator's token and a replayer on
// its own projector.
func newAdminAPI(t *testing.T, configure ...func(*Config)) *testAPI {
	t.Helper()
	var a *testAPI
	rep := &lateReplayer{}
	a = newTestAPI(t, append([]func(*Config){func(c *Config) {
		c.Admin.Token = testAdminToken
		c.Admin.Replayer = rep
	}}, configure...)...)
	rep.r = projReplayer{a.proj}
	return a
}

// lateReplayer lets the replayer be set once the projector exists.
type lateReplayer struct{ r admin.Replayer }

func (l *lateReplayer) Replay(ctx context.Context, verify bool, progress func(admin.ReplayProgress)) (any, error) {
	return l.r.Replay(ctx, verify, progress)
}

func decodeBody[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("%s: %v", r.body, err)
	}
	return v
}

func wantCode(t *testing.T, r response, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
}

// Every operator route refuses requests without the admin token, with a
// wrong one, and with an account's API key (which is not an admin token).
func TestAdminRoutesRefuseWithoutTheAdminToken(t *testing.T) {
	t.Parallel()
	a := newAdminAPI(t)
	key := a.account("acme", domain.PlanPro)
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/admin/accounts", ""},
		{"POST", "/v1/admin/accounts", `{"slug":"x","plan":"free"}`},
		{"GET", "/v1/admin/accounts/acme", ""},
		{"PATCH", "/v1/admin/accounts/acme", `{"plan":"free"}`},
		{"GET", "/v1/admin/accounts/acme/keys", ""},
		{"POST", "/v1/admin/accounts/acme/keys", `{"label":"x"}`},
		{"DELETE", "/v1/admin/accounts/acme/keys/01JKEY0000000000000000000A", ""},
		{"GET", "/v1/admin/health", ""},
		{"GET", "/v1/admin/replay", ""},
		{"POST", "/v1/admin/replay", ""},
	}
	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			wantError(t, a.do(rt.method, rt.path, "", rt.body), 401, "Missing API key")
			wantError(t, a.do(rt.method, rt.path, "wrong-token-0123456789abcdef0", rt.body), 401, "Invalid API key")
			wantError(t, a.do(rt.method, rt.path, key, rt.body), 401, "Invalid API key")
			a.clock.Set(a.clock.Now().Add(time.Minute)) // the per-address failure limit
		})
	}
	// Nothing was created by the refused requests.
	if _, ok, _ := a.s.cfg.DB.Account("x"); ok {
		t.Fatal("a refused request created an account")
	}

	// Without a token configured, the routes do not exist.
	off := newTestAPI(t)
	wantError(t, off.do("GET", "/v1/admin/accounts", testAdminToken, ""), 404, "Not found")
}

type testAccount struct {
	Slug              string         `json:"slug"`
	Plan              string         `json:"plan"`
	CreatedAt         string         `json:"createdAt"`
	Videos            map[string]int `json:"videos"`
	StorageBytes      int64          `json:"storageBytes"`
	StorageQuotaBytes *int64         `json:"storageQuotaBytes"`
	StorageQuotaOwn   bool           `json:"storageQuotaOwn"`
}

func TestAdminAccountsCreateListAndChangePlan(t *testing.T) {
	t.Parallel()
	a := newAdminAPI(t)
	key := a.account("acme", domain.PlanFree)

	r := a.do("POST", "/v1/admin/accounts", testAdminToken, `{"slug":"globex","plan":"pro"}`)
	wantCode(t, r, 201)
	if got := decodeBody[testAccount](t, r); got.Slug != "globex" || got.Plan != "pro" || got.Videos["PENDING"] != 0 || got.CreatedAt == "" {
		t.Fatalf("created %s", r.body)
	}
	wantError(t, a.do("POST", "/v1/admin/accounts", testAdminToken, `{"slug":"globex","plan":"pro"}`), 409, "Conflict")
	for _, slug := range []string{"Bad Slug", "a.b", ">", "a*", "", strings.Repeat("a", 64)} {
		wantError(t, a.do("POST", "/v1/admin/accounts", testAdminToken, `{"slug":"`+slug+`","plan":"pro"}`), 400, "Bad request")
	}
	wantError(t, a.do("POST", "/v1/admin/accounts", testAdminToken, `{"slug":"initech","plan":"gold"}`), 400, "Bad request")
	wantError(t, a.do("POST", "/v1/admin/accounts", testAdminToken, `{"plan":"pro"}`), 400, "Bad request")

	if r := a.upload(key, "a.mp4", video(1000)); r.status != 202 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	r = a.do("GET", "/v1/admin/accounts", testAdminToken, "")
	wantCode(t, r, 200)
	list := decodeBody[struct{ Data []testAccount }](t, r)
	if len(list.Data) != 2 || list.Data[0].Slug != "acme" || list.Data[1].Slug != "globex" {
		t.Fatalf("accounts: %s", r.body)
	}
	if acme := list.Data[0]; acme.Videos["PENDING"] != 1 || acme.StorageBytes != int64(len(video(1000))) || acme.Plan != "free" {
		t.Fatalf("acme: %+v", acme)
	}
	for _, s := range []string{"PENDING", "PROCESSING", "COMPLETED", "FAILED"} {
		if _, ok := list.Data[1].Videos[s]; !ok {
			t.Fatalf("videos lacks %s: %s", s, r.body)
		}
	}

	// A plan change shows in the admin view and in the account's own
	// limits at its next request.
	r = a.do("PATCH", "/v1/admin/accounts/acme", testAdminToken, `{"plan":"business"}`)
	wantCode(t, r, 200)
	if got := decodeBody[testAccount](t, r); got.Plan != "business" {
		t.Fatalf("patched %s", r.body)
	}
	if got := decodeBody[testAccount](t, a.do("GET", "/v1/admin/accounts/acme", testAdminToken, "")); got.Plan != "business" {
		t.Fatalf("GET after PATCH: %+v", got)
	}
	r = a.do("GET", "/v1/account", key, "")
	wantCode(t, r, 200)
	if got := r.header.Get("X-RateLimit-Limit"); got != "1000" {
		t.Fatalf("limit after the plan change: %s", got)
	}
	wantError(t, a.do("PATCH", "/v1/admin/accounts/nobody", testAdminToken, `{"plan":"pro"}`), 404, "Not found")
	wantError(t, a.do("PATCH", "/v1/admin/accounts/acme", testAdminToken, `{"plan":"gold"}`), 400, "Bad request")
	wantError(t, a.do("PATCH", "/v1/admin/accounts/acme", testAdminToken, `{}`), 400, "Bad request")
	wantError(t, a.do("GET", "/v1/admin/accounts/..", testAdminToken, ""), 404, "Not found")
}

// The operator gives an account its own storage quota (PATCH
// storageQuotaBytes), which its uploads meet and GET /v1/account shows,
// lifts it (0) and gives back the plan's (null); bad quotas change
// nothing, not even a plan sent with them.
func TestAdminStorageQuotaOfAnAccount(t *testing.T) {
	t.Parallel()
	a := newAdminAPI(t)
	key := a.account("acme", domain.PlanFree)
	other := a.account("other", domain.PlanFree)
	file := video(3000)
	quota := func(t *testing.T, body string, want *int64, own bool) {
		t.Helper()
		r := a.do("PATCH", "/v1/admin/accounts/acme", testAdminToken, body)
		wantCode(t, r, 200)
		got := decodeBody[testAccount](t, r)
		if got.StorageQuotaOwn != own || (want == nil) != (got.StorageQuotaBytes == nil) || (want != nil && *want != *got.StorageQuotaBytes) {
			t.Fatalf("PATCH %s: %s", body, r.body)
		}
		var acct struct{ Limits struct{ StorageBytes int64 } }
		_ = json.Unmarshal(a.do("GET", "/v1/account", key, "").body, &acct)
		if w := int64(0); (want == nil && acct.Limits.StorageBytes != w) || (want != nil && acct.Limits.StorageBytes != *want) {
			t.Fatalf("GET /v1/account after %s: limits.storageBytes %d", body, acct.Limits.StorageBytes)
		}
	}
	plans := testPlans()
	plan := plans[domain.PlanFree].StorageBytes
	if got := decodeBody[testAccount](t, a.do("GET", "/v1/admin/accounts/acme", testAdminToken, "")); got.StorageQuotaOwn || got.StorageQuotaBytes == nil || *got.StorageQuotaBytes != plan {
		t.Fatalf("the plan's quota: %+v", got)
	}

	small := int64(len(file) + 100)
	quota(t, fmt.Sprintf(`{"storageQuotaBytes":%d}`, small), &small, true)
	wantCode(t, a.upload(key, "a.mp4", file), 202)
	m := wantError(t, a.upload(key, "b.mp4", file), 413, "File too large")
	if msg := m["message"].(string); !strings.Contains(msg, fmt.Sprintf("storage quota is %d bytes", small)) {
		t.Fatalf("message %q", msg)
	}
	wantCode(t, a.upload(other, "theirs.mp4", file), 202) // the plan's, for others

	// Bad quotas: 400, and nothing changes (not the plan sent with one).
	for _, body := range []string{`{"storageQuotaBytes":-1}`, `{"storageQuotaBytes":1.5}`, `{"storageQuotaBytes":"10GiB"}`,
		`{"storageQuotaBytes":1152921504606846977}`, `{"storageQuotaBytes":99999999999999999999}`, `{"plan":"pro","storageQuotaBytes":-5}`} {
		wantError(t, a.do("PATCH", "/v1/admin/accounts/acme", testAdminToken, body), 400, "Bad request")
	}
	if got := decodeBody[testAccount](t, a.do("GET", "/v1/admin/accounts/acme", testAdminToken, "")); got.Plan != "free" || *got.StorageQuotaBytes != small {
		t.Fatalf("after bad quotas: %+v", got)
	}

	quota(t, `{"storageQuotaBytes":0}`, nil, true) // no quota
	wantCode(t, a.upload(key, "b.mp4", file), 202)
	quota(t, `{"storageQuotaBytes":null}`, &plan, false) // the plan's again
	// A plan change keeps an own quota; both at once.
	quota(t, fmt.Sprintf(`{"plan":"pro","storageQuotaBytes":%d}`, small), &small, true)
	if got := decodeBody[testAccount](t, a.do("GET", "/v1/admin/accounts/acme", testAdminToken, "")); got.Plan != "pro" {
		t.Fatalf("plan: %+v", got)
	}
	wantError(t, a.upload(key, "c.mp4", file), 413, "File too large")
}

func TestAdminKeysCreatedWorkAndRevokedOnesAreRefused(t *testing.T) {
	t.Parallel()
	a := newAdminAPI(t)
	a.account("acme", domain.PlanPro)
	other := a.account("globex", domain.PlanPro)

	r := a.do("POST", "/v1/admin/accounts/acme/keys", testAdminToken, `{"label":"ci"}`)
	wantCode(t, r, 201)
	created := decodeBody[struct{ ID, Key, Prefix, Label, CreatedAt string }](t, r)
	if !domain.WellFormedKey(created.Key) || !strings.HasPrefix(created.Key, created.Prefix) || created.Label != "ci" || created.CreatedAt == "" {
		t.Fatalf("created %s", r.body)
	}
	// At once usable on the API, as its account.
	wantCode(t, a.do("GET", "/v1/videos", created.Key, ""), 200)
	if got := decodeBody[struct{ Slug string }](t, a.do("GET", "/v1/account", created.Key, "")); got.Slug != "acme" {
		t.Fatalf("the key belongs to %q", got.Slug)
	}

	// Listed by prefix, never in full.
	r = a.do("GET", "/v1/admin/accounts/acme/keys", testAdminToken, "")
	wantCode(t, r, 200)
	if strings.Contains(string(r.body), created.Key) {
		t.Fatal("the key list shows a full key")
	}
	keys := decodeBody[struct {
		Data []struct{ ID, Prefix, Label, CreatedAt string }
	}](t, r)
	if len(keys.Data) != 2 || keys.Data[1].ID != created.ID || keys.Data[1].Prefix != created.Prefix || keys.Data[1].Label != "ci" {
		t.Fatalf("keys: %s", r.body)
	}

	// A key of acme is not globex's: 404, and it keeps working.
	wantError(t, a.do("DELETE", "/v1/admin/accounts/globex/keys/"+created.ID, testAdminToken, ""), 404, "Not found")
	wantCode(t, a.do("GET", "/v1/videos", created.Key, ""), 200)
	wantError(t, a.do("GET", "/v1/admin/accounts/nobody/keys", testAdminToken, ""), 404, "Not found")
	wantError(t, a.do("POST", "/v1/admin/accounts/nobody/keys", testAdminToken, `{}`), 404, "Not found")

	r = a.do("DELETE", "/v1/admin/accounts/acme/keys/"+created.ID, testAdminToken, "")
	wantCode(t, r, 204)
	wantError(t, a.do("GET", "/v1/videos", created.Key, ""), 401, "Invalid API key")
	keys = decodeBody[struct {
		Data []struct{ ID, Prefix, Label, CreatedAt string }
	}](t, a.do("GET", "/v1/admin/accounts/acme/keys", testAdminToken, ""))
	if len(keys.Data) != 1 {
		t.Fatalf("a revoked key is still listed: %+v", keys)
	}
	wantCode(t, a.do("GET", "/v1/videos", other, ""), 200)
}

func TestAdminHealthShape(t *testing.T) {
	t.Parallel()
	a := newAdminAPI(t)
	key := a.account("acme", domain.PlanPro)
	if r := a.upload(key, "a.mp4", video(100)); r.status != 202 {
		t.Fatalf("upload: %d", r.status)
	}
	ctx, cancel := context.WithCancel(context.Background())
	beat := make(chan error, 1)
	go func() { beat <- queue.New(a.store).Heartbeat(ctx, "worker", func() int { return 3 }) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-beat }) }
	defer stop()
	// A transcoder's intake that holds its job without finishing it.
	work := make(chan error, 1)
	go func() {
		work <- queue.New(a.store).FairWork(ctx, queue.FairConfig{
			Intake:         queue.TranscodeIntake,
			FilterSubjects: []string{domain.TypeFilter(domain.AggVideo, domain.TypeUploadAccepted)},
			Account:        func(e domain.Event) string { return e.Data.(domain.UploadAccepted).Account },
			Limit:          func(context.Context, string) int { return 1 },
			Log:            quiet,
		}, func(ctx context.Context, job *queue.Job) { <-ctx.Done(); _ = job.Release() })
	}()
	defer func() { cancel(); <-work }()

	type health struct {
		Status string
		NATS   struct {
			Connected bool
			Server    string
		}
		JetStream struct {
			Writes string
			Stream struct {
				Name     string
				LastSeq  uint64
				Replicas int
			}
		}
		ReadModels struct {
			Applied, LastSeq, Lag *uint64
		}
		Workers []struct {
			Name, Role, LastSeen string
			JobsRunning          int
		}
		Queues struct {
			Transcode, Deliveries *int
		}
		Media, Disk string
		Checks      map[string]string
	}
	var h health
	eventstoretest.Eventually(t, "the heartbeat in /v1/admin/health", func() bool {
		r := a.do("GET", "/v1/admin/health", testAdminToken, "")
		wantCode(t, r, 200)
		h = decodeBody[health](t, r)
		return len(h.Workers) == 1 && h.Queues.Transcode != nil && *h.Queues.Transcode == 1
	})
	if h.Status != "ok" || !h.NATS.Connected || h.JetStream.Writes != "ok" || h.JetStream.Stream.Name != "KINO_EVENTS" ||
		h.JetStream.Stream.LastSeq == 0 || h.JetStream.Stream.Replicas != 1 {
		t.Fatalf("health: %+v", h)
	}
	if h.ReadModels.Applied == nil || h.ReadModels.LastSeq == nil || h.ReadModels.Lag == nil || *h.ReadModels.LastSeq < *h.ReadModels.Applied {
		t.Fatalf("read models: %+v", h.ReadModels)
	}
	w := h.Workers[0]
	if w.Role != "worker" || w.JobsRunning != 3 || !strings.Contains(w.Name, ":") || w.LastSeen == "" {
		t.Fatalf("worker: %+v", w)
	}
	if h.Queues.Deliveries == nil || *h.Queues.Deliveries != 0 {
		t.Fatalf("queues: %+v", h.Queues)
	}
	if h.Media != "ok" || h.Disk != "ok" || h.Checks["read_models"] != "ok" || len(h.Checks) != 5 {
		t.Fatalf("checks: %+v", h)
	}

	// A stopped heartbeat is gone at once.
	stop()
	h = decodeBody[health](t, a.do("GET", "/v1/admin/health", testAdminToken, ""))
	if len(h.Workers) != 0 {
		t.Fatalf("workers after the heartbeat stopped: %+v", h.Workers)
	}
}

type testReplay struct {
	ID, State     string
	Verify        bool
	Events, Total uint64
	Result        any
	Error         *string
	FinishedAt    *string
}

func TestAdminReplayRunsInTheBackgroundToDone(t *testing.T) {
	t.Parallel()
	a := newAdminAPI(t)
	key := a.account("acme", domain.PlanPro)
	for i := range 3 {
		if r := a.upload(key, strconv.Itoa(i)+".mp4", video(100)); r.status != 202 {
			t.Fatalf("upload: %d", r.status)
		}
	}
	if got := decodeBody[testReplay](t, a.do("GET", "/v1/admin/replay", testAdminToken, "")); got.State != "idle" {
		t.Fatalf("before any replay: %+v", got)
	}
	for _, verify := range []bool{true, false} {
		r := a.do("POST", "/v1/admin/replay", testAdminToken, `{"verify":`+strconv.FormatBool(verify)+`}`)
		wantCode(t, r, 202)
		started := decodeBody[testReplay](t, r)
		if started.ID == "" || started.State != "running" || started.Verify != verify {
			t.Fatalf("started: %s", r.body)
		}
		var st testReplay
		eventstoretest.Eventually(t, "the replay to end", func() bool {
			st = decodeBody[testReplay](t, a.do("GET", "/v1/admin/replay", testAdminToken, ""))
			return st.State != "running"
		})
		if st.ID != started.ID || st.State != "done" || st.Total == 0 || st.Events != st.Total || st.FinishedAt == nil || st.Error != nil {
			t.Fatalf("replay: %+v", st)
		}
		if verify {
			res, _ := st.Result.(map[string]any)
			if d, ok := res["differences"].([]any); !ok || len(d) != 0 {
				t.Fatalf("verify found differences: %+v", st.Result)
			}
		}
	}
	// The videos are still there after the rebuild.
	if r := a.do("GET", "/v1/videos", key, ""); !strings.Contains(string(r.body), "2.mp4") {
		t.Fatalf("after the rebuild: %s", r.body)
	}
}

// One replay at a time: a second POST while one runs is a 409; a failed
// one says so without details.
func TestAdminReplayOneAtATime(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	fail := false
	a := newTestAPI(t, func(c *Config) {
		c.Admin.Token = testAdminToken
		c.Admin.Replayer = replayFunc(func() (any, error) {
			<-release
			if fail {
				return nil, domain.E("rebuild", domain.Internal, "open /secret/path: boom")
			}
			return "ok", nil
		})
	})
	wantCode(t, a.do("POST", "/v1/admin/replay", testAdminToken, ""), 202)
	wantError(t, a.do("POST", "/v1/admin/replay", testAdminToken, `{"verify":true}`), 409, "Conflict")
	if st := decodeBody[testReplay](t, a.do("GET", "/v1/admin/replay", testAdminToken, "")); st.State != "running" {
		t.Fatalf("%+v", st)
	}
	close(release)
	eventstoretest.Eventually(t, "the replay to end", func() bool {
		return decodeBody[testReplay](t, a.do("GET", "/v1/admin/replay", testAdminToken, "")).State == "done"
	})
	fail = true
	wantCode(t, a.do("POST", "/v1/admin/replay", testAdminToken, ""), 202)
	var st testReplay
	eventstoretest.Eventually(t, "the replay to fail", func() bool {
		st = decodeBody[testReplay](t, a.do("GET", "/v1/admin/replay", testAdminToken, ""))
		return st.State != "running"
	})
	if st.State != "failed" || st.Error == nil || strings.Contains(*st.Error, "/secret") {
		t.Fatalf("failed replay: %+v", st)
	}
}

func TestAccountUsageAfterUploadsAndDeletes(t *testing.T) {
	t.Parallel()
	a := newAdminAPI(t)
	key := a.account("acme", domain.PlanPro)
	other := a.account("globex", domain.PlanFree)
	var ids []string
	for i, n := range []int{1000, 2000, 3000} {
		r := a.upload(key, strconv.Itoa(i)+".mp4", video(n))
		if r.status != 202 {
			t.Fatalf("upload: %d %s", r.status, r.body)
		}
		ids = append(ids, decodeBody[struct{ Video struct{ ID string } }](t, r).Video.ID)
	}
	if r := a.upload(other, "o.mp4", video(5)); r.status != 202 {
		t.Fatalf("upload: %d", r.status)
	}
	wantCode(t, a.do("DELETE", "/v1/videos/"+ids[1], key, ""), 200)

	type usage struct {
		Slug, Plan string
		Limits     struct {
			RequestsPerMinute int
			MaxUploadBytes    int64
			ConcurrentUploads int
		}
		RateLimit struct {
			Limit, Remaining int
			Reset            int64
		}
		StorageBytes int64
		Videos       map[string]int
	}
	r := a.do("GET", "/v1/account", key, "")
	wantCode(t, r, 200)
	u := decodeBody[usage](t, r)
	plan := testPlans()[domain.PlanPro]
	if u.Slug != "acme" || u.Plan != "pro" || u.Limits.RequestsPerMinute != plan.RequestsPerMinute ||
		u.Limits.MaxUploadBytes != plan.MaxUploadBytes || u.Limits.ConcurrentUploads != plan.ConcurrentUploads {
		t.Fatalf("account: %s", r.body)
	}
	want := int64(len(video(1000)) + len(video(3000)))
	if u.StorageBytes != want || u.Videos["PENDING"] != 2 || u.Videos["PROCESSING"] != 0 || u.Videos["COMPLETED"] != 0 || u.Videos["FAILED"] != 0 {
		t.Fatalf("usage: %s (want %d bytes, 2 PENDING)", r.body, want)
	}
	// rateLimit is what this response's headers say: this request counted once.
	if strconv.Itoa(u.RateLimit.Limit) != r.header.Get("X-RateLimit-Limit") ||
		strconv.Itoa(u.RateLimit.Remaining) != r.header.Get("X-RateLimit-Remaining") ||
		strconv.FormatInt(u.RateLimit.Reset, 10) != r.header.Get("X-RateLimit-Reset") {
		t.Fatalf("rateLimit %+v, headers %v", u.RateLimit, r.header)
	}
	next := decodeBody[usage](t, a.do("GET", "/v1/account", key, ""))
	if next.RateLimit.Remaining != u.RateLimit.Remaining-1 {
		t.Fatalf("remaining went from %d to %d: one request must spend one", u.RateLimit.Remaining, next.RateLimit.Remaining)
	}
	if g := decodeBody[usage](t, a.do("GET", "/v1/account", other, "")); g.Slug != "globex" || g.StorageBytes != int64(len(video(5))) || g.Videos["PENDING"] != 1 {
		t.Fatalf("globex: %+v", g)
	}
	wantError(t, a.do("GET", "/v1/account", "", ""), 401, "Missing API key")

	// The admin view agrees, and a rebuild and a verify keep the numbers.
	wantCode(t, a.do("POST", "/v1/admin/replay", testAdminToken, `{"verify":true}`), 202)
	var st testReplay
	eventstoretest.Eventually(t, "verify", func() bool {
		st = decodeBody[testReplay](t, a.do("GET", "/v1/admin/replay", testAdminToken, ""))
		return st.State != "running"
	})
	res, _ := st.Result.(map[string]any)
	if d, ok := res["differences"].([]any); st.State != "done" || !ok || len(d) != 0 {
		t.Fatalf("verify: %+v", st)
	}
	if got := decodeBody[testAccount](t, a.do("GET", "/v1/admin/accounts/acme", testAdminToken, "")); got.StorageBytes != want || got.Videos["PENDING"] != 2 {
		t.Fatalf("admin view: %+v", got)
	}
}

// The operator's list of an account's keys says when each was last used,
// as the account's own list does.
func TestAdminKeysShowLastUse(t *testing.T) {
	t.Parallel()
	a := newAdminAPI(t, withUsers(t))
	key := a.account("acme", domain.PlanPro)
	type listed struct {
		Data []struct {
			ID         string
			LastUsedAt *string
		}
	}
	r := decodeBody[listed](t, a.do("GET", "/v1/admin/accounts/acme/keys", testAdminToken, ""))
	if len(r.Data) != 1 {
		t.Fatalf("keys: %+v", r)
	}
	wantCode(t, a.do("GET", "/v1/videos", key, ""), 200)
	eventstoretest.Eventually(t, "the key's use in the operator's list", func() bool {
		r = decodeBody[listed](t, a.do("GET", "/v1/admin/accounts/acme/keys", testAdminToken, ""))
		return len(r.Data) == 1 && r.Data[0].LastUsedAt != nil
	})
}
