// Package playback owns signed playback (docs/security.md, "Playback
// tokens"): minting and verifying the tokens a signed video's media need,
// and rewriting a signed video's playlists and storyboard so every URI
// they list carries the token. It knows no HTTP; httpapi's /cdn, /play
// and POST /v1/videos/{id}/playback-tokens call it.
//
// A video whose policy is "signed" serves its media under /cdn only to a
// request with a valid ?token=: a JWT bound to the video (sub), expiring
// (exp), and optionally to the origin of the page that plays it. Two kinds
// are accepted, each with one algorithm, chosen by the header's kid alone:
//   - kid "kino": minted by kino (Tokens.Mint), HS256 with a key derived
//     from kino's secret key (the same on every node);
//   - kid <signing key id>: signed by the account's own backend with the
//     private half of one of its signing keys, EdDSA (Ed25519); kino holds
//     the public half only.
package playback
