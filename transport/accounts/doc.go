// Package accounts is the user and account service: people who log in to
// the dashboard (the users of an account) and to the admin interface
// (operators), their passwords (argon2id, password.go), their set-password
// links and sessions, and the account steps beyond one command (an API
// key, the --dev bootstrap). It decides; the event store keeps the users'
// and accounts' events (eventstore.Execute) and eventstore/kv the sessions
// and the keys' last use, so that any API node serves any session.
package accounts
