package captions

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	cues "github.com/kino-video/kino/transport/captions"
	"github.com/kino-video/kino/transport/httpapi/respond"
	"github.com/kino-video/kino/transport/wire"
)

// Host is what the caption endpoints use of the API server.
type Host interface {
	// Video is the caller's live video named by the route's {id}; a
	// video of another account is not found.
	Video(r *http.Request) (projections.Video, error)
	// Execute runs cmd on video id's stream and waits until the read
	// models include it.
	Execute(r *http.Request, id string, cmd any) error
	// MaxDuration is the longest video the caller's plan allows (0: no
	// bound).
	MaxDuration(r *http.Request) time.Duration
	Decode(w http.ResponseWriter, r *http.Request, v any) error
	Logger(r *http.Request) *slog.Logger
	// CDNURL is the base URL a track's WebVTT is published under.
	CDNURL(r *http.Request) string
	NewID() string
}

// DB reads videos and their tracks' cues (projections.DB).
type DB interface {
	Video(id string) (projections.Video, bool, error)
	CaptionVTT(video, track string) ([]byte, bool, error)
}

// Config wires the caption endpoints.
type Config struct {
	Host Host
	DB   DB
	// Languages are the BCP 47 tags the workers' speech recognition
	// engine generates captions in; none: POST
	// /v1/videos/{id}/captions/generate is refused (400).
	Languages []string
}

// Handler serves /v1/videos/{id}/captions.
type Handler struct{ cfg Config }

// New prepares the endpoints.
func New(cfg Config) *Handler { return &Handler{cfg: cfg} }

// Routes mounts the endpoints with route, which authenticates the caller.
func (h *Handler) Routes(route func(path string, fn func(http.ResponseWriter, *http.Request) error, method string)) {
	route("/videos/{id}/captions", h.addCaptions, http.MethodPost)
	route("/videos/{id}/captions", h.listCaptions, http.MethodGet)
	route("/videos/{id}/captions/generate", h.generateCaptions, http.MethodPost)
	route("/videos/{id}/captions/{track}", h.getCaption, http.MethodGet)
	route("/videos/{id}/captions/{track}", h.deleteCaption, http.MethodDelete)
}

// Record is a track as the Video resource lists it.
func Record(c projections.Caption) wire.CaptionRecord {
	return wire.CaptionRecord{ID: c.ID, Language: c.Language, Label: c.Label, Source: c.Source, Default: c.Default,
		Status: c.Status, ErrorMessage: c.ErrorMessage, Cues: c.Cues, CreatedAt: c.CreatedAt}
}

func invalid(format string, args ...any) error {
	return domain.E("", domain.Invalid, format, args...)
}

func notFound(what string) error {
	return domain.E("", domain.NotFound, "%s not found", what)
}

// captionSlack allows for multipart framing and the small fields around
// the caption file.
const captionSlack = 64 << 10

// cueSlack is how far past the end of a video a cue may end: subtitle
// files often keep a last cue a little longer than the picture.
const cueSlack = time.Minute

// addCaptions is POST /v1/videos/{id}/captions: multipart/form-data with
// file (WebVTT or SRT), language (BCP 47), and optional label and default
// ("true" or "false").
func (h *Handler) addCaptions(w http.ResponseWriter, r *http.Request) error {
	v, err := h.cfg.Host.Video(r)
	if err != nil {
		return err
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return invalid("request must be multipart/form-data with fields file (WebVTT or SRT) and language")
	}
	if r.ContentLength > cues.MaxInput+captionSlack {
		w.Header().Set("Connection", "close")
		return captionTooLarge(r.ContentLength)
	}
	body := http.MaxBytesReader(w, r.Body, cues.MaxInput+captionSlack)
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
			return invalid("field %q is given twice", domain.Truncate(name, 40))
		}
		seen[name] = true
		switch name {
		case "file":
			file, err = io.ReadAll(io.LimitReader(part, cues.MaxInput+1))
			if err != nil {
				return captionBodyError(err)
			}
			if len(file) > cues.MaxInput {
				return captionTooLarge(-1)
			}
			haveFile = true
		case "language", "label", "default":
			b, err := io.ReadAll(io.LimitReader(part, 1025))
			if err != nil {
				return captionBodyError(err)
			}
			if len(b) > 1024 {
				return invalid("field %q is too large", name)
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
			return invalid("unknown field %q: send file, language, label and default", domain.Truncate(name, 40))
		}
	}
	if !haveFile {
		return invalid("file is required: send the WebVTT or SRT file in the multipart field \"file\"")
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
	track, _, err := cues.Parse(file)
	if err != nil {
		return err
	}
	if err := checkCueTimes(v, track.End(), h.cfg.Host.MaxDuration(r)); err != nil {
		return err
	}
	cmd := domain.AddCaptionTrack{Account: v.Account, Track: h.cfg.Host.NewID(), Language: tag.String(), Label: label,
		Default: def, VTT: string(track.WebVTT()), Cues: len(track.Cues)}
	return h.record(w, r, v.ID, cmd, http.StatusCreated)
}

// generateCaptions is POST /v1/videos/{id}/captions/generate
// {"language", "label", "default"}: a PENDING track that a worker's speech
// recognition fills (202); video.captions.ready or video.captions.failed
// tells when it ends.
func (h *Handler) generateCaptions(w http.ResponseWriter, r *http.Request) error {
	v, err := h.cfg.Host.Video(r)
	if err != nil {
		return err
	}
	var body struct {
		Language string `json:"language"`
		Label    string `json:"label"`
		Default  bool   `json:"default"`
	}
	if err := h.cfg.Host.Decode(w, r, &body); err != nil {
		return err
	}
	tag, err := parseLanguage(body.Language)
	if err != nil {
		return err
	}
	offered := h.cfg.Languages
	if len(offered) == 0 {
		return invalid("this kino does not generate captions (its workers have no speech recognition engine); upload a WebVTT or SRT file instead")
	}
	base, _ := tag.Base()
	if !slices.Contains(offered, tag.String()) && !slices.Contains(offered, base.String()) {
		return invalid("captions can be generated in %s only (got %s)", strings.Join(offered, ", "), tag)
	}
	if body.Label == "" {
		body.Label = languageName(tag) + " (auto-generated)"
	}
	cmd := domain.AddCaptionTrack{Account: v.Account, Track: h.cfg.Host.NewID(), Language: tag.String(), Label: body.Label,
		Default: body.Default, Generate: true}
	return h.record(w, r, v.ID, cmd, http.StatusAccepted)
}

// record executes cmd on video id and answers the track it made
// with status.
func (h *Handler) record(w http.ResponseWriter, r *http.Request, id string, cmd domain.AddCaptionTrack, status int) error {
	if err := h.cfg.Host.Execute(r, id, cmd); err != nil {
		return err
	}
	v, ok, err := h.cfg.DB.Video(id)
	if err != nil {
		return err
	}
	c, found := v.Caption(cmd.Track)
	if !ok || !found {
		return notFound("video")
	}
	h.cfg.Host.Logger(r).Info("captions added", "video_id", id, "track", cmd.Track, "language", cmd.Language, "generated", cmd.Generate)
	respond.JSON(w, status, h.render(r, v, c))
	return nil
}

// checkCueTimes refuses cues past the end of a video whose duration is
// known, and, while it is not (the video is processed), past the longest
// video the plan allows (maxDuration; the parser refuses any past
// cues.MaxTime).
func checkCueTimes(v projections.Video, end, maxDuration time.Duration) error {
	if v.Duration == nil {
		if maxDuration > 0 && end > maxDuration+cueSlack {
			return invalid("a cue ends at %s, after the longest video your plan allows (%s)", clock(end), clock(maxDuration))
		}
		return nil
	}
	d := time.Duration(*v.Duration * float64(time.Second))
	if end > d+cueSlack {
		return invalid("a cue ends at %s, after the end of the video (%s)", clock(end), clock(d))
	}
	return nil
}

func clock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}

func captionTooLarge(n int64) error {
	if n > 0 {
		return domain.E("add captions", domain.TooLarge, "the request is %d bytes; a caption file may be at most %d bytes", n, cues.MaxInput)
	}
	return domain.E("add captions", domain.TooLarge, "a caption file may be at most %d bytes", cues.MaxInput)
}

func captionBodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return captionTooLarge(-1)
	}
	return invalid("malformed multipart body: %v", err)
}

// parseLanguage reads a BCP 47 tag, refusing one the registry does not
// know, and "und" (a track says which language it is in).
func parseLanguage(s string) (language.Tag, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return language.Tag{}, invalid("language is required: a BCP 47 tag such as en, fr or pt-BR")
	}
	tag, err := language.Parse(s)
	if err != nil || len(s) > 35 || tag == language.Und || !domain.ValidLanguageTag(tag.String()) {
		return language.Tag{}, invalid("language must be a BCP 47 tag such as en, fr or pt-BR (got %q)", domain.Truncate(s, 40))
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
	return false, invalid(`%s must be "true" or "false" (got %q)`, name, domain.Truncate(s, 40))
}

// ownCaption is the caller's track named by the route's {id} and {track}.
func (h *Handler) ownCaption(r *http.Request) (projections.Video, projections.Caption, error) {
	v, err := h.cfg.Host.Video(r)
	if err != nil {
		return v, projections.Caption{}, err
	}
	c, ok := v.Caption(mux.Vars(r)["track"])
	if !ok {
		return v, c, notFound("track")
	}
	return v, c, nil
}

func (h *Handler) render(r *http.Request, v projections.Video, c projections.Caption) wire.CaptionTrack {
	return wire.NewCaptionTrack(Record(c), h.cfg.Host.CDNURL(r), v.ID)
}

// listCaptions is GET /v1/videos/{id}/captions.
func (h *Handler) listCaptions(w http.ResponseWriter, r *http.Request) error {
	v, err := h.cfg.Host.Video(r)
	if err != nil {
		return err
	}
	out := wire.CaptionTracks{Data: make([]wire.CaptionTrack, len(v.Captions))}
	for i, c := range v.Captions {
		out.Data[i] = h.render(r, v, c)
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

// getCaption is GET /v1/videos/{id}/captions/{track}: the track as JSON,
// or its WebVTT when the request asks for text/vtt.
func (h *Handler) getCaption(w http.ResponseWriter, r *http.Request) error {
	v, c, err := h.ownCaption(r)
	if err != nil {
		return err
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/vtt") {
		respond.JSON(w, http.StatusOK, h.render(r, v, c))
		return nil
	}
	vtt, ok, err := h.cfg.DB.CaptionVTT(v.ID, c.ID)
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
func (h *Handler) deleteCaption(w http.ResponseWriter, r *http.Request) error {
	v, c, err := h.ownCaption(r)
	if err != nil {
		return err
	}
	if err := h.cfg.Host.Execute(r, v.ID, domain.RemoveCaptionTrack{Account: v.Account, Track: c.ID}); err != nil {
		return err
	}
	h.cfg.Host.Logger(r).Info("captions deleted", "video_id", v.ID, "track", c.ID)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
