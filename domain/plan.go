package domain

import (
	"fmt"
	"time"
)

// Plan is an account's plan; it sets the request rate, the upload size and
// the longest video it may transcode.
type Plan string

const (
	PlanFree     Plan = "free"
	PlanPro      Plan = "pro"
	PlanBusiness Plan = "business"
)

const (
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// Limits are what a plan allows.
type Limits struct {
	RequestsPerMinute int
	MaxUploadBytes    int64
	MaxDuration       time.Duration // longest video transcoded; longer ones are FAILED at probe time
	// TranscodeConcurrency is how many of the account's videos may
	// transcode at once across all workers.
	TranscodeConcurrency int
	// ConcurrentUploads bounds the uploads of one account in flight at
	// once, so one account cannot hold every upload slot of the server.
	ConcurrentUploads int
	// StorageBytes is the account's storage quota: the bytes of its
	// videos' originals and outputs together (0: no quota).
	StorageBytes int64
}

// TiB is 2^40 bytes.
const TiB = 1024 * GiB

// CheckStorage refuses (TooLarge, answered 413) an upload of n bytes to an
// account that holds used bytes, when together they pass the quota.
func (l Limits) CheckStorage(used, n int64) error {
	if l.StorageBytes <= 0 || used+n <= l.StorageBytes {
		return nil
	}
	return E("upload video", TooLarge,
		"the account's storage quota is %d bytes: it holds %d bytes of videos, and this upload of %d bytes would pass it; delete videos to make room",
		l.StorageBytes, used, n)
}

// Plans maps each plan to its limits. The request rates are the spec's; the
// upload sizes, durations and concurrent uploads are defaults an operator
// may change.
type Plans map[Plan]Limits

// DefaultPlans returns the spec's rates with the default upload sizes and
// storage quotas (free 10 GiB, pro 1 TiB, business 10 TiB).
func DefaultPlans() Plans {
	return Plans{
		PlanFree:     {RequestsPerMinute: 60, MaxUploadBytes: 1 * GiB, MaxDuration: time.Hour, TranscodeConcurrency: 1, ConcurrentUploads: 2, StorageBytes: 10 * GiB},
		PlanPro:      {RequestsPerMinute: 300, MaxUploadBytes: 10 * GiB, MaxDuration: 6 * time.Hour, TranscodeConcurrency: 2, ConcurrentUploads: 8, StorageBytes: 1 * TiB},
		PlanBusiness: {RequestsPerMinute: 1000, MaxUploadBytes: 50 * GiB, MaxDuration: 12 * time.Hour, TranscodeConcurrency: 4, ConcurrentUploads: 16, StorageBytes: 10 * TiB},
	}
}

// ParsePlan checks a plan name.
func ParsePlan(s string) (Plan, error) {
	switch p := Plan(s); p {
	case PlanFree, PlanPro, PlanBusiness:
		return p, nil
	}
	return "", E("parse plan", Invalid, "plan must be one of free, pro, business (got %q)", s)
}

// Limits returns the limits of p; an unknown plan gets the free plan's.
func (ps Plans) Limits(p Plan) Limits {
	if l, ok := ps[p]; ok {
		return l
	}
	return ps[PlanFree]
}

func (ps Plans) String() string {
	return fmt.Sprintf("free=%d pro=%d business=%d", ps[PlanFree].MaxUploadBytes, ps[PlanPro].MaxUploadBytes, ps[PlanBusiness].MaxUploadBytes)
}
