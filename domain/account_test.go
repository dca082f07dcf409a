package domain_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kino-video/kino/domain"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

var (
	hashA    = strings.Repeat("a", 64)
	hashB    = strings.Repeat("b", 64)
	acmeFree = domain.AccountCreated{Plan: domain.PlanFree}
	keyA     = domain.KeyIssued{KeyID: "key-a", Hash: hashA, Prefix: "svc_live_AAAA", Label: "laptop"}
	keyB     = domain.KeyIssued{KeyID: "key-b", Hash: hashB, Prefix: "svc_live_BBBB"}
)

func TestAccountDecide(t *testing.T) {
	full, oneRevoked := []domain.Payload{acmeFree}, []domain.Payload{acmeFree}
	for i := range domain.MaxLiveKeys {
		k := domain.KeyIssued{KeyID: fmt.Sprintf("key-%d", i), Hash: strings.Repeat("a", 64), Prefix: "svc_live_AAAA"}
		full, oneRevoked = append(full, k), append(oneRevoked, k)
	}
	oneRevoked = append(oneRevoked, domain.KeyRevoked{KeyID: "key-7"})
	next := domain.IssueKey{KeyID: "key-next", Hash: strings.Repeat("b", 64), Prefix: "svc_live_BBBB"}
	runDecide[domain.Account](t, "acme", []decideCase{
		{name: "issue a key past the live keys' cap", given: full, when: next, err: domain.Conflict},
		{
			name:  "issue a key once one of the cap is revoked",
			given: oneRevoked,
			when:  next,
			then:  []domain.Payload{domain.KeyIssued{KeyID: "key-next", Hash: strings.Repeat("b", 64), Prefix: "svc_live_BBBB"}},
		},
		{
			name: "create",
			when: domain.CreateAccount{Slug: "acme", Plan: domain.PlanPro},
			then: []domain.Payload{domain.AccountCreated{Plan: domain.PlanPro}},
		},
		{name: "create with an unknown plan", when: domain.CreateAccount{Slug: "acme", Plan: "gold"}, err: domain.Invalid},
		{name: "create without a plan", when: domain.CreateAccount{Slug: "acme"}, err: domain.Invalid},
		{name: "create with a plan in upper case", when: domain.CreateAccount{Slug: "acme", Plan: "PRO"}, err: domain.Invalid},
		{name: "create with a bad slug", when: domain.CreateAccount{Slug: "Acme", Plan: domain.PlanFree}, err: domain.Invalid},
		{
			name:  "create twice",
			given: []domain.Payload{acmeFree},
			when:  domain.CreateAccount{Slug: "acme", Plan: domain.PlanPro},
			err:   domain.Conflict,
		},
		{
			name:  "change plan",
			given: []domain.Payload{acmeFree},
			when:  domain.ChangePlan{Plan: domain.PlanBusiness},
			then:  []domain.Payload{domain.PlanChanged{Plan: domain.PlanBusiness}},
		},
		{
			name:  "change to the current plan is a no-op",
			given: []domain.Payload{acmeFree},
			when:  domain.ChangePlan{Plan: domain.PlanFree},
			then:  nil,
		},
		{
			name:  "change back to the created plan after a change",
			given: []domain.Payload{acmeFree, domain.PlanChanged{Plan: domain.PlanPro}},
			when:  domain.ChangePlan{Plan: domain.PlanFree},
			then:  []domain.Payload{domain.PlanChanged{Plan: domain.PlanFree}},
		},
		{
			name:  "change to an unknown plan",
			given: []domain.Payload{acmeFree},
			when:  domain.ChangePlan{Plan: "gold"},
			err:   domain.Invalid,
		},
		{name: "change plan of a missing account", when: domain.ChangePlan{Plan: domain.PlanPro}, err: domain.NotFound},
		{
			name:  "set a storage quota",
			given: []domain.Payload{acmeFree},
			when:  domain.SetStorageQuota{Bytes: ptr(int64(50 << 30))},
			then:  []domain.Payload{domain.StorageQuotaChanged{Bytes: ptr(int64(50 << 30))}},
		},
		{
			name:  "no storage quota",
			given: []domain.Payload{acmeFree},
			when:  domain.SetStorageQuota{Bytes: ptr(int64(0))},
			then:  []domain.Payload{domain.StorageQuotaChanged{Bytes: ptr(int64(0))}},
		},
		{
			name:  "the same storage quota again is a no-op",
			given: []domain.Payload{acmeFree, domain.StorageQuotaChanged{Bytes: ptr(int64(7))}},
			when:  domain.SetStorageQuota{Bytes: ptr(int64(7))},
		},
		{
			name:  "back to the plan's storage quota",
			given: []domain.Payload{acmeFree, domain.StorageQuotaChanged{Bytes: ptr(int64(7))}},
			when:  domain.SetStorageQuota{},
			then:  []domain.Payload{domain.StorageQuotaChanged{}},
		},
		{name: "back to the plan's when it is already", given: []domain.Payload{acmeFree}, when: domain.SetStorageQuota{}},
		{name: "a negative storage quota", given: []domain.Payload{acmeFree}, when: domain.SetStorageQuota{Bytes: ptr(int64(-1))}, err: domain.Invalid},
		{name: "a storage quota past 1 EiB", given: []domain.Payload{acmeFree}, when: domain.SetStorageQuota{Bytes: ptr(int64(1<<60 + 1))}, err: domain.Invalid},
		{name: "a storage quota of a missing account", when: domain.SetStorageQuota{Bytes: ptr(int64(1))}, err: domain.NotFound},
		{
			name:  "issue key",
			given: []domain.Payload{acmeFree},
			when:  domain.IssueKey{KeyID: "key-a", Hash: hashA, Prefix: "svc_live_AAAA", Label: "laptop"},
			then:  []domain.Payload{keyA},
		},
		{
			name:  "issue key without a label",
			given: []domain.Payload{acmeFree},
			when:  domain.IssueKey{KeyID: "key-b", Hash: hashB, Prefix: "svc_live_BBBB"},
			then:  []domain.Payload{keyB},
		},
		{
			name: "issue key on a missing account",
			when: domain.IssueKey{KeyID: "key-a", Hash: hashA, Prefix: "svc_live_AAAA"},
			err:  domain.NotFound,
		},
		{
			name:  "issue key with a short hash",
			given: []domain.Payload{acmeFree},
			when:  domain.IssueKey{KeyID: "key-a", Hash: hashA[:63]},
			err:   domain.Invalid,
		},
		{
			name:  "issue key without an id",
			given: []domain.Payload{acmeFree},
			when:  domain.IssueKey{Hash: hashA},
			err:   domain.Invalid,
		},
		{
			name:  "issue key with a control character in the label",
			given: []domain.Payload{acmeFree},
			when:  domain.IssueKey{KeyID: "key-a", Hash: hashA, Label: "lap\ttop"},
			err:   domain.Invalid,
		},
		{
			name:  "revoke carries the key's hash",
			given: []domain.Payload{acmeFree, keyA, keyB},
			when:  domain.RevokeKey{KeyID: "key-b"},
			then:  []domain.Payload{domain.KeyRevoked{KeyID: "key-b", Hash: hashB}},
		},
		{
			name:  "revoke an unknown key",
			given: []domain.Payload{acmeFree, keyA},
			when:  domain.RevokeKey{KeyID: "key-z"},
			err:   domain.NotFound,
		},
		{
			name: "revoke on a missing account",
			when: domain.RevokeKey{KeyID: "key-a"},
			err:  domain.NotFound,
		},
		{
			name:  "revoke twice is a no-op",
			given: []domain.Payload{acmeFree, keyA, domain.KeyRevoked{KeyID: "key-a", Hash: hashA}},
			when:  domain.RevokeKey{KeyID: "key-a"},
			then:  nil,
		},
		{
			name:  "revoking one key leaves the other revocable",
			given: []domain.Payload{acmeFree, keyA, keyB, domain.KeyRevoked{KeyID: "key-a", Hash: hashA}},
			when:  domain.RevokeKey{KeyID: "key-b"},
			then:  []domain.Payload{domain.KeyRevoked{KeyID: "key-b", Hash: hashB}},
		},
		{
			name:  "unknown command",
			given: []domain.Payload{acmeFree},
			when:  domain.DeleteVideo{Account: "acme"},
			err:   domain.Internal,
		},
	})
}

func TestAccountEvolve(t *testing.T) {
	events := history(t, "acme", acmeFree, domain.PlanChanged{Plan: domain.PlanPro}, keyA, keyB, domain.KeyRevoked{KeyID: "key-a", Hash: hashA})
	got := domain.Fold[domain.Account](events)
	want := domain.Account{
		Slug:    "acme",
		Plan:    domain.PlanPro,
		Created: true,
		Keys: []domain.Key{
			{ID: "key-a", Hash: hashA, Prefix: "svc_live_AAAA", Label: "laptop", IssuedAt: events[2].OccurredAt, Revoked: true},
			{ID: "key-b", Hash: hashB, Prefix: "svc_live_BBBB", IssuedAt: events[3].OccurredAt},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("state =\n\t%+v\nwant\n\t%+v", got, want)
	}
}

// However long its history, the state holds its live keys, the newest
// MaxRevokedKept revoked ones and its live signing keys: what a snapshot
// of it keeps stays small.
func TestAccountStateStaysSmall(t *testing.T) {
	payloads := []domain.Payload{acmeFree}
	const rounds = domain.MaxRevokedKept + 50
	for i := range rounds {
		id := fmt.Sprintf("key-%03d", i)
		payloads = append(payloads, domain.KeyIssued{KeyID: id, Hash: hashA}, domain.KeyRevoked{KeyID: id, Hash: hashA},
			domain.SigningKeyCreated{KeyID: "sk-" + id, PublicKey: "pk"}, domain.SigningKeyDeleted{KeyID: "sk-" + id})
	}
	payloads = append(payloads, domain.KeyIssued{KeyID: "live", Hash: hashB}, domain.SigningKeyCreated{KeyID: "sk-live", PublicKey: "pk"})
	a := given[domain.Account](t, "acme", payloads...)
	if len(a.Keys) != domain.MaxRevokedKept+1 || a.Keys[len(a.Keys)-1].ID != "live" || a.Keys[0].ID != fmt.Sprintf("key-%03d", rounds-domain.MaxRevokedKept) {
		t.Fatalf("%d keys, first %s, last %s", len(a.Keys), a.Keys[0].ID, a.Keys[len(a.Keys)-1].ID)
	}
	if len(a.Signing) != 1 || a.Signing[0].ID != "sk-live" {
		t.Fatalf("signing keys %+v", a.Signing)
	}
	// The newest revoked keys are still known (revoking again: a no-op);
	// older ones are forgotten (NotFound).
	if p, err := a.Decide(domain.RevokeKey{KeyID: fmt.Sprintf("key-%03d", rounds-1)}, time.Time{}); err != nil || p != nil {
		t.Fatalf("revoking a recent revoked key again: %v %v", p, err)
	}
	if _, err := a.Decide(domain.RevokeKey{KeyID: "key-000"}, time.Time{}); domain.KindOf(err) != domain.NotFound {
		t.Fatalf("revoking a forgotten key: %v", err)
	}
	if _, err := a.Decide(domain.DeleteSigningKey{KeyID: "sk-key-000"}, time.Time{}); domain.KindOf(err) != domain.NotFound {
		t.Fatalf("deleting a deleted signing key: %v", err)
	}
}

// AccountPlan folds to the plan from the account's creation and its last
// plan change alone.
func TestAccountPlan(t *testing.T) {
	if p := given[domain.AccountPlan](t, "acme", acmeFree, keyA, domain.PlanChanged{Plan: domain.PlanPro}, domain.PlanChanged{Plan: domain.PlanBusiness}); !p.Created || p.Plan != domain.PlanBusiness {
		t.Fatalf("plan %+v", p)
	}
	if p := given[domain.AccountPlan](t, "acme", acmeFree); !p.Created || p.Plan != domain.PlanFree {
		t.Fatalf("plan %+v", p)
	}
	if p := domain.Fold[domain.AccountPlan](nil); p.Created {
		t.Fatalf("no account: %+v", p)
	}
}

func TestAccountEvolveDoesNotAlias(t *testing.T) {
	// Evolve is pure: the state it was given must not change, even though
	// Keys is a slice the two states could share.
	before := given[domain.Account](t, "acme", acmeFree, keyA)
	revoked := before.Evolve(history(t, "acme", domain.KeyRevoked{KeyID: "key-a", Hash: hashA})[0])
	if before.Keys[0].Revoked {
		t.Fatal("revoking in the new state marked the key revoked in the old state")
	}
	if !revoked.Keys[0].Revoked {
		t.Fatal("new state: key not revoked")
	}

	// Two states evolved from the same parent must not overwrite each other's
	// appended key. Three keys leave spare capacity in a naively appended
	// slice, which is where sharing would show.
	parent := given[domain.Account](t, "acme", acmeFree, keyA, keyB, domain.KeyIssued{KeyID: "key-c", Hash: hashA})
	x := parent.Evolve(history(t, "acme", domain.KeyIssued{KeyID: "key-x", Hash: hashA})[0])
	y := parent.Evolve(history(t, "acme", domain.KeyIssued{KeyID: "key-y", Hash: hashB})[0])
	if len(parent.Keys) != 3 || len(x.Keys) != 4 || len(y.Keys) != 4 || x.Keys[3].ID != "key-x" || y.Keys[3].ID != "key-y" {
		t.Fatalf("parent %v, x %v, y %v: states share their keys", parent.Keys, x.Keys, y.Keys)
	}
}

func TestNewAPIKey(t *testing.T) {
	a, err := domain.NewAPIKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := domain.NewAPIKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{a, b} {
		if !strings.HasPrefix(k, "svc_live_") || len(k) != 41 {
			t.Fatalf("key %q: want svc_live_ and 41 characters", k)
		}
		if strings.Trim(k[len("svc_live_"):], base62) != "" {
			t.Fatalf("key %q: body is not base62", k)
		}
		if !domain.WellFormedKey(k) {
			t.Fatalf("WellFormedKey(%q) = false", k)
		}
	}
	if a == b {
		t.Fatalf("two keys are both %q", a)
	}
}

func TestNewAPIKeyFromReader(t *testing.T) {
	// Bytes 0..247 map to base62[b%62]; 248..255 are dropped so each
	// character is equally likely.
	seq := func(from, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(from + i)
		}
		return b
	}
	tests := []struct {
		name string
		r    io.Reader
		want string
		fail bool
	}{
		{
			name: "bytes 0..31",
			r:    bytes.NewReader(seq(0, 64)),
			want: "svc_live_" + base62[:32],
		},
		{
			name: "a whole read of 0xFF is dropped",
			r:    io.MultiReader(bytes.NewReader(bytes.Repeat([]byte{0xFF}, 64)), bytes.NewReader(seq(0, 64))),
			want: "svc_live_" + base62[:32],
		},
		{
			name: "248 to 255 are dropped, 247 is kept",
			r:    bytes.NewReader(append(append(seq(248, 8), 247), seq(62, 55)...)),
			want: "svc_live_z" + base62[:31],
		},
		{
			name: "reader ends early",
			r:    bytes.NewReader(seq(0, 10)),
			fail: true,
		},
		{
			name: "reader holds only rejected bytes",
			r:    bytes.NewReader(bytes.Repeat([]byte{0xF8}, 64)),
			fail: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := domain.NewAPIKey(tc.r)
			if tc.fail {
				if err == nil {
					t.Fatalf("NewAPIKey = %q, nil; want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("NewAPIKey = %q; want %q", got, tc.want)
			}
			if !domain.WellFormedKey(got) {
				t.Fatalf("WellFormedKey(%q) = false", got)
			}
		})
	}
}

func TestHashKey(t *testing.T) {
	for _, key := range []string{"svc_live_" + base62[:32], "", "x"} {
		got := domain.HashKey(key)
		sum := sha256.Sum256([]byte(key))
		if want := hex.EncodeToString(sum[:]); got != want {
			t.Fatalf("HashKey(%q) = %q; want %q", key, got, want)
		}
		if len(got) != 64 || strings.Trim(got, "0123456789abcdef") != "" {
			t.Fatalf("HashKey(%q) = %q; want 64 lower-case hex digits", key, got)
		}
	}
	if domain.HashKey("a") == domain.HashKey("b") {
		t.Fatal("different keys hash the same")
	}
}

func TestWellFormedKey(t *testing.T) {
	good := "svc_live_" + base62[30:62]
	tests := []struct {
		name string
		key  string
		want bool
	}{
		{name: "well formed", key: good, want: true},
		{name: "test prefix", key: "svc_test_" + good[9:], want: false},
		{name: "no prefix", key: good[9:] + "123456789", want: false},
		{name: "one character short", key: good[:40], want: false},
		{name: "one character long", key: good + "a", want: false},
		{name: "empty", key: "", want: false},
		{name: "underscore in the body", key: good[:40] + "_", want: false},
		{name: "dash in the body", key: good[:40] + "-", want: false},
		{name: "space in the body", key: good[:40] + " ", want: false},
		{name: "non-ASCII in the body", key: good[:39] + "é", want: false},
		{name: "NUL in the body", key: good[:40] + "\x00", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := domain.WellFormedKey(tc.key); got != tc.want {
				t.Fatalf("WellFormedKey(%q) = %v; want %v", tc.key, got, tc.want)
			}
		})
	}
}

func TestParsePlan(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want domain.Plan
		err  domain.Kind
	}{
		{name: "free", in: "free", want: domain.PlanFree},
		{name: "pro", in: "pro", want: domain.PlanPro},
		{name: "business", in: "business", want: domain.PlanBusiness},
		{name: "unknown", in: "gold", err: domain.Invalid},
		{name: "upper case", in: "Free", err: domain.Invalid},
		{name: "empty", in: "", err: domain.Invalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := domain.ParsePlan(tc.in)
			checkErr(t, "ParsePlan("+tc.in+")", err, tc.err)
			if got != tc.want {
				t.Fatalf("ParsePlan(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestPlanLimits(t *testing.T) {
	plans := domain.DefaultPlans()
	tests := []struct {
		name string
		plan domain.Plan
		want domain.Limits
	}{
		{name: "free", plan: domain.PlanFree, want: domain.Limits{RequestsPerMinute: 60, MaxUploadBytes: domain.GiB, MaxDuration: time.Hour, TranscodeConcurrency: 1, ConcurrentUploads: 2, StorageBytes: 10 * domain.GiB}},
		{name: "pro", plan: domain.PlanPro, want: domain.Limits{RequestsPerMinute: 300, MaxUploadBytes: 10 * domain.GiB, MaxDuration: 6 * time.Hour, TranscodeConcurrency: 2, ConcurrentUploads: 8, StorageBytes: domain.TiB}},
		{name: "business", plan: domain.PlanBusiness, want: domain.Limits{RequestsPerMinute: 1000, MaxUploadBytes: 50 * domain.GiB, MaxDuration: 12 * time.Hour, TranscodeConcurrency: 4, ConcurrentUploads: 16, StorageBytes: 10 * domain.TiB}},
		{name: "unknown gets free", plan: "gold", want: domain.Limits{RequestsPerMinute: 60, MaxUploadBytes: domain.GiB, MaxDuration: time.Hour, TranscodeConcurrency: 1, ConcurrentUploads: 2, StorageBytes: 10 * domain.GiB}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := plans.Limits(tc.plan); got != tc.want {
				t.Fatalf("Limits(%q) = %+v; want %+v", tc.plan, got, tc.want)
			}
		})
	}
}

func TestCheckStorage(t *testing.T) {
	l := domain.Limits{StorageBytes: 100}
	if err := l.CheckStorage(60, 40); err != nil {
		t.Fatalf("filling the quota exactly: %v", err)
	}
	err := l.CheckStorage(60, 41)
	if domain.KindOf(err) != domain.TooLarge || !strings.Contains(err.Error(), "storage quota is 100 bytes") {
		t.Fatalf("one byte past the quota: %v", err)
	}
	if err := (domain.Limits{}).CheckStorage(1<<50, 1<<50); err != nil {
		t.Fatalf("no quota: %v", err)
	}
}
