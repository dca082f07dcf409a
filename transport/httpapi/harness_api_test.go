package httpapi_test

import (
	"context"
	"crypto/rand"
	"sort"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/httpapi"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
)

// api is a running API (httpapitest.Start) and a client of it that checks
// every exchange against docs/openapi.yaml: the black-box tests of the
// /v1 API's behaviour.
type api struct {
	*httpapitest.Kino
	*httpapitest.Client
}

// startAPI runs the API on small upload limits (testPlans) until the test
// ends; configure, if any, changes its configuration.
func startAPI(t *testing.T, configure ...func(*httpapi.Config)) api {
	t.Helper()
	k := httpapitest.Start(t, httpapitest.Options{Plans: testPlans(), Configure: func(c *httpapi.Config) {
		for _, fn := range configure {
			fn(c)
		}
	}})
	return api{Kino: k, Client: k.Client()}
}

// testPlans are the default plans with small upload limits, so size
// checks need only small files: 256 KiB, 512 MiB on business.
var testPlans = httpapitest.SmallPlans

var (
	wantStatus = httpapitest.WantStatus
	wantError  = httpapitest.WantError
	// clip is a real 1 s 320x180 MP4 made by ffmpeg, once per test binary.
	clip = httpapitest.Clip
	// streamingUpload builds a multipart body of size bytes generated on
	// the fly, so the test itself holds no copy of the file.
	streamingUpload = httpapitest.StreamingUpload
)

// issueKey gives the account another API key, as `kino keys create`
// does, and returns it and its id.
func (a api) issueKey(t *testing.T, slug, label string) (key, id string) {
	t.Helper()
	key, err := domain.NewAPIKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id = a.Store.NewID()
	a.execAccount(t, slug, domain.IssueKey{KeyID: id, Hash: domain.HashKey(key), Prefix: key[:len(domain.KeyPrefix)+4], Label: label})
	return key, id
}

func (a api) execAccount(t *testing.T, slug string, cmd any) {
	t.Helper()
	if _, err := eventstore.Execute[domain.Account](context.Background(), a.Store,
		domain.StreamID{Aggregate: domain.AggAccount, ID: slug}, cmd); err != nil {
		t.Fatal(err)
	}
	a.Settle()
}

// events counts the stored events matching a subject filter whose body
// (as stored) contains s ("" for any).
func (a api) events(t *testing.T, filter, s string) int {
	t.Helper()
	var filters []string
	if filter != "" {
		filters = []string{filter}
	}
	n := 0
	err := a.Store.Scan(context.Background(), filters, func(e domain.Event) error {
		raw, err := domain.Encode(e)
		if err != nil {
			return err
		}
		if strings.Contains(string(raw), s) {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// videoFields are the fields of a Video: spec §2's and kino's additions.
var videoFields = httpapitest.VideoFields

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkTimestamp checks that a field is an ISO 8601 UTC time with milliseconds.
var checkTimestamp = httpapitest.WantTimestamp
