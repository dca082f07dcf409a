package apiclient_test

import (
	"bytes"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/apiclient"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
)

// A video's title, description, tags and metadata go in by every way in
// (multipart, tus, a direct upload URL's issuer), come back on the Video,
// and change with UpdateVideo.
func TestDetails(t *testing.T) {
	t.Parallel()
	_, c := setup(t, httpapitest.Options{}, domain.PlanPro)
	data := notAVideo(3000)
	details := apiclient.Details{Title: "Launch talk", Description: "Our launch.\nWith questions.",
		Tags: []string{"launch", "talk"}, Metadata: map[string]string{"order_id": "A-42", "user.id": "7"}}
	opt := apiclient.WithDetails(details)

	up, err := c.Upload(ctx(t), bytes.NewReader(data), int64(len(data)), "a.mp4", "main", nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	tu, err := c.UploadResumable(ctx(t), bytes.NewReader(data), int64(len(data)), "b.mp4", "main", apiclient.TusOptions{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.CreateDirectUpload(ctx(t), "main", 0, opt)
	if err != nil {
		t.Fatal(err)
	}
	du, err := (&apiclient.Client{}).CreateResumableAt(ctx(t), d.URL, int64(len(data)), "c.mp4")
	if err != nil {
		t.Fatal(err)
	}
	if err := du.Send(ctx(t), bytes.NewReader(data), apiclient.TusOptions{}); err != nil {
		t.Fatal(err)
	}
	for way, id := range map[string]string{"multipart": up.Video.ID, "tus": tu.VideoID(), "direct": d.ID} {
		v, err := c.Video(ctx(t), id)
		if err != nil || !reflect.DeepEqual(v.Details, details) {
			t.Fatalf("%s: details %+v, %v; want %+v", way, v.Details, err, details)
		}
	}

	// No title: the filename's, without its extension; none of the rest.
	plain, err := c.Upload(ctx(t), bytes.NewReader(data), int64(len(data)), "My Holiday.final.mov", "main", nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Video(ctx(t), plain.Video.ID)
	if err != nil || v.Title != "My Holiday.final" || v.Description != "" || len(v.Tags) != 0 || len(v.Metadata) != 0 {
		t.Fatalf("default details: %+v, %v", v.Details, err)
	}

	id := up.Video.ID
	title, tags := "Launch talk (2026)", []string{"Launch", "keynote"}
	v, err = c.UpdateVideo(ctx(t), id, apiclient.VideoUpdate{Title: &title, Tags: &tags,
		Metadata: map[string]string{"user.id": "", "plan": "pro"}})
	want := apiclient.Details{Title: title, Description: details.Description, Tags: tags,
		Metadata: map[string]string{"order_id": "A-42", "plan": "pro"}}
	if err != nil || !reflect.DeepEqual(v.Details, want) {
		t.Fatalf("update: %+v, %v; want %+v", v.Details, err, want)
	}
	empty := ""
	signed := apiclient.PlaybackSigned
	v, err = c.UpdateVideo(ctx(t), id, apiclient.VideoUpdate{Title: &empty, ClearMetadata: true, PlaybackPolicy: &signed})
	if err != nil || v.Title != "a" || len(v.Metadata) != 0 || v.PlaybackPolicy != signed || !reflect.DeepEqual(v.Tags, tags) {
		t.Fatalf("reset: %+v, %v", v, err)
	}

	// A refused change changes nothing, not even the policy beside it.
	public := apiclient.PlaybackPublic
	bad := []string{"a,b"}
	_, err = c.UpdateVideo(ctx(t), id, apiclient.VideoUpdate{Tags: &bad, PlaybackPolicy: &public})
	var apiErr *apiclient.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || !strings.Contains(apiErr.Message, "comma") {
		t.Fatalf("a tag with a comma: %v", err)
	}
	if v2, err := c.Video(ctx(t), id); err != nil || v2.PlaybackPolicy != signed || !reflect.DeepEqual(v2.Details, v.Details) {
		t.Fatalf("after a refused change: %+v, %v", v2, err)
	}

	// Found by words, tag and metadata, page after page by cursor.
	var found []string
	for v, err := range c.AllVideos(ctx(t), apiclient.ListOptions{Query: "launch ta", Tag: "TALK", Meta: map[string]string{"order_id": "A-42"}, Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, v.ID)
	}
	if len(found) != 2 || found[0] != d.ID || found[1] != tu.VideoID() {
		t.Fatalf("search: %v, want the direct and tus uploads, newest first", found)
	}

	// The history records each change.
	events, err := c.VideoEvents(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	var changes int
	for _, e := range events {
		if e.Type == domain.TypeVideoDetailsChanged {
			changes++
		}
	}
	if changes != 2 {
		t.Fatalf("%d VideoDetailsChanged events in %+v", changes, events)
	}
}
