package accounts

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/kv"
)

// Defaults of UsersConfig.
const (
	DefaultSessionTTL    = 24 * time.Hour
	DefaultSessionMaxAge = 30 * 24 * time.Hour
	DefaultLinkTTL       = 24 * time.Hour
	DefaultMaxHashing    = 4
	DefaultHashWait      = 2 * time.Second
	// KeyUsageEvery: a node records a key's use at most this often.
	KeyUsageEvery = time.Minute
)

// Events is what the user and account service needs of the event store
// (an *eventstore.Store).
type Events interface {
	eventstore.Log
	NewID() string
}

// UsersConfig tunes the user service. Zero values take the defaults.
type UsersConfig struct {
	SessionTTL    time.Duration // a session unused this long ends (idle)
	SessionMaxAge time.Duration // a session ends this long after login, used or not
	MaxHashing    int           // argon2 computations at once on this node
	HashWait      time.Duration // how long a login waits for one of them before 503
	Argon2        Argon2Params  // cost of new hashes (existing ones keep theirs)
	Now           func() time.Time
	Log           *slog.Logger // default slog.Default()
	// Warm makes the hash verified for unknown emails at once (kino
	// serve), so the first unknown email is not slower than the next.
	Warm bool
}

// SessionStore is where the user service keeps sessions and API keys'
// last use (a *kv.Sessions): values by the SHA-256 of their id, with the
// revision an update must match.
type SessionStore interface {
	Create(ctx context.Context, key string, value []byte) error
	Get(ctx context.Context, key string) (value []byte, revision uint64, found bool, err error)
	Update(ctx context.Context, key string, value []byte, revision uint64) error
	Delete(ctx context.Context, key string) error
	End(ctx context.Context, key string) error
	RecordsKeyUse() bool
	PutKeyUse(ctx context.Context, keyID string, t time.Time) error
	KeyUse(ctx context.Context, keyID string) (t time.Time, found bool, err error)
}

func (c *UsersConfig) validate(s Events) {
	if c.SessionTTL <= 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.SessionMaxAge <= 0 {
		c.SessionMaxAge = DefaultSessionMaxAge
	}
	c.SessionMaxAge = max(c.SessionMaxAge, c.SessionTTL)
	if c.MaxHashing <= 0 {
		c.MaxHashing = DefaultMaxHashing
	}
	if c.HashWait <= 0 {
		c.HashWait = DefaultHashWait
	}
	if c.Argon2 == (Argon2Params{}) {
		c.Argon2 = DefaultArgon2
	}
	if c.Now == nil {
		c.Now = s.Now
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
}

// Users is the user service.
type Users struct {
	s        Events
	cfg      UsersConfig
	log      *slog.Logger
	sessions SessionStore
	slots    chan struct{} // argon2 computations under way

	dummyOnce sync.Once
	dummy     string // verified for unknown emails, so timing tells nothing
	dummyErr  error

	mu        sync.Mutex
	usedAt    map[string]time.Time // key id -> when this node last recorded its use
	usedSwept time.Time
}

// NewUsers is the user service on the event log s, keeping sessions in
// sessions (kv.OpenSessions, whose bucket's TTL is cfg.SessionTTL).
func NewUsers(s Events, sessions SessionStore, cfg UsersConfig) (*Users, error) {
	cfg.validate(s)
	u := &Users{s: s, cfg: cfg, log: cfg.Log, sessions: sessions, slots: make(chan struct{}, cfg.MaxHashing), usedAt: map[string]time.Time{}}
	if cfg.Warm {
		if _, err := u.dummyHash(); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// errSessions: the sessions bucket did not answer (NATS unreachable, a
// cluster without quorum): 503, as the event store's outages are.
func errSessions(op string, err error) error {
	if errors.Is(err, kv.ErrNoSessionBuckets) {
		return err
	}
	return domain.Wrap(op, domain.Unavailable, err, "Sessions are unavailable right now; retry in a moment")
}

// dummyHash is the hash verified for unknown emails, made once, with the
// parameters of real ones.
func (u *Users) dummyHash() (string, error) {
	u.dummyOnce.Do(func() {
		u.dummy, u.dummyErr = HashPassword("kino dummy password", u.cfg.Argon2, rand.Reader)
	})
	return u.dummy, u.dummyErr
}

// SessionTTL is the idle lifetime of a session.
func (u *Users) SessionTTL() time.Duration { return u.cfg.SessionTTL }

// SessionMaxAge is the absolute lifetime of a session.
func (u *Users) SessionMaxAge() time.Duration { return u.cfg.SessionMaxAge }

// hashSlot waits (at most HashWait) for one of the MaxHashing argon2
// computations this node runs at once: each holds Argon2.Memory, so a
// flood of logins waits, then is refused (503), rather than exhausting
// memory.
func (u *Users) hashSlot(ctx context.Context, op string) (release func(), err error) {
	t := time.NewTimer(u.cfg.HashWait)
	defer t.Stop()
	select {
	case u.slots <- struct{}{}:
		return func() { <-u.slots }, nil
	case <-t.C:
		return nil, domain.E(op, domain.Unavailable, "Too many logins at once; retry in a moment")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// NewUser is a user to create: of Account, or an operator.
type NewUser struct {
	Email    string
	Account  string
	Operator bool
	LinkTTL  time.Duration // 0: DefaultLinkTTL
}

// CreateUser records a user and returns it (Result.State) with the token
// of its one-time set-password link, to be shown once (only its hash is
// stored). The account of an account user must exist.
func (u *Users) CreateUser(ctx context.Context, nu NewUser) (eventstore.Result[domain.User], string, error) {
	const op = "create user"
	if !nu.Operator {
		if !domain.ValidSlug(nu.Account) {
			return eventstore.Result[domain.User]{}, "", domain.E(op, domain.NotFound, "account %q not found", nu.Account)
		}
		events, _, err := u.s.Load(ctx, domain.AccountStream(nu.Account))
		if err != nil {
			return eventstore.Result[domain.User]{}, "", err
		}
		if a := domain.Fold[domain.Account](events); !a.Created {
			return eventstore.Result[domain.User]{}, "", domain.E(op, domain.NotFound, "account %q not found", nu.Account)
		}
	}
	token, err := NewToken()
	if err != nil {
		return eventstore.Result[domain.User]{}, "", err
	}
	ttl := nu.LinkTTL
	if ttl <= 0 {
		ttl = DefaultLinkTTL
	}
	email := domain.NormalizeEmail(nu.Email)
	if err := domain.CheckEmail(op, email); err != nil {
		return eventstore.Result[domain.User]{}, "", err
	}
	res, err := eventstore.Execute[domain.User](ctx, u.s, domain.UserStream(email), domain.CreateUser{
		UserID: u.s.NewID(), Email: email, Account: nu.Account, Operator: nu.Operator,
		LinkHash: HashToken(token), LinkExpiresAt: u.cfg.Now().Add(ttl).UTC().Truncate(time.Millisecond),
	})
	if err != nil {
		return eventstore.Result[domain.User]{}, "", err
	}
	return res, token, nil
}

// IssuePasswordLink gives the user with this email a new one-time
// set-password link (the old one stops working) and returns its token.
func (u *Users) IssuePasswordLink(ctx context.Context, email string, ttl time.Duration) (eventstore.Result[domain.User], string, error) {
	token, err := NewToken()
	if err != nil {
		return eventstore.Result[domain.User]{}, "", err
	}
	if ttl <= 0 {
		ttl = DefaultLinkTTL
	}
	res, err := eventstore.Execute[domain.User](ctx, u.s, domain.UserStream(email), domain.IssuePasswordLink{
		LinkHash: HashToken(token), LinkExpiresAt: u.cfg.Now().Add(ttl).UTC().Truncate(time.Millisecond),
	})
	if err != nil {
		return eventstore.Result[domain.User]{}, "", err
	}
	return res, token, nil
}

// User loads the user with this email from its stream.
func (u *Users) User(ctx context.Context, email string) (domain.User, uint64, error) {
	events, last, err := u.s.Load(ctx, domain.UserStream(email))
	if err != nil {
		return domain.User{}, 0, err
	}
	return domain.Fold[domain.User](events), last, nil
}

// SetPassword sets the password of the user with this email through its
// set-password link's token: the link must be the user's current one,
// unused and unexpired; it is used up. Result.State is the user after.
func (u *Users) SetPassword(ctx context.Context, email, token, pw string) (eventstore.Result[domain.User], error) {
	const op = "set password"
	if err := domain.CheckPassword(op, pw); err != nil {
		return eventstore.Result[domain.User]{}, err
	}
	if !wellFormedToken(token) {
		return eventstore.Result[domain.User]{}, domain.ErrBadLink(op)
	}
	// Checked before hashing, so a wrong token costs no argon2 run; Decide
	// checks again against the state it appends to.
	cur, _, err := u.User(ctx, email)
	if err != nil {
		return eventstore.Result[domain.User]{}, err
	}
	hash := HashToken(token)
	if _, err := cur.Decide(domain.SetPassword{LinkHash: hash, Hash: "$argon2id$check"}, u.cfg.Now()); err != nil {
		return eventstore.Result[domain.User]{}, err
	}
	release, err := u.hashSlot(ctx, op)
	if err != nil {
		return eventstore.Result[domain.User]{}, err
	}
	phc, err := HashPassword(pw, u.cfg.Argon2, rand.Reader)
	release()
	if err != nil {
		return eventstore.Result[domain.User]{}, err
	}
	res, err := eventstore.Execute[domain.User](ctx, u.s, domain.UserStream(email), domain.SetPassword{LinkHash: hash, Hash: phc})
	if err != nil {
		return eventstore.Result[domain.User]{}, err
	}
	return res, nil
}

// ErrBadLogin is the one answer to a wrong email or password.
func errBadLogin() error {
	return domain.E("log in", domain.LoginFailed, "The email or password is wrong")
}

// Authenticate checks an email and password. An unknown email, a user
// without a password yet and a wrong password all take one argon2
// verification (a dummy hash stands in for the missing one) and give the
// same error, so neither the answer nor its timing tells which it was.
func (u *Users) Authenticate(ctx context.Context, email, pw string) (domain.User, error) {
	const op = "log in"
	email = domain.NormalizeEmail(email)
	if len(pw) > domain.MaxPasswordBytes || len(email) > domain.MaxEmailLen {
		return domain.User{}, errBadLogin()
	}
	user, _, err := u.User(ctx, email)
	if err != nil {
		return domain.User{}, err
	}
	phc := user.PasswordHash
	known := user.Created && phc != ""
	if !known {
		if phc, err = u.dummyHash(); err != nil {
			return domain.User{}, err
		}
	}
	release, err := u.hashSlot(ctx, op)
	if err != nil {
		return domain.User{}, err
	}
	ok, verr := VerifyPassword(phc, pw)
	release()
	if verr != nil {
		return domain.User{}, fmt.Errorf("%s: stored hash of user %s: %w", op, user.ID, verr)
	}
	if !ok || !known {
		return domain.User{}, errBadLogin()
	}
	return user, nil
}
