// Package playback owns signed playback (docs/security.md, "Playback
// tokens"): minting and verifying the tokens a signed video's media need,
// and rewriting a signed video's playlists and storyboard so every URI
// they list carries the token. It knows no HTTP; httpapi's /cdn (package
// cdn), /play and POST /v1/videos/{id}/playback-tokens call it.
//
// # Tokens
//
// A video whose policy is "signed" serves its media under /cdn only to a
// request with a valid ?token=: a JWT bound to the video (sub), expiring
// (exp; both required), and optionally to the origin of the page that
// plays it (the origin claim, written by ParseOrigin; Verify leaves its
// comparison to the caller, which alone sees the request). Two kinds are
// accepted, each with one algorithm, chosen by the header's kid alone:
//   - kid "kino-<key id>": minted by kino (Tokens.Mint; the API's ttl from
//     MinTTL, 60 s, to MaxTTL, 7 days, default DefaultTTL, 1 h), HS256
//     with that key of kino's KeyRing. Without a ring kino mints and
//     accepts none.
//   - kid <signing key id>: signed by the account's own backend with the
//     private half of one of its signing keys, EdDSA (Ed25519); kino holds
//     the public half only (the signing_keys read model, SigningKeys).
//
// A token longer than MaxTokenLen (1 KiB: it multiplies the bytes of every
// playlist served) or with other characters than a compact JWT's is
// refused before it is parsed; clocks may disagree by 10 s (exp, nbf).
// Every refusal is Denied (403), saying what is wrong with the token.
//
// # The key ring
//
// Ring (ring.go) keeps kino's HS256 keys in a RingStore (the KV bucket
// KINO_PLAYBACK_KEYS, kv.PlaybackKeys), one value replaced by
// compare-and-set: the current key first, then keys retiring until a
// time; each sealed with kino's secret key. Workers hold the secret key
// but cannot read the bucket, so they cannot mint tokens. Every node
// reads the ring again at most once a second (ringTTL). The first read of
// an empty ring makes its first key (two nodes racing: one wins, the
// other reads its key). Rotate makes a new key current; the old keys'
// tokens are refused at once, or accepted for a grace (at most MaxTTL),
// after which they are dropped.
//
// # Rewriting
//
// Rewrite copies a playlist (through hls.RewriteURIs) or a storyboard's
// WebVTT track (its cue payloads naming an image) with the token added to
// the query of every relative URI. Absolute URIs are left alone: a token
// is never sent anywhere but back to this /cdn. It streams line by line,
// so a request costs one line of memory (lines up to 64 KiB, files up to
// MaxRewrite, 8 MiB), not the rewritten file.
package playback
