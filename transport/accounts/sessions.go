package accounts

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kino-video/kino/domain"
)

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
	id, err := NewToken()
	if err != nil {
		return "", Session{}, err
	}
	now := u.cfg.Now().UnixMilli()
	sess := Session{UserID: user.ID, UserKey: user.Key, Email: user.Email, Account: user.Account, Operator: user.Operator,
		Gen: user.PasswordGen, Created: now, Seen: now}
	body, _ := json.Marshal(sess)
	if err := u.sessions.Create(ctx, HashToken(id), body); err != nil {
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
	k := HashToken(id)
	value, revision, found, err := u.sessions.Get(ctx, k)
	if err != nil {
		return Session{}, false, errSessions("session", err)
	}
	if !found {
		return Session{}, false, nil
	}
	var sess Session
	if err := json.Unmarshal(value, &sess); err != nil {
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
		_ = u.sessions.Update(ctx, k, body, revision)
	}
	return sess, true, nil
}

// EndSession deletes a session (logout). Ending an unknown one is no error.
func (u *Users) EndSession(ctx context.Context, id string) error {
	if !wellFormedToken(id) {
		return nil
	}
	if err := u.sessions.End(ctx, HashToken(id)); err != nil {
		return errSessions("end session", err)
	}
	return nil
}

// KeyUsed records that API key keyID was used at now: at most once per
// KeyUsageEvery per key on this node, in the background, so the request
// never waits for it.
func (u *Users) KeyUsed(keyID string, now time.Time) {
	if !u.sessions.RecordsKeyUse() {
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
		if err := u.sessions.PutKeyUse(ctx, keyID, now); err != nil {
			u.log.Debug("record key use", "key_id", keyID, "err", err)
		}
	}()
}

// KeyLastUsed is when each of these keys was last used, as far as the
// usage bucket knows (to about KeyUsageEvery); keys never used are absent.
func (u *Users) KeyLastUsed(ctx context.Context, keyIDs []string) (map[string]time.Time, error) {
	out := make(map[string]time.Time, len(keyIDs))
	for _, id := range keyIDs {
		t, found, err := u.sessions.KeyUse(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("key last used: %w", err)
		}
		if found {
			out[id] = t
		}
	}
	return out, nil
}
