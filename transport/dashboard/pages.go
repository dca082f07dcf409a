package dashboard

import (
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/wire"
)

// The pages' data: what the API answers, as the templates read it.

// Key is an API key as GET /v1/keys lists it (never the key itself).
type Key struct {
	ID         string  `json:"id"`
	Prefix     string  `json:"prefix"`
	Label      string  `json:"label"`
	CreatedAt  string  `json:"createdAt"`
	LastUsedAt *string `json:"lastUsedAt"`
}

// Usage is GET /v1/account.
type Usage struct {
	Slug   string `json:"slug"`
	Plan   string `json:"plan"`
	Limits struct {
		RequestsPerMinute int   `json:"requestsPerMinute"`
		MaxUploadBytes    int64 `json:"maxUploadBytes"`
		ConcurrentUploads int   `json:"concurrentUploads"`
		StorageBytes      int64 `json:"storageBytes"` // the storage quota; 0: none
	} `json:"limits"`
	RateLimit struct {
		Limit     int   `json:"limit"`
		Remaining int   `json:"remaining"`
		Reset     int64 `json:"reset"`
	} `json:"rateLimit"`
	StorageBytes int64          `json:"storageBytes"`
	Videos       map[string]int `json:"videos"`
}

// Account is one account as GET /v1/admin/accounts lists it.
type Account struct {
	Slug         string         `json:"slug"`
	Plan         string         `json:"plan"`
	CreatedAt    string         `json:"createdAt"`
	Videos       map[string]int `json:"videos"`
	StorageBytes int64          `json:"storageBytes"`
	// StorageQuotaBytes is the quota in force (nil: none), the account's
	// own when StorageQuotaOwn, else its plan's.
	StorageQuotaBytes *int64 `json:"storageQuotaBytes"`
	StorageQuotaOwn   bool   `json:"storageQuotaOwn"`
}

// QuotaGiB is the account's own quota in GiB for the form ("" when it has
// its plan's).
func (a Account) QuotaGiB() string {
	switch {
	case !a.StorageQuotaOwn:
		return ""
	case a.StorageQuotaBytes == nil:
		return "0"
	}
	return strconv.FormatFloat(float64(*a.StorageQuotaBytes)/(1<<30), 'f', -1, 64)
}

// User is one user as GET /v1/admin/users lists it.
type User struct {
	ID          string `json:"id"`
	Email       string `json:"email"`
	Account     string `json:"account"`
	Operator    bool   `json:"operator"`
	CreatedAt   string `json:"createdAt"`
	PasswordSet bool   `json:"passwordSet"`
}

// Health is GET /v1/admin/health.
type Health struct {
	Status string `json:"status"` // ok or degraded
	NATS   struct {
		Connected  bool   `json:"connected"`
		Status     string `json:"status"`
		Server     string `json:"server"`
		URL        string `json:"url"`
		Reconnects uint64 `json:"reconnects"`
		RTTMs      int64  `json:"rttMs"`
	} `json:"nats"`
	JetStream struct {
		Writes string `json:"writes"`
		Stream *struct {
			Name     string   `json:"name"`
			Messages uint64   `json:"messages"`
			Bytes    int64    `json:"bytes"`
			Replicas int      `json:"replicas"`
			Leader   string   `json:"leader"`
			Lagging  []string `json:"lagging"`
		} `json:"stream"`
	} `json:"jetstream"`
	ReadModels struct {
		Applied uint64  `json:"applied"`
		LastSeq *uint64 `json:"lastSeq"`
		Lag     *uint64 `json:"lag"`
		Error   *string `json:"error"`
	} `json:"readModels"`
	Workers []Worker          `json:"workers"`
	Queues  map[string]*int64 `json:"queues"`
	Checks  map[string]string `json:"checks"`
	Errors  []string          `json:"errors"`
}

// Worker is a kino process seen by its heartbeat.
type Worker struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	LastSeen string `json:"lastSeen"`
	Running  int    `json:"jobsRunning"`
}

// statuses are the video statuses, in their order of life.
var statuses = []domain.Status{domain.StatusPending, domain.StatusProcessing, domain.StatusCompleted, domain.StatusFailed}

// plans are the plans an operator picks from.
var plans = []domain.Plan{domain.PlanFree, domain.PlanPro, domain.PlanBusiness}

// VideosPage is the data of /.
type VideosPage struct {
	Videos      []wire.Video
	Collections []wire.Collection
	Collection  string // the filter
	Status      string // the filter
	Search      string // the words searched for (q)
	Tag         string // the filter
	Statuses    []domain.Status
	Next, First string // page links, "" when none
	Query       string // the /v1/videos query the page polls
}

func (d *Dashboard) videos(w http.ResponseWriter, r *http.Request, me identity) error {
	q := r.URL.Query()
	p := VideosPage{Collection: q.Get("collection"), Status: q.Get("status"), Search: q.Get("q"), Tag: q.Get("tag"), Statuses: statuses}
	const limit = 50
	filters := url.Values{}
	for k, v := range map[string]string{"collection": p.Collection, "status": p.Status, "q": p.Search, "tag": p.Tag} {
		if v != "" {
			filters.Set(k, v)
		}
	}
	api := url.Values{"limit": {strconv.Itoa(limit)}}
	for k, v := range filters {
		api[k] = v
	}
	cursor := q.Get("cursor")
	if cursor != "" {
		api.Set("cursor", cursor)
	}
	p.Query = api.Encode()
	var list wire.Videos
	if err := d.get(r, "/v1/videos?"+p.Query, &list); err != nil {
		var ae *apiError
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
			return err
		}
		// A hand-made filter the API refuses: show all, and say why.
		return d.withNotice(w, r, me, ae.Message)
	}
	var colls wire.Collections
	if err := d.get(r, "/v1/collections", &colls); err != nil {
		return err
	}
	p.Videos, p.Collections = list.Videos, colls.Collections
	page := func(cursor string) string {
		v := url.Values{}
		for k, vals := range filters {
			v[k] = vals
		}
		if cursor != "" {
			v.Set("cursor", cursor)
		}
		if len(v) == 0 {
			return "/"
		}
		return "/?" + v.Encode()
	}
	if list.NextCursor != nil {
		p.Next = page(*list.NextCursor)
	}
	if cursor != "" {
		p.First = page("")
	}
	d.render(w, r, http.StatusOK, "videos", view{Title: "Videos", Nav: "videos", Me: me, Data: p})
	return nil
}

func (d *Dashboard) withNotice(w http.ResponseWriter, r *http.Request, me identity, msg string) error {
	d.render(w, r, http.StatusBadRequest, "error", view{Title: "Error", Me: me, Data: &apiError{Status: http.StatusBadRequest, Label: "Bad Request", Message: msg}})
	return nil
}

// VideoPage is the data of /videos/{id}.
type VideoPage struct {
	Video  wire.Video
	Events []wire.Event
	// EmbedCode is the iframe of a public video's /embed ("" for a signed
	// one).
	EmbedCode string
	// CaptionLanguages are the languages captions can be generated in.
	CaptionLanguages []string
}

func (d *Dashboard) video(w http.ResponseWriter, r *http.Request, me identity) error {
	id := mux.Vars(r)["id"]
	var p VideoPage
	if err := d.get(r, "/v1/videos/"+url.PathEscape(id), &p.Video); err != nil {
		return err
	}
	var ev wire.Events
	if err := d.get(r, "/v1/videos/"+url.PathEscape(id)+"/events", &ev); err != nil {
		return err
	}
	p.Events = ev.Events
	p.CaptionLanguages = d.cfg.CaptionLanguages
	if p.Video.PlaybackPolicy.OrPublic() == domain.PlaybackPublic {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		p.EmbedCode = fmt.Sprintf(`<iframe src="%s://%s/embed/%s" width="640" height="360" title="%s" frameborder="0" allow="autoplay; fullscreen; picture-in-picture" allowfullscreen></iframe>`,
			scheme, r.Host, p.Video.ID, html.EscapeString(p.Video.Title))
	}
	d.render(w, r, http.StatusOK, "video", view{Title: p.Video.Title, Nav: "videos", Me: me, Data: p})
	return nil
}

// UploadPage is the data of /upload.
type UploadPage struct {
	Collections []wire.Collection
	Selected    string
	Unfinished  []Unfinished // the account's unfinished tus uploads on this node, newest first
}

func (d *Dashboard) upload(w http.ResponseWriter, r *http.Request, me identity) error {
	var colls wire.Collections
	if err := d.get(r, "/v1/collections", &colls); err != nil {
		return err
	}
	var unfinished unfinishedList
	if err := d.get(r, "/v1/uploads", &unfinished); err != nil {
		return err
	}
	p := UploadPage{Collections: colls.Collections, Selected: r.URL.Query().Get("collection"), Unfinished: unfinished.Data}
	d.render(w, r, http.StatusOK, "upload", view{Title: "Upload", Nav: "upload", Me: me, Data: p})
	return nil
}

func (d *Dashboard) collections(w http.ResponseWriter, r *http.Request, me identity) error {
	var colls wire.Collections
	if err := d.get(r, "/v1/collections", &colls); err != nil {
		return err
	}
	d.render(w, r, http.StatusOK, "collections", view{Title: "Collections", Nav: "collections", Me: me, Data: colls.Collections})
	return nil
}

type keyList struct {
	Data []Key `json:"data"`
}

func (d *Dashboard) keys(w http.ResponseWriter, r *http.Request, me identity) error {
	var keys keyList
	if err := d.get(r, "/v1/keys", &keys); err != nil {
		return err
	}
	d.render(w, r, http.StatusOK, "keys", view{Title: "API keys", Nav: "keys", Me: me, Data: keys.Data})
	return nil
}

func (d *Dashboard) key(w http.ResponseWriter, r *http.Request, me identity) error {
	id := mux.Vars(r)["id"]
	var keys keyList
	if err := d.get(r, "/v1/keys", &keys); err != nil {
		return err
	}
	for _, k := range keys.Data {
		if k.ID == id {
			d.render(w, r, http.StatusOK, "key", view{Title: "API key " + k.Prefix, Nav: "keys", Me: me, Data: k})
			return nil
		}
	}
	return errNotFound // another account's key, or none
}

func (d *Dashboard) signingKeys(w http.ResponseWriter, r *http.Request, me identity) error {
	var keys wire.SigningKeys
	if err := d.get(r, "/v1/signing-keys", &keys); err != nil {
		return err
	}
	d.render(w, r, http.StatusOK, "signingkeys", view{Title: "Signing keys", Nav: "signing-keys", Me: me, Data: keys.SigningKeys})
	return nil
}

// WebhooksPage is the data of /webhooks.
type WebhooksPage struct {
	Webhooks []wire.Webhook
	Events   []string
}

func (d *Dashboard) webhooks(w http.ResponseWriter, r *http.Request, me identity) error {
	var list wire.Webhooks
	if err := d.get(r, "/v1/webhooks", &list); err != nil {
		return err
	}
	p := WebhooksPage{Webhooks: list.Webhooks, Events: domain.EventKinds}
	d.render(w, r, http.StatusOK, "webhooks", view{Title: "Webhooks", Nav: "webhooks", Me: me, Data: p})
	return nil
}

// WebhookPage is the data of /webhooks/{id}.
type WebhookPage struct {
	Webhook    wire.Webhook
	Deliveries []wire.Delivery
}

func (d *Dashboard) webhook(w http.ResponseWriter, r *http.Request, me identity) error {
	id := url.PathEscape(mux.Vars(r)["id"])
	var p WebhookPage
	if err := d.get(r, "/v1/webhooks/"+id, &p.Webhook); err != nil {
		return err
	}
	var dl wire.Deliveries
	if err := d.get(r, "/v1/webhooks/"+id+"/deliveries?limit=100", &dl); err != nil {
		return err
	}
	p.Deliveries = dl.Deliveries
	d.render(w, r, http.StatusOK, "webhook", view{Title: "Webhook", Nav: "webhooks", Me: me, Data: p})
	return nil
}

// UsagePage is the data of /usage.
type UsagePage struct {
	Usage    Usage
	Statuses []domain.Status
}

func (d *Dashboard) usage(w http.ResponseWriter, r *http.Request, me identity) error {
	p := UsagePage{Statuses: statuses}
	if err := d.get(r, "/v1/account", &p.Usage); err != nil {
		return err
	}
	d.render(w, r, http.StatusOK, "usage", view{Title: "Plan and usage", Nav: "usage", Me: me, Data: p})
	return nil
}

// AdminPage is the data of /admin.
type AdminPage struct {
	Accounts []Account
	Users    []User
	Health   *Health
	// HealthError says why the health is missing.
	HealthError string
	Plans       []domain.Plan
	Statuses    []domain.Status
}

func (d *Dashboard) admin(w http.ResponseWriter, r *http.Request, me identity) error {
	p := AdminPage{Plans: plans, Statuses: statuses}
	var accts struct {
		Data []Account `json:"data"`
	}
	if err := d.get(r, "/v1/admin/accounts", &accts); err != nil {
		return err
	}
	var users struct {
		Data []User `json:"data"`
	}
	if err := d.get(r, "/v1/admin/users", &users); err != nil {
		return err
	}
	var h Health
	if err := d.get(r, "/v1/admin/health", &h); err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			return err
		}
		p.HealthError = ae.Message
	} else {
		p.Health = &h
	}
	p.Accounts, p.Users = accts.Data, users.Data
	d.render(w, r, http.StatusOK, "admin", view{Title: "Admin", Nav: "admin", Me: me, Data: p})
	return nil
}

// AdminAccountPage is the data of /admin/accounts/{slug}.
type AdminAccountPage struct {
	Account Account
	Keys    []Key
	Plans   []domain.Plan
}

func (d *Dashboard) adminAccount(w http.ResponseWriter, r *http.Request, me identity) error {
	slug := mux.Vars(r)["slug"]
	var accts struct {
		Data []Account `json:"data"`
	}
	if err := d.get(r, "/v1/admin/accounts", &accts); err != nil {
		return err
	}
	p := AdminAccountPage{Plans: plans}
	found := false
	for _, a := range accts.Data {
		if a.Slug == slug {
			p.Account, found = a, true
		}
	}
	if !found {
		return errNotFound
	}
	var keys keyList
	if err := d.get(r, "/v1/admin/accounts/"+url.PathEscape(slug)+"/keys", &keys); err != nil {
		return err
	}
	p.Keys = keys.Data
	d.render(w, r, http.StatusOK, "account", view{Title: "Account " + slug, Nav: "admin", Me: me, Data: p})
	return nil
}
