package httpapi_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

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
func testPlans() domain.Plans {
	p := domain.DefaultPlans()
	for name, l := range p {
		l.MaxUploadBytes = 256 << 10
		if name == domain.PlanBusiness {
			l.MaxUploadBytes = 512 << 20
		}
		p[name] = l
	}
	return p
}

var (
	wantStatus = httpapitest.WantStatus
	wantError  = httpapitest.WantError
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

var (
	clipOnce sync.Once
	clipData []byte
	clipErr  error
)

// clip is a real 1 s 320x180 MP4 made by ffmpeg, once per test binary.
func clip(t *testing.T) []byte {
	t.Helper()
	clipOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kino-clip")
		if err != nil {
			clipErr = err
			return
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "clip.mp4")
		out, err := exec.Command("ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25",
			"-t", "1", "-pix_fmt", "yuv420p", path).CombinedOutput()
		if err != nil {
			clipErr = fmt.Errorf("ffmpeg: %v: %s", err, out)
			return
		}
		clipData, clipErr = os.ReadFile(path)
	})
	if clipErr != nil {
		t.Fatal(clipErr)
	}
	return clipData
}

// fixedClock is the API's clock where a test sets the time.
type fixedClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fixedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fixedClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// videoFields are the fields of a Video: spec §2's and kino's additions.
var videoFields = []string{"id", "filename", "status", "duration", "originalSize", "processedSize", "playlistUrl",
	"thumbnailUrl", "previewUrl", "resolutions", "errorMessage", "collection", "createdAt", "updatedAt",
	"progress", // progress and the rest are kino's additions to spec §2
	"playbackPolicy", "storyboardUrl", "downloadUrl", "speed", "eta", "queuePosition",
	"title", "description", "tags", "metadata"}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func checkTimestamp(t *testing.T, name string, v any) {
	t.Helper()
	s, _ := v.(string)
	ts, err := time.Parse(domain.TimeFormat, s)
	if err != nil || !strings.HasSuffix(s, "Z") || len(s) != len("2006-01-02T15:04:05.000Z") || ts.IsZero() {
		t.Fatalf("%s = %v: want ISO 8601 UTC with milliseconds", name, v)
	}
}
