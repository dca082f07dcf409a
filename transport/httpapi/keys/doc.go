// Package keys serves the keys of the caller's account.
//
// API keys (/v1/keys) are managed from the dashboard: these routes take an
// account user's session, never an API key (a leaked key must not be able
// to mint more, nor revoke the others). The operator manages any
// account's keys under /v1/admin/accounts/{slug}/keys (package admin).
//
// Signing keys (/v1/signing-keys, with an API key or a session) are
// Ed25519 pairs: kino keeps the public half and shows the private half
// once, for the account's backend to sign playback tokens with
// (docs/security.md, "Playback tokens").
package keys
