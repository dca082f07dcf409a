package eventstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/crypto/argon2"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore/internal/natsconn"
)

// The user service: people who log in to the dashboard (the users of an
// account) and to the admin interface (operators), their passwords
// (argon2id) and their sessions, kept in NATS so that any API node serves
// any session.

// Buckets of the user service. Neither is readable by the worker role.
const (
	SessionsBucket = "KINO_SESSIONS"  // SHA-256 of a session id -> Session
	KeyUsageBucket = "KINO_KEY_USAGE" // API key id -> when it was last used
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

// Argon2Params are the cost of a password hash. Memory is in KiB.
type Argon2Params struct {
	Memory  uint32
	Time    uint32
	Threads uint8
}

// DefaultArgon2 is OWASP's first recommended argon2id configuration:
// 46 MiB, one pass, one lane. A guesser pays that memory for every guess
// (memory is what a GPU or ASIC cannot add cheaply); a login costs the
// server about 0.05 to 0.1 s of one core, and MaxHashing (4) at once
// stay within 184 MiB.
var DefaultArgon2 = Argon2Params{Memory: 46 * 1024, Time: 1, Threads: 1}

// Bounds on the parameters a stored hash may claim: a hash is only ever
// written by kino, but one with absurd costs must not take the server
// down when verified.
const (
	maxArgonMemory  = 1 << 20 // 1 GiB
	maxArgonTime    = 16
	argonSaltLen    = 16
	argonKeyLen     = 32
	maxArgonKeyLen  = 64
	maxArgonSaltLen = 64
)

// HashPassword returns the argon2id PHC string of pw:
// $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<hash> (unpadded
// standard base64), with a random salt from r.
func HashPassword(pw string, p Argon2Params, r io.Reader) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := io.ReadFull(r, salt); err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	sum := argon2.IDKey([]byte(pw), salt, p.Time, p.Memory, p.Threads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(sum)), nil
}

// parsePHC reads an argon2id PHC string written by HashPassword.
func parsePHC(phc string) (p Argon2Params, salt, sum []byte, err error) {
	parts := strings.Split(phc, "$")
	bad := errors.New("not an argon2id hash")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return p, nil, nil, bad
	}
	var m, t, threads uint64
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, perr := strconv.ParseUint(v, 10, 32)
		if perr != nil {
			return p, nil, nil, bad
		}
		switch k {
		case "m":
			m = n
		case "t":
			t = n
		case "p":
			threads = n
		default:
			return p, nil, nil, bad
		}
	}
	if m < 8 || m > maxArgonMemory || t < 1 || t > maxArgonTime || threads < 1 || threads > 255 || m < 8*threads {
		return p, nil, nil, bad
	}
	b64 := base64.RawStdEncoding
	if salt, err = b64.DecodeString(parts[4]); err != nil || len(salt) < 8 || len(salt) > maxArgonSaltLen {
		return p, nil, nil, bad
	}
	if sum, err = b64.DecodeString(parts[5]); err != nil || len(sum) < 16 || len(sum) > maxArgonKeyLen {
		return p, nil, nil, bad
	}
	return Argon2Params{Memory: uint32(m), Time: uint32(t), Threads: uint8(threads)}, salt, sum, nil
}

// VerifyPassword reports whether pw matches the PHC string, comparing in
// constant time.
func VerifyPassword(phc, pw string) (bool, error) {
	p, salt, sum, err := parsePHC(phc)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(pw), salt, p.Time, p.Memory, p.Threads, uint32(len(sum)))
	return subtle.ConstantTimeCompare(got, sum) == 1, nil
}

// UsersConfig tunes the user service. Zero values take the defaults.
type UsersConfig struct {
	SessionTTL    time.Duration // a session unused this long ends (idle)
	SessionMaxAge time.Duration // a session ends this long after login, used or not
	MaxHashing    int           // argon2 computations at once on this node
	HashWait      time.Duration // how long a login waits for one of them before 503
	Argon2        Argon2Params  // cost of new hashes (existing ones keep theirs)
	Now           func() time.Time
}

func (c *UsersConfig) validate(s *Store) {
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
}

// Users is the user service.
type Users struct {
	s        *Store
	cfg      UsersConfig
	sessions jetstream.KeyValue
	usage    jetstream.KeyValue
	slots    chan struct{} // argon2 computations under way

	dummyOnce sync.Once
	dummy     string // verified for unknown emails, so timing tells nothing
	dummyErr  error

	mu        sync.Mutex
	usedAt    map[string]time.Time // key id -> when this node last recorded its use
	usedSwept time.Time
}

// OpenUsers opens the user service and its buckets; kino serve (Manage)
// creates them, or updates the sessions bucket's TTL to cfg.SessionTTL.
func (s *Store) OpenUsers(ctx context.Context, cfg UsersConfig) (*Users, error) {
	cfg.validate(s)
	u := &Users{s: s, cfg: cfg, slots: make(chan struct{}, cfg.MaxHashing), usedAt: map[string]time.Time{}}
	err := s.untilReady(ctx, func() (err error) {
		sessions := sessionsBucketConfig(s.cfg.Replicas, cfg.SessionTTL)
		if s.cfg.Manage {
			if u.sessions, err = s.openBucket(ctx, sessions, natsconn.CreateOrUpdate); err != nil {
				return err
			}
		} else if u.sessions, err = s.bucket(ctx, false, sessions); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			return err
		}
		u.usage, err = s.bucket(ctx, s.cfg.Manage, keyUsageBucketConfig(s.cfg.Replicas))
		if !s.cfg.Manage && errors.Is(err, jetstream.ErrBucketNotFound) {
			err = nil // a CLI before any kino serve made them: users only
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open users: %w", err)
	}
	if s.cfg.Manage { // made now, so the first unknown email is not slower than the next
		if _, err := u.dummyHash(); err != nil {
			return nil, err
		}
	}
	return u, nil
}

func sessionsBucketConfig(replicas int, ttl time.Duration) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      SessionsBucket,
		Description: "kino: dashboard and admin sessions, by the SHA-256 of their id",
		TTL:         ttl,
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}
}

func keyUsageBucketConfig(replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      KeyUsageBucket,
		Description: "kino: when each API key was last used (to the minute)",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}
}

// errSessions: the sessions bucket did not answer (NATS unreachable, a
// cluster without quorum): 503, as the event store's outages are.
func errSessions(op string, err error) error {
	return domain.Wrap(op, domain.Unavailable, err, "Sessions are unavailable right now; retry in a moment")
}

// errNoBuckets: a client that does not manage kino's streams found the
// sessions or usage bucket missing.
var errNoBuckets = errors.New("the sessions buckets do not exist yet: start kino serve first")

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

// NewToken draws a random token (256 bits, base64url), for set-password
// links and session ids.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// wellFormedToken: 43 base64url characters (what NewToken draws).
func wellFormedToken(t string) bool {
	if len(t) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(t)
	return err == nil
}

// HashToken is the stored form of a token: lowercase hex SHA-256.
func HashToken(t string) string {
	sum := sha256.Sum256([]byte(t))
	return hex.EncodeToString(sum[:])
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
func (u *Users) CreateUser(ctx context.Context, nu NewUser) (Result[domain.User], string, error) {
	const op = "create user"
	if !nu.Operator {
		if !domain.ValidSlug(nu.Account) {
			return Result[domain.User]{}, "", domain.E(op, domain.NotFound, "account %q not found", nu.Account)
		}
		events, _, err := u.s.Load(ctx, domain.AccountStream(nu.Account))
		if err != nil {
			return Result[domain.User]{}, "", err
		}
		if a := domain.Fold[domain.Account](events); !a.Created {
			return Result[domain.User]{}, "", domain.E(op, domain.NotFound, "account %q not found", nu.Account)
		}
	}
	token, err := NewToken()
	if err != nil {
		return Result[domain.User]{}, "", err
	}
	ttl := nu.LinkTTL
	if ttl <= 0 {
		ttl = DefaultLinkTTL
	}
	email := domain.NormalizeEmail(nu.Email)
	if err := domain.CheckEmail(op, email); err != nil {
		return Result[domain.User]{}, "", err
	}
	res, err := Execute[domain.User](ctx, u.s, domain.UserStream(email), domain.CreateUser{
		UserID: u.s.NewID(), Email: email, Account: nu.Account, Operator: nu.Operator,
		LinkHash: HashToken(token), LinkExpiresAt: u.cfg.Now().Add(ttl).UTC().Truncate(time.Millisecond),
	})
	if err != nil {
		return Result[domain.User]{}, "", err
	}
	return res, token, nil
}

// IssuePasswordLink gives the user with this email a new one-time
// set-password link (the old one stops working) and returns its token.
func (u *Users) IssuePasswordLink(ctx context.Context, email string, ttl time.Duration) (Result[domain.User], string, error) {
	token, err := NewToken()
	if err != nil {
		return Result[domain.User]{}, "", err
	}
	if ttl <= 0 {
		ttl = DefaultLinkTTL
	}
	res, err := Execute[domain.User](ctx, u.s, domain.UserStream(email), domain.IssuePasswordLink{
		LinkHash: HashToken(token), LinkExpiresAt: u.cfg.Now().Add(ttl).UTC().Truncate(time.Millisecond),
	})
	if err != nil {
		return Result[domain.User]{}, "", err
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
func (u *Users) SetPassword(ctx context.Context, email, token, pw string) (Result[domain.User], error) {
	const op = "set password"
	if err := domain.CheckPassword(op, pw); err != nil {
		return Result[domain.User]{}, err
	}
	if !wellFormedToken(token) {
		return Result[domain.User]{}, domain.ErrBadLink(op)
	}
	// Checked before hashing, so a wrong token costs no argon2 run; Decide
	// checks again against the state it appends to.
	cur, _, err := u.User(ctx, email)
	if err != nil {
		return Result[domain.User]{}, err
	}
	hash := HashToken(token)
	if _, err := cur.Decide(domain.SetPassword{LinkHash: hash, Hash: "$argon2id$check"}, u.cfg.Now()); err != nil {
		return Result[domain.User]{}, err
	}
	release, err := u.hashSlot(ctx, op)
	if err != nil {
		return Result[domain.User]{}, err
	}
	phc, err := HashPassword(pw, u.cfg.Argon2, rand.Reader)
	release()
	if err != nil {
		return Result[domain.User]{}, err
	}
	res, err := Execute[domain.User](ctx, u.s, domain.UserStream(email), domain.SetPassword{LinkHash: hash, Hash: phc})
	if err != nil {
		return Result[domain.User]{}, err
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

// Session is what the sessions bucket holds for one session.
type Session struct {
	UserID   string `json:"u"`
	UserKey  string `json:"k"` // the user's stream
	Email    string `json:"e"`
	Account  string `json:"a,omitempty"`
	Operator bool   `json:"o,omitempty"`
	Gen      int    `json:"g"` // the user's password generation at login
	Created  int64  `json:"c"` // Unix ms
	Seen     int64  `json:"s"` // Unix ms, refreshed coarsely
}

// NewSession starts a session for user and returns its id, to be set in
// the cookie; the bucket holds only the id's SHA-256.
func (u *Users) NewSession(ctx context.Context, user domain.User) (string, Session, error) {
	if u.sessions == nil {
		return "", Session{}, errNoBuckets
	}
	id, err := NewToken()
	if err != nil {
		return "", Session{}, err
	}
	now := u.cfg.Now().UnixMilli()
	sess := Session{UserID: user.ID, UserKey: user.Key, Email: user.Email, Account: user.Account, Operator: user.Operator,
		Gen: user.PasswordGen, Created: now, Seen: now}
	body, _ := json.Marshal(sess)
	if _, err := u.sessions.Create(ctx, HashToken(id), body); err != nil {
		return "", Session{}, errSessions("new session", err)
	}
	return id, sess, nil
}

// Session finds the live session with this id. A session unused for
// SessionTTL (by the service's clock; the bucket's TTL removes it in any
// case) or older than SessionMaxAge is over. Use moves its idle deadline,
// written at most every tenth of SessionTTL.
func (u *Users) Session(ctx context.Context, id string) (Session, bool, error) {
	if !wellFormedToken(id) {
		return Session{}, false, nil
	}
	if u.sessions == nil {
		return Session{}, false, errNoBuckets
	}
	k := HashToken(id)
	e, err := u.sessions.Get(ctx, k)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, errSessions("session", err)
	}
	var sess Session
	if err := json.Unmarshal(e.Value(), &sess); err != nil {
		return Session{}, false, fmt.Errorf("session: %w", err)
	}
	now := u.cfg.Now()
	seen, created := time.UnixMilli(sess.Seen), time.UnixMilli(sess.Created)
	if now.Sub(seen) >= u.cfg.SessionTTL || now.Sub(created) >= u.cfg.SessionMaxAge {
		_ = u.sessions.Delete(ctx, k)
		return Session{}, false, nil
	}
	if now.Sub(seen) >= u.cfg.SessionTTL/10 {
		sess.Seen = now.UnixMilli()
		body, _ := json.Marshal(sess)
		// Against the revision read: a logout in between stays a logout.
		_, _ = u.sessions.Update(ctx, k, body, e.Revision())
	}
	return sess, true, nil
}

// EndSession deletes a session (logout). Ending an unknown one is no error.
func (u *Users) EndSession(ctx context.Context, id string) error {
	if !wellFormedToken(id) {
		return nil
	}
	if u.sessions == nil {
		return errNoBuckets
	}
	if err := u.sessions.Purge(ctx, HashToken(id)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return errSessions("end session", err)
	}
	return nil
}

// KeyUsed records that API key keyID was used at now: at most once per
// KeyUsageEvery per key on this node, in the background, so the request
// never waits for it.
func (u *Users) KeyUsed(keyID string, now time.Time) {
	if u.usage == nil {
		return
	}
	u.mu.Lock()
	if last, ok := u.usedAt[keyID]; ok && now.Sub(last) < KeyUsageEvery {
		u.mu.Unlock()
		return
	}
	u.usedAt[keyID] = now
	if now.Sub(u.usedSwept) > 10*KeyUsageEvery { // forget keys not used lately
		for id, t := range u.usedAt {
			if now.Sub(t) >= KeyUsageEvery {
				delete(u.usedAt, id)
			}
		}
		u.usedAt[keyID], u.usedSwept = now, now
	}
	u.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := u.usage.Put(ctx, keyID, []byte(strconv.FormatInt(now.UnixMilli(), 10))); err != nil {
			u.s.cfg.Log.Debug("record key use", "key_id", keyID, "err", err)
		}
	}()
}

// KeyLastUsed is when each of these keys was last used, as far as the
// usage bucket knows (to about KeyUsageEvery); keys never used are absent.
func (u *Users) KeyLastUsed(ctx context.Context, keyIDs []string) (map[string]time.Time, error) {
	out := make(map[string]time.Time, len(keyIDs))
	if u.usage == nil {
		return out, nil
	}
	for _, id := range keyIDs {
		e, err := u.usage.Get(ctx, id)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("key last used: %w", err)
		}
		if ms, err := strconv.ParseInt(string(e.Value()), 10, 64); err == nil {
			out[id] = time.UnixMilli(ms).UTC()
		}
	}
	return out, nil
}
