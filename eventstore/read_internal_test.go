package eventstore

import "testing"

func TestSubjectNames(t *testing.T) {
	tests := []struct {
		name, subject string
		want          bool
	}{
		{name: "same", subject: "video.01J.TranscodeFailed", want: true},
		{name: "collection id with underscore", subject: "collection.acme_main.CollectionCreated", want: true},
		{name: "other type", subject: "video.01J.KeyIssued"},
		{name: "other id", subject: "video.01K.TranscodeFailed"},
		{name: "other aggregate", subject: "webhk.01J.TranscodeFailed"},
		{name: "dots moved", subject: "video.01J.Transcode.ailed"},
		{name: "longer", subject: "video.01J.TranscodeFailedX"},
		{name: "empty", subject: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			agg, id := "video", "01J"
			if tc.name == "collection id with underscore" {
				agg, id = "collection", "acme_main"
			}
			typ := "TranscodeFailed"
			if agg == "collection" {
				typ = "CollectionCreated"
			}
			if got := subjectNames(tc.subject, agg, id, typ); got != tc.want {
				t.Fatalf("subjectNames(%q) = %v, want %v", tc.subject, got, tc.want)
			}
		})
	}
}
