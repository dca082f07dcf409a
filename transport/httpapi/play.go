package httpapi

import (
	"html/template"
	"net/http"
)

// playPage is a minimal player: native HLS where the browser has it
// (Safari, iOS), hls.js elsewhere.
var playPage = template.Must(template.New("play").Parse(`<!doctype html>
<html lang="en">
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Filename}} · kino</title>
<style>body{margin:0;background:#111;color:#eee;font:15px system-ui,sans-serif}main{max-width:960px;margin:2rem auto;padding:0 1rem}video{width:100%;background:#000}</style>
<main>
<h1>{{.Filename}}</h1>
{{if .Playlist}}<video id="player" controls playsinline poster="{{.Thumbnail}}"></video>
<p>{{range .Resolutions}}{{.}} {{end}}· <a href="{{.Playlist}}" style="color:#9cf">playlist</a></p>
<script src="https://cdn.jsdelivr.net/npm/hls.js@1"></script>
<script>
const src = {{.Playlist}}, video = document.getElementById("player");
if (video.canPlayType("application/vnd.apple.mpegurl")) { video.src = src; }
else if (window.Hls && Hls.isSupported()) { const hls = new Hls(); hls.loadSource(src); hls.attachMedia(video); }
</script>{{else}}<p>This video is {{.Status}}.</p>{{end}}
</main>
</html>
`))

// play serves a page that plays a video: a convenience for people trying
// kino (the URL `just demo` prints). It shows only what the video's public
// {cdn_url} files show, to whoever knows its unguessable id.
func (s *Server) play(w http.ResponseWriter, r *http.Request) error {
	v, err := s.videoVar(r)
	if err != nil {
		return err
	}
	res := s.renderVideo(v)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return playPage.Execute(w, struct {
		Filename, Status    string
		Playlist, Thumbnail string
		Resolutions         []string
	}{res.Filename, string(res.Status), deref(res.PlaylistURL), deref(res.ThumbnailURL), res.Resolutions})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
