package domain

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/mail"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// AggUser is the aggregate of the people who log in to the dashboard and
// the admin interface.
const AggUser = "user"

// User event types.
const (
	TypeUserCreated        = "UserCreated"
	TypePasswordLinkIssued = "PasswordLinkIssued"
	TypePasswordSet        = "PasswordSet"
	TypeUserRemoved        = "UserRemoved"
)

// UserCreated: a person of account Account (or the instance's operator)
// may set a password through a one-time link, of which only the SHA-256
// is kept (LinkHash), valid until LinkExpiresAt.
type UserCreated struct {
	UserID        string    `json:"userId"` // ULID: the id the API shows
	Email         string    `json:"email"`  // normalised (NormalizeEmail)
	Account       string    `json:"account,omitempty"`
	Operator      bool      `json:"operator,omitempty"`
	LinkHash      string    `json:"linkHash"`
	LinkExpiresAt time.Time `json:"linkExpiresAt"`
}

// PasswordLinkIssued replaces the user's set-password link.
type PasswordLinkIssued struct {
	UserID        string    `json:"userId"`
	LinkHash      string    `json:"linkHash"`
	LinkExpiresAt time.Time `json:"linkExpiresAt"`
}

// PasswordSet records the argon2id hash (PHC string) of a new password,
// and consumes the link it was set through.
type PasswordSet struct {
	UserID   string `json:"userId"`
	Hash     string `json:"hash"`
	LinkHash string `json:"linkHash,omitempty"`
}

// UserRemoved ends a user: its sessions are refused from then on.
type UserRemoved struct {
	UserID string `json:"userId"`
}

func (UserCreated) EventType() string        { return TypeUserCreated }
func (UserCreated) Aggregate() string        { return AggUser }
func (PasswordLinkIssued) EventType() string { return TypePasswordLinkIssued }
func (PasswordLinkIssued) Aggregate() string { return AggUser }
func (PasswordSet) EventType() string        { return TypePasswordSet }
func (PasswordSet) Aggregate() string        { return AggUser }
func (UserRemoved) EventType() string        { return TypeUserRemoved }
func (UserRemoved) Aggregate() string        { return AggUser }

// UserStream names the stream of the user with this email: its id is
// derived from the normalised address (UserKey), so two users with one
// email would write to one stream, and the second creation is refused by
// the stream's optimistic concurrency and Decide.
func UserStream(email string) StreamID {
	return StreamID{Aggregate: AggUser, ID: UserKey(email)}
}

// UserKey is the stream id of a user: the first 128 bits, in hex, of the
// SHA-256 of its normalised email (a subject token: no dots or wildcards,
// whatever the address holds).
func UserKey(email string) string {
	sum := sha256.Sum256([]byte("kino-user\x00" + NormalizeEmail(email)))
	return hex.EncodeToString(sum[:16])
}

// Limits of what people type.
const (
	MaxEmailLen       = 254 // bytes, RFC 5321's path limit
	MinPasswordLen    = 10  // characters
	MaxPasswordBytes  = 256 // bytes: every byte is hashed; bound the work
	LinkHashLen       = 64  // hex SHA-256
	passwordHashMagic = "$argon2id$"
)

// NormalizeEmail trims and lower-cases an address: one person, one user,
// whatever the case they type it in.
func NormalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// CheckEmail validates a (normalised) email address: a plain addr-spec
// (no display name, no comments), at most MaxEmailLen bytes, a domain with
// a dot or "localhost", no control or invisible characters.
func CheckEmail(op, email string) error {
	bad := func() error {
		return E(op, Invalid, "email must be an address like name@example.com (got %q)", Truncate(email, 80))
	}
	if email == "" || len(email) > MaxEmailLen || !utf8.ValidString(email) {
		if len(email) > MaxEmailLen {
			return E(op, Invalid, "email must be at most %d bytes", MaxEmailLen)
		}
		return bad()
	}
	for _, r := range email {
		if unicode.IsControl(r) || unicode.IsSpace(r) || IsBidiControl(r) || IsInvisible(r) {
			return bad()
		}
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Name != "" || a.Address != email {
		return bad()
	}
	local, dom, ok := strings.Cut(email, "@")
	if !ok || local == "" || dom == "" || strings.ContainsAny(dom, "@[]") ||
		(!strings.Contains(dom, ".") && dom != "localhost") || strings.HasPrefix(dom, ".") || strings.HasSuffix(dom, ".") {
		return bad()
	}
	return nil
}

// CheckPassword validates a new password: MinPasswordLen characters at
// least, MaxPasswordBytes bytes at most, valid UTF-8.
func CheckPassword(op, pw string) error {
	switch {
	case !utf8.ValidString(pw):
		return E(op, Invalid, "password must be valid UTF-8")
	case len(pw) > MaxPasswordBytes:
		return E(op, Invalid, "password must be at most %d bytes", MaxPasswordBytes)
	case utf8.RuneCountInString(pw) < MinPasswordLen:
		return E(op, Invalid, "password must be at least %d characters", MinPasswordLen)
	}
	return nil
}

// User is the write-side state of one user.
type User struct {
	Key           string // stream id
	ID            string
	Email         string
	Account       string
	Operator      bool
	Created       bool // and not removed
	Removed       bool
	PasswordHash  string
	PasswordGen   int // PasswordSet events so far: a session is bound to one
	LinkHash      string
	LinkExpiresAt time.Time
	LinkUsed      bool
	CreatedAt     time.Time
}

func (u User) Evolve(e Event) User {
	switch d := e.Data.(type) {
	case UserCreated:
		gen := u.PasswordGen // a user created again keeps counting: old sessions stay refused
		u = User{Key: e.AggregateID, ID: d.UserID, Email: d.Email, Account: d.Account, Operator: d.Operator, Created: true,
			PasswordGen: gen, LinkHash: d.LinkHash, LinkExpiresAt: d.LinkExpiresAt, CreatedAt: e.OccurredAt}
	case PasswordLinkIssued:
		u.LinkHash, u.LinkExpiresAt, u.LinkUsed = d.LinkHash, d.LinkExpiresAt, false
	case PasswordSet:
		u.PasswordHash = d.Hash
		u.PasswordGen++
		if d.LinkHash != "" && d.LinkHash == u.LinkHash {
			u.LinkUsed = true
		}
	case UserRemoved:
		u.Created, u.Removed, u.PasswordHash, u.LinkHash = false, true, "", ""
		u.PasswordGen++
	}
	return u
}

// CreateUser creates a user of Account, or an operator (Operator, no
// Account), with a set-password link (its hash) valid until LinkExpiresAt.
type CreateUser struct {
	UserID        string
	Email         string // normalised by Decide
	Account       string
	Operator      bool
	LinkHash      string
	LinkExpiresAt time.Time
}

// IssuePasswordLink gives the user a new set-password link.
type IssuePasswordLink struct {
	LinkHash      string
	LinkExpiresAt time.Time
}

// SetPassword sets the password through the link whose hash is LinkHash;
// Hash is the new password's argon2id PHC string.
type SetPassword struct {
	LinkHash string
	Hash     string
}

// RemoveUser removes the user.
type RemoveUser struct{}

// ErrBadLink is the one answer to a set-password link that is unknown,
// used, expired or not this user's: which of these it is stays untold.
func ErrBadLink(op string) error {
	return E(op, Invalid, "This password link is invalid, expired or already used; ask for a new one")
}

func (u User) Decide(cmd any, now time.Time) ([]Payload, error) {
	switch c := cmd.(type) {
	case CreateUser:
		const op = "create user"
		email := NormalizeEmail(c.Email)
		if err := CheckEmail(op, email); err != nil {
			return nil, err
		}
		switch {
		case c.Operator && c.Account != "":
			return nil, E(op, Invalid, "a user is either an operator or of an account, not both")
		case !c.Operator:
			if err := checkSlug(op, "account", c.Account); err != nil {
				return nil, err
			}
		}
		if c.UserID == "" || len(c.LinkHash) != LinkHashLen || !c.LinkExpiresAt.After(now) {
			return nil, E(op, Invalid, "user id, link hash and a future link expiry are required")
		}
		if u.Created {
			return nil, E(op, Conflict, "a user with this email already exists")
		}
		return []Payload{UserCreated{UserID: c.UserID, Email: email, Account: c.Account, Operator: c.Operator,
			LinkHash: c.LinkHash, LinkExpiresAt: c.LinkExpiresAt.UTC()}}, nil
	case IssuePasswordLink:
		const op = "issue password link"
		if !u.Created {
			return nil, E(op, NotFound, "user not found")
		}
		if len(c.LinkHash) != LinkHashLen || !c.LinkExpiresAt.After(now) {
			return nil, E(op, Invalid, "link hash and a future link expiry are required")
		}
		return []Payload{PasswordLinkIssued{UserID: u.ID, LinkHash: c.LinkHash, LinkExpiresAt: c.LinkExpiresAt.UTC()}}, nil
	case SetPassword:
		const op = "set password"
		if !strings.HasPrefix(c.Hash, passwordHashMagic) {
			return nil, E(op, Internal, "not an argon2id hash")
		}
		if !u.Created || u.LinkHash == "" || u.LinkUsed || !now.Before(u.LinkExpiresAt) ||
			subtle.ConstantTimeCompare([]byte(c.LinkHash), []byte(u.LinkHash)) != 1 {
			return nil, ErrBadLink(op)
		}
		return []Payload{PasswordSet{UserID: u.ID, Hash: c.Hash, LinkHash: u.LinkHash}}, nil
	case RemoveUser:
		if !u.Created {
			return nil, E("remove user", NotFound, "user not found")
		}
		return []Payload{UserRemoved{UserID: u.ID}}, nil
	}
	return nil, E("decide user", Internal, "unknown command %T", cmd)
}
