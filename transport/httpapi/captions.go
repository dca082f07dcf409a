package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gorilla/mux"
	"golang.org/x/text/language"
	"golang.org/x/text/language/display"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/projections"
	"github.com/kino-video/kino/transport/captions"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/wire"
)

// Text tracks (captions, subtitles) of a video: uploaded as WebVTT or SRT
// (POST /v1/videos/{id}/captions), listed, read and deleted. A track's
// cues are normalized WebVTT kept in its event; /cdn publishes each READY
// track as a subtitles rendition of the video's HLS stream.

// captionSlack allows for multipart framing and the small fields around
// the caption file.
const captionSlack = 64 << 10

// cueSlack is how far past the end of a video a cue may end: subtitle
// files often keep a last cue a little longer than the picture.
const cueSlack = time.Minute

// addCaptions is POST /v1/videos/{id}/captions: multipart/form-data with
// file (WebVTT or SRT), language (BCP 47), and optional label and default
// ("true" or "false").
func (s *Server) addCaptions(w http.ResponseWriter, r *http.Request) error {
	v, err := s.ownVideo(r)
	if err != nil {
		return err
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return errBadRequest("request must be multipart/form-data with fields file (WebVTT or SRT) and language")
	}
	if r.ContentLength > captions.MaxInput+captionSlack {
		w.Header().Set("Connection", "close")
		return captionTooLarge(r.ContentLength)
	}
	body := http.MaxBytesReader(w, r.Body, captions.MaxInput+captionSlack)
	mr := multipart.NewReader(body, params["boundary"])
	var (
		file                   []byte
		haveFile               bool
		lang, label, isDefault string
		seen                   = map[string]bool{}
	)
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return captionBodyError(err)
		}
		name := part.FormName()
		if seen[name] {
			return errBadRequest("field %q is given twice", truncateString(name, 40))
		}
		seen[name] = true
		switch name {
		case "file":
			file, err = io.ReadAll(io.LimitReader(part, captions.MaxInput+1))
			if err != nil {
				return captionBodyError(err)
			}
			if len(file) > captions.MaxInput {
				return captionTooLarge(-1)
			}
			haveFile = true
		case "language", "label", "default":
			b, err := io.ReadAll(io.LimitReader(part, 1025))
			if err != nil {
				return captionBodyError(err)
			}
			if len(b) > 1024 {
				return errBadRequest("field %q is too large", name)
			}
			switch name {
			case "language":
				lang = string(b)
			case "label":
				label = string(b)
			default:
				isDefault = strings.TrimSpace(string(b))
			}
		default:
			return errBadRequest("unknown field %q: send file, language, label and default", truncateString(name, 40))
		}
	}
	if !haveFile {
		return errBadRequest("file is required: send the WebVTT or SRT file in the multipart field \"file\"")
	}
	tag, err := parseLanguage(lang)
	if err != nil {
		return err
	}
	if label == "" {
		label = languageName(tag)
	}
	def, err := parseBool("default", isDefault)
	if err != nil {
		return err
	}
	track, _, err := captions.Parse(file)
	if err != nil {
		return err
	}
	if err := checkCueTimes(v, track.End(), callerOf(r).Limits.MaxDuration); err != nil {
		return err
	}
	cmd := domain.AddCaptionTrack{Account: v.Account, Track: s.cfg.Store.NewID(), Language: tag.String(), Label: label,
		Default: def, VTT: string(track.WebVTT()), Cues: len(track.Cues)}
	return s.recordCaption(w, r, v.ID, cmd, http.StatusCreated)
}

// generateCaptions is POST /v1/videos/{id}/captions/generate
// {"language", "label", "default"}: a PENDING track that a worker's speech
// recognition fills (202); video.captions.ready or video.captions.failed
// tells when it ends.
func (s *Server) generateCaptions(w http.ResponseWriter, r *http.Request) error {
	v, err := s.ownVideo(r)
	if err != nil {
		return err
	}
	var body struct {
		Language string `json:"language"`
		Label    string `json:"label"`
		Default  bool   `json:"default"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	tag, err := parseLanguage(body.Language)
	if err != nil {
		return err
	}
	offered := s.cfg.Captions.Languages
	if len(offered) == 0 {
		return errBadRequest("this kino does not generate captions (its workers have no speech recognition engine); upload a WebVTT or SRT file instead")
	}
	base, _ := tag.Base()
	if !slices.Contains(offered, tag.String()) && !slices.Contains(offered, base.String()) {
		return errBadRequest("captions can be generated in %s only (got %s)", strings.Join(offered, ", "), tag)
	}
	if body.Label == "" {
		body.Label = languageName(tag) + " (auto-generated)"
	}
	cmd := domain.AddCaptionTrack{Account: v.Account, Track: s.cfg.Store.NewID(), Language: tag.String(), Label: body.Label,
		Default: body.Default, Generate: true}
	return s.recordCaption(w, r, v.ID, cmd, http.StatusAccepted)
}

// recordCaption executes cmd on video id and answers the track it made
// with status.
func (s *Server) recordCaption(w http.ResponseWriter, r *http.Request, id string, cmd domain.AddCaptionTrack, status int) error {
	res, err := execute[domain.Video](r, s.cfg.Store, videoStream(id), cmd)
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
	v, ok, err := s.cfg.DB.Video(id)
	if err != nil {
		return err
	}
	c, found := v.Caption(cmd.Track)
	if !ok || !found {
		return errNotFound("video")
	}
	logger(r, s.cfg.Log).Info("captions added", "video_id", id, "track", cmd.Track, "language", cmd.Language, "generated", cmd.Generate)
	respond.JSON(w, status, s.renderCaption(r, v, c))
	return nil
}

// checkCueTimes refuses cues past the end of a video whose duration is
// known, and, while it is not (the video is processed), past the longest
// video the plan allows (maxDuration; the parser refuses any past
// captions.MaxTime).
func checkCueTimes(v projections.Video, end, maxDuration time.Duration) error {
	if v.Duration == nil {
		if maxDuration > 0 && end > maxDuration+cueSlack {
			return errBadRequest("a cue ends at %s, after the longest video your plan allows (%s)", clock(end), clock(maxDuration))
		}
		return nil
	}
	d := time.Duration(*v.Duration * float64(time.Second))
	if end > d+cueSlack {
		return errBadRequest("a cue ends at %s, after the end of the video (%s)", clock(end), clock(d))
	}
	return nil
}

func clock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}

func captionTooLarge(n int64) error {
	if n > 0 {
		return domain.E("add captions", domain.TooLarge, "the request is %d bytes; a caption file may be at most %d bytes", n, captions.MaxInput)
	}
	return domain.E("add captions", domain.TooLarge, "a caption file may be at most %d bytes", captions.MaxInput)
}

func captionBodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return captionTooLarge(-1)
	}
	return errBadRequest("malformed multipart body: %v", err)
}

// parseLanguage reads a BCP 47 tag, refusing one the registry does not
// know, and "und" (a track says which language it is in).
func parseLanguage(s string) (language.Tag, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return language.Tag{}, errBadRequest("language is required: a BCP 47 tag such as en, fr or pt-BR")
	}
	tag, err := language.Parse(s)
	if err != nil || len(s) > 35 || tag == language.Und || !domain.ValidLanguageTag(tag.String()) {
		return language.Tag{}, errBadRequest("language must be a BCP 47 tag such as en, fr or pt-BR (got %q)", truncateString(s, 40))
	}
	return tag, nil
}

// languageName is a track's default label: its language's name in that
// language ("English", "Français", "American English"), with the region
// when the name does not tell it ("Português (Brasil)"); the tag itself
// for a language without a known name.
func languageName(tag language.Tag) string {
	name := display.Self.Name(tag)
	if name == "" {
		return tag.String()
	}
	base, _ := tag.Base()
	if region, conf := tag.Region(); conf == language.Exact && name == display.Self.Name(language.Make(base.String())) {
		if n := display.Regions(tag); n != nil && n.Name(region) != "" {
			name += " (" + n.Name(region) + ")"
		}
	}
	r, n := utf8.DecodeRuneInString(name)
	return string(unicode.ToUpper(r)) + name[n:]
}

func parseBool(name, s string) (bool, error) {
	switch s {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, errBadRequest(`%s must be "true" or "false" (got %q)`, name, truncateString(s, 40))
}

// ownVideo is the caller's video named by the route's {id}.
func (s *Server) ownVideo(r *http.Request) (projections.Video, error) {
	v, err := s.videoVar(r)
	if err != nil {
		return v, err
	}
	if v.Account != callerOf(r).Account {
		return projections.Video{}, errNotFound("video")
	}
	return v, nil
}

// ownCaption is the caller's track named by the route's {id} and {track}.
func (s *Server) ownCaption(r *http.Request) (projections.Video, projections.Caption, error) {
	v, err := s.ownVideo(r)
	if err != nil {
		return v, projections.Caption{}, err
	}
	c, ok := v.Caption(mux.Vars(r)["track"])
	if !ok {
		return v, c, errNotFound("track")
	}
	return v, c, nil
}

func (s *Server) renderCaption(r *http.Request, v projections.Video, c projections.Caption) wire.CaptionTrack {
	return wire.NewCaptionTrack(captionRecords([]projections.Caption{c})[0], s.cdnURL(r), v.ID)
}

// listCaptions is GET /v1/videos/{id}/captions.
func (s *Server) listCaptions(w http.ResponseWriter, r *http.Request) error {
	v, err := s.ownVideo(r)
	if err != nil {
		return err
	}
	out := wire.CaptionTracks{Data: make([]wire.CaptionTrack, len(v.Captions))}
	for i, c := range v.Captions {
		out.Data[i] = s.renderCaption(r, v, c)
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

// getCaption is GET /v1/videos/{id}/captions/{track}: the track as JSON,
// or its WebVTT when the request asks for text/vtt.
func (s *Server) getCaption(w http.ResponseWriter, r *http.Request) error {
	v, c, err := s.ownCaption(r)
	if err != nil {
		return err
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/vtt") {
		respond.JSON(w, http.StatusOK, s.renderCaption(r, v, c))
		return nil
	}
	vtt, ok, err := s.cfg.DB.CaptionVTT(v.ID, c.ID)
	if err != nil {
		return err
	}
	if !ok {
		return domain.E("get captions", domain.Conflict, "the track is %s: it has no cues yet", c.Status)
	}
	w.Header().Set("Content-Type", "text/vtt; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	http.ServeContent(w, r, c.ID+".vtt", time.Time{}, bytes.NewReader(vtt))
	return nil
}

// deleteCaption is DELETE /v1/videos/{id}/captions/{track}.
func (s *Server) deleteCaption(w http.ResponseWriter, r *http.Request) error {
	v, c, err := s.ownCaption(r)
	if err != nil {
		return err
	}
	res, err := execute[domain.Video](r, s.cfg.Store, videoStream(v.ID), domain.RemoveCaptionTrack{Account: v.Account, Track: c.ID})
	if err != nil {
		return err
	}
	s.settle(r, res.LastSeq())
	logger(r, s.cfg.Log).Info("captions deleted", "video_id", v.ID, "track", c.ID)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
