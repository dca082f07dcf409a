package playback

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/url"
	"strings"

	"github.com/kino-video/kino/transport/hls"
)

// MaxRewrite bounds a playlist (or storyboard) rewritten for a token (a
// ten-hour video's media playlist is well under 2 MiB), and maxLine one of
// its lines. The rewrite streams: a request costs one line of memory,
// whatever the file and the token.
const (
	MaxRewrite = 8 << 20
	maxLine    = 64 << 10
)

// withToken adds token to a relative URI's query (before any fragment).
// Absolute URIs (another host, or a scheme) are left alone: a token is
// never sent anywhere but back to this /cdn. kino's playlists list only
// relative URIs.
func withToken(uri, token string) string {
	if uri == "" || strings.HasPrefix(uri, "//") || strings.Contains(uri, ":") {
		return uri
	}
	frag := ""
	if i := strings.IndexByte(uri, '#'); i >= 0 {
		uri, frag = uri[:i], uri[i:]
	}
	sep := "?"
	if strings.Contains(uri, "?") {
		sep = "&"
	}
	return uri + sep + "token=" + url.QueryEscape(token) + frag
}

// playlistLine rewrites one line of a playlist (n is its index).
func playlistLine(_ int, s, token string) string {
	return hls.RewriteURIs(s, func(uri string) string { return withToken(uri, token) })
}

// Rewrite copies a playlist (or, if storyboard, a storyboard's WebVTT
// track) from r to w with token added to every relative URI it lists. It
// streams line by line, so a long file costs a line of memory, not the
// rewritten file.
func Rewrite(w io.Writer, r io.Reader, token string, storyboard bool) error {
	rewrite := playlistLine
	if storyboard {
		rewrite = vttLine
	}
	return rewriteLines(w, r, token, rewrite)
}

// rewriteLines copies r to w line by line, each through rewrite, keeping
// each line's ending (\n or \r\n; the last line's, or none). It reads at
// most MaxRewrite bytes and lines of at most maxLine.
func rewriteLines(w io.Writer, r io.Reader, token string, rewrite func(n int, line, token string) string) error {
	br := bufio.NewReaderSize(io.LimitReader(r, MaxRewrite+1), 32<<10)
	bw := bufio.NewWriterSize(w, 32<<10)
	read := 0
	for n := 0; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return errors.New("a line is too long to rewrite")
		}
		if read += len(line); read > MaxRewrite {
			return errors.New("the file is too large to rewrite")
		}
		if len(line) > 0 {
			body, eol := line, []byte(nil)
			if bytes.HasSuffix(body, []byte("\n")) {
				body, eol = body[:len(body)-1], []byte("\n")
				if bytes.HasSuffix(body, []byte("\r")) {
					body, eol = body[:len(body)-1], []byte("\r\n")
				}
			}
			if _, werr := bw.WriteString(rewrite(n, string(body), token)); werr != nil {
				return werr
			}
			if _, werr := bw.Write(eol); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return bw.Flush()
		}
		if err != nil {
			return err
		}
	}
}

// vttLine rewrites one line of a storyboard track (n is its index; the
// first is the WEBVTT header).
func vttLine(n int, l, token string) string {
	if n == 0 || l == "" || strings.Contains(l, "-->") || strings.HasPrefix(l, "NOTE") ||
		strings.ContainsAny(l, " \t") || !(strings.Contains(l, ".jpg") || strings.Contains(l, ".png") || strings.Contains(l, ".webp")) {
		return l
	}
	return withToken(l, token)
}
