// Package player serves kino's public pages of a video: /play/{id}, a
// minimal HLS player page (native HLS where the browser has it, hls.js
// elsewhere), and /assets/, the files those pages load, embedded in the
// binary.
//
// The pages hold no inline script or style; their Content-Security-Policy
// allows scripts and styles from kino only, media from kino and the media
// origin, and framing by kino and the operator's frame ancestors. What a
// page shows comes from its Host (the API server), which decides whether
// the visitor may see the video (a signed video needs a valid token) and
// renders it as the API's Video object; a page never shows more than the
// video's own media files do. A new public page of a video (an embed, an
// oEmbed answer) goes here.
package player
