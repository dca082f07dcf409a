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
}

// Plans maps each plan to its limits. The request rates are the spec's; the
// upload sizes, durations and concurrent uploads are defaults an operator
// may change.
type Plans map[Plan]Limits

// DefaultPlans returns the spec's rates with the default upload sizes.
func DefaultPlans() Plans {
	return Plans{
		PlanFree:     {RequestsPerMinute: 60, MaxUploadBytes: 1 * GiB, MaxDuration: time.Hour, TranscodeConcurrency: 1, ConcurrentUploads: 2},
		PlanPro:      {RequestsPerMinute: 300, MaxUploadBytes: 10 * GiB, MaxDuration: 6 * time.Hour, TranscodeConcurrency: 2, ConcurrentUploads: 8},
		PlanBusiness: {RequestsPerMinute: 1000, MaxUploadBytes: 50 * GiB, MaxDuration: 12 * time.Hour, TranscodeConcurrency: 4, ConcurrentUploads: 16},
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
