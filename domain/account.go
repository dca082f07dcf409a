package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Account event types.
const (
	TypeAccountCreated = "AccountCreated"
	TypePlanChanged    = "PlanChanged"
	TypeKeyIssued      = "KeyIssued"
	TypeKeyRevoked     = "KeyRevoked"

	TypeSigningKeyCreated = "SigningKeyCreated"
	TypeSigningKeyDeleted = "SigningKeyDeleted"

	TypeStorageQuotaChanged = "StorageQuotaChanged"
)

type AccountCreated struct {
	Plan Plan `json:"plan"`
}

type PlanChanged struct {
	Plan Plan `json:"plan"`
}

// KeyIssued holds the SHA-256 of the key, never the key.
type KeyIssued struct {
	KeyID  string `json:"keyId"`
	Hash   string `json:"hash"`   // lowercase hex SHA-256 of the full key
	Prefix string `json:"prefix"` // the first characters, for people to recognise a key
	Label  string `json:"label"`
}

type KeyRevoked struct {
	KeyID string `json:"keyId"`
	Hash  string `json:"hash"`
}

// SigningKeyCreated: the account's backend may sign playback tokens with
// the private key of PublicKey (Ed25519, base64url without padding, 32
// bytes). kino never keeps the private key: it was shown once.
type SigningKeyCreated struct {
	KeyID     string `json:"keyId"`
	Algorithm string `json:"algorithm"` // "EdDSA"
	PublicKey string `json:"publicKey"`
	Label     string `json:"label,omitempty"`
}

// SigningKeyDeleted: tokens signed with the key are refused from now on.
type SigningKeyDeleted struct {
	KeyID string `json:"keyId"`
}

// StorageQuotaChanged gives the account its own storage quota in place of
// its plan's: Bytes is the quota in bytes (0: none), or null: the plan's
// again.
type StorageQuotaChanged struct {
	Bytes *int64 `json:"bytes"`
}

func (StorageQuotaChanged) EventType() string { return TypeStorageQuotaChanged }
func (StorageQuotaChanged) Aggregate() string { return AggAccount }

func (AccountCreated) EventType() string { return TypeAccountCreated }
func (AccountCreated) Aggregate() string { return AggAccount }
func (PlanChanged) EventType() string    { return TypePlanChanged }
func (PlanChanged) Aggregate() string    { return AggAccount }
func (KeyIssued) EventType() string      { return TypeKeyIssued }
func (KeyIssued) Aggregate() string      { return AggAccount }
func (KeyRevoked) EventType() string     { return TypeKeyRevoked }
func (KeyRevoked) Aggregate() string     { return AggAccount }

func (SigningKeyCreated) EventType() string { return TypeSigningKeyCreated }
func (SigningKeyCreated) Aggregate() string { return AggAccount }
func (SigningKeyDeleted) EventType() string { return TypeSigningKeyDeleted }
func (SigningKeyDeleted) Aggregate() string { return AggAccount }

// KeyPrefix starts every live API key (spec §5).
const KeyPrefix = "svc_live_"

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewAPIKey draws svc_live_ + 32 base62 characters from r (crypto/rand at
// the edge), without modulo bias.
func NewAPIKey(r io.Reader) (string, error) {
	var b strings.Builder
	b.WriteString(KeyPrefix)
	buf := make([]byte, 64)
	for n := 0; n < 32; {
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", fmt.Errorf("new api key: %w", err)
		}
		for _, c := range buf {
			if c >= 248 { // 248 = 4*62: reject to keep the draw uniform
				continue
			}
			b.WriteByte(base62[c%62])
			if n++; n == 32 {
				break
			}
		}
	}
	return b.String(), nil
}

// HashKey is the stored form of an API key: lowercase hex SHA-256.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// WellFormedKey reports whether key has the shape of a live key.
func WellFormedKey(key string) bool {
	if len(key) != len(KeyPrefix)+32 || !strings.HasPrefix(key, KeyPrefix) {
		return false
	}
	for _, c := range key[len(KeyPrefix):] {
		if !strings.ContainsRune(base62, c) {
			return false
		}
	}
	return true
}

// Key is one API key of an account, as the write side knows it.
type Key struct {
	ID, Hash, Prefix, Label string
	IssuedAt                time.Time
	Revoked                 bool
}

// SigningAlgorithm is the one algorithm of customer signing keys.
const SigningAlgorithm = "EdDSA"

// MaxLiveSigningKeys bounds an account's signing keys (as MaxLiveKeys does
// its API keys).
const MaxLiveSigningKeys = 20

// SigningKey is one live signing key of an account, as the write side
// knows it (a deleted one is forgotten).
type SigningKey struct {
	ID, PublicKey, Label string
	CreatedAt            time.Time
}

// Account is the write-side state of one account. It stays small however
// long the account's history: its live keys (at most MaxLiveKeys), the
// last MaxRevokedKept revoked ones, and its live signing keys, so that a
// snapshot of it (eventstore) costs the same at any length of history.
type Account struct {
	Slug    string
	Plan    Plan
	Created bool
	Keys    []Key
	Signing []SigningKey
	// StorageQuota is the account's own storage quota in bytes (0: none);
	// nil: its plan's.
	StorageQuota *int64
}

func (a Account) Evolve(e Event) Account {
	switch d := e.Data.(type) {
	case AccountCreated:
		a.Slug, a.Plan, a.Created = e.AggregateID, d.Plan, true
	case PlanChanged:
		a.Plan = d.Plan
	case StorageQuotaChanged:
		a.StorageQuota = d.Bytes
	case KeyIssued:
		keys := make([]Key, len(a.Keys), len(a.Keys)+1)
		copy(keys, a.Keys)
		a.Keys = append(keys, Key{ID: d.KeyID, Hash: d.Hash, Prefix: d.Prefix, Label: d.Label, IssuedAt: e.OccurredAt})
	case KeyRevoked:
		keys := make([]Key, 0, len(a.Keys))
		revoked := 0
		for _, k := range slices.Backward(a.Keys) { // newest first, to keep the last revoked
			if k.ID == d.KeyID {
				k.Revoked = true
			}
			if k.Revoked {
				if revoked++; revoked > MaxRevokedKept {
					continue
				}
			}
			keys = append(keys, k)
		}
		slices.Reverse(keys)
		a.Keys = keys
	case SigningKeyCreated:
		keys := make([]SigningKey, len(a.Signing), len(a.Signing)+1)
		copy(keys, a.Signing)
		a.Signing = append(keys, SigningKey{ID: d.KeyID, PublicKey: d.PublicKey, Label: d.Label, CreatedAt: e.OccurredAt})
	case SigningKeyDeleted:
		keys := make([]SigningKey, 0, len(a.Signing))
		for _, k := range a.Signing {
			if k.ID != d.KeyID {
				keys = append(keys, k)
			}
		}
		a.Signing = keys
	}
	return a
}

type CreateAccount struct {
	Slug string
	Plan Plan
}

type ChangePlan struct{ Plan Plan }

// SetStorageQuota gives the account its own storage quota: Bytes (0: none),
// or nil: its plan's again.
type SetStorageQuota struct{ Bytes *int64 }

// MaxStorageQuota bounds a quota set by hand (1 EiB): far above any disk,
// far below overflow when usage is added to it.
const MaxStorageQuota = 1 << 60

// CheckStorageQuota refuses a storage quota outside 0 (none) to
// MaxStorageQuota bytes; nil (the plan's) is fine.
func CheckStorageQuota(bytes *int64) error {
	if bytes != nil && (*bytes < 0 || *bytes > MaxStorageQuota) {
		return E("set storage quota", Invalid, "a storage quota is a number of bytes from 0 (no quota) to %d (got %d)", int64(MaxStorageQuota), *bytes)
	}
	return nil
}

// IssueKey records a new key; the caller generated it and passes its hash.
type IssueKey struct {
	KeyID, Hash, Prefix, Label string
}

type RevokeKey struct{ KeyID string }

// MaxLiveKeys bounds an account's live API keys: every account command
// decides on the account's state, so keys without bound would make each
// one (a plan change, a revocation) slower without bound.
const MaxLiveKeys = 100

// MaxRevokedKept is how many revoked keys the state keeps (the newest):
// for kino keys list and to make a second revocation a no-op. An older
// revoked key is forgotten: revoking it again is NotFound.
const MaxRevokedKept = 100

// SnapshotVersion says which shape of Account a stored snapshot holds;
// it changes with Account's fields or Evolve, so older snapshots are
// ignored (eventstore folds the events again).
func (Account) SnapshotVersion() int { return 1 }

// AccountPlan is what the limits of an account's plan need of it: whether
// it exists, and its plan. It depends on the last event of two types, so
// it is read without the account's history.
type AccountPlan struct {
	Created bool
	Plan    Plan
}

// DecisionTypes are the types AccountPlan is folded from (the last of each).
func (AccountPlan) DecisionTypes() []string { return []string{TypeAccountCreated, TypePlanChanged} }

func (a AccountPlan) Evolve(e Event) AccountPlan {
	switch d := e.Data.(type) {
	case AccountCreated:
		a.Created, a.Plan = true, d.Plan
	case PlanChanged:
		a.Plan = d.Plan
	}
	return a
}

// CreateSigningKey records a new signing key; the caller generated the key
// pair and passes the public half.
type CreateSigningKey struct {
	KeyID, PublicKey, Label string
}

// DeleteSigningKey removes a signing key.
type DeleteSigningKey struct{ KeyID string }

func (a Account) Decide(cmd any, _ time.Time) ([]Payload, error) {
	switch c := cmd.(type) {
	case CreateAccount:
		const op = "create account"
		if err := checkSlug(op, "account slug", c.Slug); err != nil {
			return nil, err
		}
		if _, err := ParsePlan(string(c.Plan)); err != nil {
			return nil, err
		}
		if a.Created {
			return nil, E(op, Conflict, "account %q already exists", c.Slug)
		}
		return []Payload{AccountCreated{Plan: c.Plan}}, nil
	case ChangePlan:
		const op = "change plan"
		if !a.Created {
			return nil, E(op, NotFound, "account not found")
		}
		if _, err := ParsePlan(string(c.Plan)); err != nil {
			return nil, err
		}
		if c.Plan == a.Plan {
			return nil, nil
		}
		return []Payload{PlanChanged{Plan: c.Plan}}, nil
	case SetStorageQuota:
		const op = "set storage quota"
		if !a.Created {
			return nil, E(op, NotFound, "account not found")
		}
		if err := CheckStorageQuota(c.Bytes); err != nil {
			return nil, err
		}
		if (c.Bytes == nil) == (a.StorageQuota == nil) && (c.Bytes == nil || *c.Bytes == *a.StorageQuota) {
			return nil, nil
		}
		return []Payload{StorageQuotaChanged{Bytes: c.Bytes}}, nil
	case IssueKey:
		const op = "issue key"
		if !a.Created {
			return nil, E(op, NotFound, "account not found")
		}
		if len(c.Hash) != 64 || c.KeyID == "" {
			return nil, E(op, Invalid, "key id and hash are required")
		}
		if c.Label != "" {
			if err := checkName(op, "label", c.Label); err != nil {
				return nil, err
			}
		}
		live := 0
		for _, k := range a.Keys {
			if !k.Revoked {
				live++
			}
		}
		if live >= MaxLiveKeys {
			return nil, E(op, Conflict, "an account holds at most %d live API keys; revoke one first", MaxLiveKeys)
		}
		return []Payload{KeyIssued{KeyID: c.KeyID, Hash: c.Hash, Prefix: c.Prefix, Label: c.Label}}, nil
	case RevokeKey:
		const op = "revoke key"
		for _, k := range a.Keys {
			if k.ID == c.KeyID {
				if k.Revoked {
					return nil, nil // revoking twice is a no-op
				}
				return []Payload{KeyRevoked{KeyID: k.ID, Hash: k.Hash}}, nil
			}
		}
		return nil, E(op, NotFound, "key %q not found", c.KeyID)
	case CreateSigningKey:
		const op = "create signing key"
		if !a.Created {
			return nil, E(op, NotFound, "account not found")
		}
		if c.KeyID == "" || c.PublicKey == "" {
			return nil, E(op, Invalid, "key id and public key are required")
		}
		if err := checkLabel(op, c.Label); err != nil {
			return nil, err
		}
		if len(a.Signing) >= MaxLiveSigningKeys {
			return nil, E(op, Conflict, "an account holds at most %d signing keys; delete one first", MaxLiveSigningKeys)
		}
		return []Payload{SigningKeyCreated{KeyID: c.KeyID, Algorithm: SigningAlgorithm, PublicKey: c.PublicKey, Label: strings.TrimSpace(c.Label)}}, nil
	case DeleteSigningKey:
		const op = "delete signing key"
		for _, k := range a.Signing {
			if k.ID == c.KeyID {
				return []Payload{SigningKeyDeleted{KeyID: k.ID}}, nil
			}
		}
		return nil, E(op, NotFound, "signing key %q not found", c.KeyID)
	}
	return nil, E("decide account", Internal, "unknown command %T", cmd)
}
