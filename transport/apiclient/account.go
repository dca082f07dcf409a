package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Account is the account's plan and usage (GET /v1/account).
type Account struct {
	Slug      string
	Plan      string // free, pro, business
	CreatedAt time.Time
	// Limits are the plan's on this instance.
	Limits struct {
		RequestsPerMinute    int
		MaxUploadBytes       int64
		ConcurrentUploads    int           // multipart uploads and tus PATCHes streaming at once
		MaxDuration          time.Duration // longest video transcoded
		TranscodeConcurrency int           // the account's videos transcoding at once
	}
	// RateLimit is the request budget as of this call (which used one).
	RateLimit struct {
		Limit     int
		Remaining int
		Reset     time.Time // when Remaining grows again
	}
	StorageBytes int64
	Videos       map[Status]int // how many videos in each status
}

type wireAccount struct {
	Slug      string `json:"slug"`
	Plan      string `json:"plan"`
	CreatedAt string `json:"createdAt"`
	Limits    struct {
		RequestsPerMinute    int     `json:"requestsPerMinute"`
		MaxUploadBytes       int64   `json:"maxUploadBytes"`
		ConcurrentUploads    int     `json:"concurrentUploads"`
		MaxDurationSeconds   float64 `json:"maxDurationSeconds"`
		TranscodeConcurrency int     `json:"transcodeConcurrency"`
		StorageBytes         int64   `json:"storageBytes"` // the storage quota (0: none)
	} `json:"limits"`
	RateLimit struct {
		Limit     int             `json:"limit"`
		Remaining int             `json:"remaining"`
		Reset     json.RawMessage `json:"reset"`
	} `json:"rateLimit"`
	StorageBytes int64          `json:"storageBytes"`
	Videos       map[Status]int `json:"videos"`
}

// Account reads the account's plan, limits and usage.
func (c *Client) Account(ctx context.Context) (Account, error) {
	var w wireAccount
	if err := c.do(ctx, c.api(http.MethodGet, "/account", nil), &w); err != nil {
		return Account{}, err
	}
	a := Account{Slug: w.Slug, Plan: w.Plan, CreatedAt: parseTime(w.CreatedAt), StorageBytes: w.StorageBytes, Videos: w.Videos}
	a.Limits.RequestsPerMinute, a.Limits.MaxUploadBytes, a.Limits.ConcurrentUploads =
		w.Limits.RequestsPerMinute, w.Limits.MaxUploadBytes, w.Limits.ConcurrentUploads
	a.Limits.MaxDuration = time.Duration(w.Limits.MaxDurationSeconds * float64(time.Second))
	a.Limits.TranscodeConcurrency = w.Limits.TranscodeConcurrency
	a.RateLimit.Limit, a.RateLimit.Remaining, a.RateLimit.Reset = w.RateLimit.Limit, w.RateLimit.Remaining, resetTime(w.RateLimit.Reset)
	if a.Videos == nil {
		a.Videos = map[Status]int{}
	}
	return a, nil
}

// resetTime reads a reset given as Unix seconds (as X-RateLimit-Reset) or
// as an ISO 8601 string.
func resetTime(raw json.RawMessage) time.Time {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return parseTime(s)
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		if secs, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
			return time.Unix(secs, 0).UTC()
		}
		if f, err := n.Float64(); err == nil {
			return time.Unix(int64(f), 0).UTC()
		}
	}
	return time.Time{}
}
