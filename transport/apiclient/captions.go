package apiclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"

	"github.com/kino-video/kino/transport/wire"
)

// CaptionTrack is a text track of a video (Video.Captions, Captions): its
// Status is "READY", or "PENDING" then "READY" or "FAILED" while it is
// generated; URL is its WebVTT once READY. Every READY track is also a
// subtitles rendition in the video's HLS playlist.
type CaptionTrack = wire.CaptionTrack

// CaptionUpload is a caption file to add to a video.
type CaptionUpload struct {
	File     []byte // WebVTT or SRT (converted to WebVTT), at most 2 MiB
	Filename string // shown in errors only; "captions.vtt" when empty
	Language string // BCP 47: "en", "pt-BR"
	Label    string // what players' menus show; the language's name when empty
	Default  bool   // players select it first
}

// AddCaptions adds a text track to video id (POST
// /v1/videos/{id}/captions) and returns it, READY.
func (c *Client) AddCaptions(ctx context.Context, id string, u CaptionUpload) (CaptionTrack, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fields := [][2]string{{"language", u.Language}, {"default", strconv.FormatBool(u.Default)}}
	if u.Label != "" {
		fields = append(fields, [2]string{"label", u.Label})
	}
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return CaptionTrack{}, err
		}
	}
	name := u.Filename
	if name == "" {
		name = "captions.vtt"
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, name))
	h.Set("Content-Type", "text/plain; charset=utf-8")
	part, err := mw.CreatePart(h)
	if err != nil {
		return CaptionTrack{}, err
	}
	if _, err := part.Write(u.File); err != nil {
		return CaptionTrack{}, err
	}
	if err := mw.Close(); err != nil {
		return CaptionTrack{}, err
	}
	cl := c.api(http.MethodPost, "/videos/"+url.PathEscape(id)+"/captions", nil)
	cl.contentType = mw.FormDataContentType()
	raw := body.Bytes()
	cl.body = func() (io.Reader, int64, error) { return bytes.NewReader(raw), int64(len(raw)), nil }
	var t CaptionTrack
	return t, c.do(ctx, cl, &t)
}

// GenerateCaptions starts making a text track of video id from its speech
// in language (POST /v1/videos/{id}/captions/generate) and returns the
// track, PENDING: a video.captions.ready or video.captions.failed webhook
// tells when it ends, or poll Caption.
func (c *Client) GenerateCaptions(ctx context.Context, id, language string) (CaptionTrack, error) {
	cl := c.api(http.MethodPost, "/videos/"+url.PathEscape(id)+"/captions/generate", nil)
	cl.body, cl.contentType = jsonBody(map[string]string{"language": language}), "application/json"
	var t CaptionTrack
	return t, c.do(ctx, cl, &t)
}

// Captions lists the text tracks of video id.
func (c *Client) Captions(ctx context.Context, id string) ([]CaptionTrack, error) {
	var out wire.CaptionTracks
	return out.Data, c.get(ctx, "/videos/"+url.PathEscape(id)+"/captions", nil, &out)
}

// Caption is one text track of video id.
func (c *Client) Caption(ctx context.Context, id, track string) (CaptionTrack, error) {
	var t CaptionTrack
	return t, c.get(ctx, "/videos/"+url.PathEscape(id)+"/captions/"+url.PathEscape(track), nil, &t)
}

// CaptionVTT is the WebVTT of a READY track of video id.
func (c *Client) CaptionVTT(ctx context.Context, id, track string) ([]byte, error) {
	cl := c.api(http.MethodGet, "/videos/"+url.PathEscape(id)+"/captions/"+url.PathEscape(track), nil)
	cl.header = http.Header{"Accept": {"text/vtt"}}
	resp, err := c.send(ctx, cl)
	if err != nil {
		return nil, err
	}
	return resp.body, nil
}

// DeleteCaptions removes a text track of video id.
func (c *Client) DeleteCaptions(ctx context.Context, id, track string) error {
	return c.do(ctx, c.api(http.MethodDelete, "/videos/"+url.PathEscape(id)+"/captions/"+url.PathEscape(track), nil), nil)
}
