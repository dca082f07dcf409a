package domain_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

func TestDetailsFromFields(t *testing.T) {
	d, err := domain.DetailsFromFields(map[string][]string{
		"title": {"Talk"}, "tags": {"a, b", "c"}, "metadata[order_id]": {"42"}, "filename": {"x.mp4"},
	})
	want := domain.Details{Title: "Talk", Tags: []string{"a", "b", "c"}, Metadata: map[string]string{"order_id": "42"}}
	if err != nil || !reflect.DeepEqual(d, want) {
		t.Fatalf("got %+v, %v", d, err)
	}
	for name, fields := range map[string]map[string][]string{
		"title twice":        {"title": {"a", "b"}},
		"metadata unclosed":  {"metadata[a": {"1"}},
		"metadata twice":     {"metadata[a]": {"1", "2"}},
		"too many tags":      {"tags": {strings.Repeat("t,", domain.MaxTags+1)}},
		"too many metadata":  manyMetadata(domain.MaxMetadataKeys + 1),
		"description thrice": {"description": {"a", "b", "c"}},
	} {
		if _, err := domain.DetailsFromFields(fields); !domain.IsKind(err, domain.Invalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func manyMetadata(n int) map[string][]string {
	m := map[string][]string{}
	for i := range n {
		m["metadata[k"+strings.Repeat("x", i)+"]"] = []string{"v"}
	}
	return m
}

func TestDetailsNormalize(t *testing.T) {
	d, err := domain.Details{Description: " line 1\r\nline 2\t. ", Tags: []string{"Go", "GO", "go "}}.Normalize("op", "my talk.final.mp4")
	if err != nil || d.Title != "my talk.final" || d.Description != "line 1\nline 2\t." || !reflect.DeepEqual(d.Tags, []string{"Go"}) {
		t.Fatalf("got %+v, %v", d, err)
	}
	if d, _ := (domain.Details{}).Normalize("op", ".mp4"); d.Title != ".mp4" {
		t.Fatalf("a filename that is only an extension: title %q", d.Title)
	}
	for name, bad := range map[string]domain.Details{
		"title too long":          {Title: strings.Repeat("a", domain.MaxTitleLen+1)},
		"title with a newline":    {Title: "a\nb"},
		"title with a zero width": {Title: "a\u200bb"},
		"description too long":    {Description: strings.Repeat("é", domain.MaxDescriptionLen+1)},
		"description with a NUL":  {Description: "a\x00b"},
		"description with RLO":    {Description: "a\u202eb"},
		"invalid UTF-8":           {Title: "a\xffb"},
		"empty tag":               {Tags: []string{" "}},
		"tag too long":            {Tags: []string{strings.Repeat("t", domain.MaxTagLen+1)}},
		"tag with a comma":        {Tags: []string{"a,b"}},
		"metadata key with space": {Metadata: map[string]string{"a b": "1"}},
		"metadata key too long":   {Metadata: map[string]string{strings.Repeat("k", domain.MaxMetadataKeyLen+1): "1"}},
		"metadata empty key":      {Metadata: map[string]string{"": "1"}},
		"metadata empty value":    {Metadata: map[string]string{"a": " "}},
		"metadata value too long": {Metadata: map[string]string{"a": strings.Repeat("v", domain.MaxMetadataValueLen+1)}},
		"metadata value control":  {Metadata: map[string]string{"a": "\x1b[31m"}},
	} {
		if _, err := bad.Normalize("op", "a.mp4"); !domain.IsKind(err, domain.Invalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSearchTerms(t *testing.T) {
	if got := domain.SearchTerms("Café-Crème: l'ÉTÉ 2026 (ß)"); strings.Join(got, "|") != "cafe|creme|l|ete|2026|ß" {
		t.Fatalf("terms %q", got)
	}
	if got := domain.SearchTerms(".*[a-z]+$ ^(foo|bar)"); strings.Join(got, "|") != "a|z|foo|bar" {
		t.Fatalf("regex-like input: %q", got)
	}
	terms := domain.VideoTerms("talk.final.mp4", domain.Details{Title: "Talk", Tags: []string{"Go Lang"}, Description: strings.Repeat("w ", 10)})
	if strings.Join(terms, "|") != "talk|final|go|lang|w" {
		t.Fatalf("video terms %q", terms)
	}
	var many []string
	for i := range domain.MaxVideoTerms + 10 {
		many = append(many, "w"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	if n := len(domain.VideoTerms("a.mp4", domain.Details{Description: strings.Join(many, " ")})); n != domain.MaxVideoTerms {
		t.Fatalf("%d terms, want the bound %d", n, domain.MaxVideoTerms)
	}
}
