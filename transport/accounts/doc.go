// Package accounts is the user and account service: people who log in to
// the dashboard (the users of an account) and to the admin interface
// (operators), their passwords (argon2id, password.go), their set-password
// links and sessions, and the account steps beyond one command (an API
// key, the --dev bootstrap). It decides; the event store keeps the users'
// and accounts' events (eventstore.Execute) and eventstore/kv the sessions
// and the keys' last use, so that any API node serves any session.
//
// # Users
//
// A user is the user aggregate: one stream per normalised email, its id a
// hash of the address (domain.UserStream), so the stream's optimistic
// concurrency keeps emails unique with no lock or index. kino serve and
// the CLI make the service with NewUsers on the event store and the
// sessions buckets (kv.OpenSessions): it calls them, it is neither.
//
//   - CreateUser checks that an account user's account exists, draws a
//     256-bit token (NewToken) and records UserCreated with the token's
//     SHA-256 (HashToken); the token goes back to the caller once.
//     IssuePasswordLink replaces the link. A link lasts DefaultLinkTTL
//     (24 h) unless the caller says otherwise.
//   - SetPassword checks the password's length, checks the link against
//     the user's folded stream before hashing (a wrong token costs no
//     argon2 run), hashes in a slot and appends PasswordSet; Decide checks
//     the link again against the state it appends to.
//   - Authenticate loads the user's stream, never the read models, so a
//     new password counts at once on every node. An unknown email, a user
//     without a password and a wrong password each take one argon2
//     verification (against a dummy hash when there is no real one) and
//     give the same error.
//
// # Passwords
//
// Hashes are argon2id stored as PHC strings, DefaultArgon2 by default
// (46 MiB, one pass, one lane: OWASP's first recommendation); existing
// hashes keep their own parameters, and a stored hash claiming absurd
// costs is refused rather than verified. Each node runs at most
// UsersConfig.MaxHashing (default 4) hashes at once; a login or password
// change waits at most HashWait (default 2 s) for a slot, then gets a
// domain Unavailable (503).
//
// # Sessions
//
// A session lives in the KINO_SESSIONS bucket under the SHA-256 of its
// id (the id itself is only in the cookie), as a Session: user id and
// stream, email, account, operator, the password generation at login,
// created and last seen. The bucket's TTL is UsersConfig.SessionTTL
// (kino's --session-ttl, default 24 h), set again at each start of kino
// serve. Session refuses, and deletes, a session idle for SessionTTL or
// older than SessionMaxAge (--session-max-age, default 30 days, never
// less than the TTL), and rewrites its last-seen time at most every tenth
// of the TTL, against the revision it read, so a logout in between stays
// a logout. A sessions bucket that does not answer is a domain
// Unavailable (503), never a logout. Whether the session's user still
// exists with the same password generation is the caller's check
// (transport/httpapi), so sessions of a removed user, or of one whose
// password changed, end at their next use.
//
// KeyUsed records an API key's use in KINO_KEY_USAGE in the background,
// at most once per KeyUsageEvery (a minute) per key on each node, so a
// request never waits for it; KeyLastUsed reads it back.
package accounts
