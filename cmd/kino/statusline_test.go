package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/apiclient"
	"github.com/kino-video/kino/transport/ffmpeg/ffmpegtest"
)

func TestProcessingLine(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		name string
		v    apiclient.Video
		want string
	}{
		{"processing with everything", apiclient.Video{Status: apiclient.StatusProcessing, Progress: f(0.425), Speed: f(1.94), ETA: f(31)}, "PROCESSING   42%  eta 0:31  ×1.9"},
		{"before the speed is known", apiclient.Video{Status: apiclient.StatusProcessing, Progress: f(0)}, "PROCESSING    0%"},
		{"hours left", apiclient.Video{Status: apiclient.StatusProcessing, Progress: f(0.01), Speed: f(0.2), ETA: f(3*3600 + 5*60 + 9)}, "PROCESSING    1%  eta 3:05:09  ×0.2"},
		{"out of range from a server", apiclient.Video{Status: apiclient.StatusProcessing, Progress: f(7), ETA: f(-5)}, "PROCESSING  100%  eta 0:00"},
		{"queued", apiclient.Video{Status: apiclient.StatusPending, QueuePosition: n(3)}, "PENDING  #3 in queue"},
		{"queued, place unknown", apiclient.Video{Status: apiclient.StatusPending}, "PENDING"},
		{"done", apiclient.Video{Status: apiclient.StatusCompleted, Progress: f(1)}, ""},
	} {
		if got := processingLine(tc.v); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// On a terminal the line is rewritten in place and cleared at the end;
// elsewhere each change is a line of its own.
func TestStatusLine(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	vs := []apiclient.Video{
		{Status: apiclient.StatusPending},
		{Status: apiclient.StatusProcessing, Progress: f(0.1)},
		{Status: apiclient.StatusProcessing, Progress: f(0.1)}, // unchanged: not written again
		{Status: apiclient.StatusProcessing, Progress: f(0.5), Speed: f(2), ETA: f(10)},
		{Status: apiclient.StatusCompleted},
	}
	var term, plain bytes.Buffer
	a, b := &statusLine{w: &term, terminal: true}, &statusLine{w: &plain}
	for _, v := range vs {
		a.update(v)
		b.update(v)
	}
	a.finish()
	b.finish()
	if want := "\rPENDING\x1b[K\rPROCESSING   10%\x1b[K\rPROCESSING   50%  eta 0:10  ×2.0\x1b[K\r\x1b[K"; term.String() != want {
		t.Errorf("terminal: %q, want %q", term.String(), want)
	}
	if want := "PENDING\nPROCESSING   10%\nPROCESSING   50%  eta 0:10  ×2.0\n"; plain.String() != want {
		t.Errorf("plain: %q, want %q", plain.String(), want)
	}
}

// kino upload --wait shows the processing state as percent (with time
// left and speed once the server knows them), not a per-mille counter.
func TestUploadCommandShowsProcessing(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withTranscoder)
	key := h.account("acme", domain.PlanPro)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	api := []string{"--key", key, "--url", h.url + "/v1", "--poll", "250ms"}
	// Half a minute of a still picture with a moving box: long enough to be
	// seen PROCESSING, small enough for the test plans' upload limit.
	long := filepath.Join(t.TempDir(), "long.mp4")
	ffmpegtest.Run(t, "-f", "lavfi", "-i", "color=c=blue:size=640x360:rate=25,drawbox=x=t*10:y=10:w=40:h=40:c=red:t=fill",
		"-t", "30", "-c:v", "libx264", "-pix_fmt", "yuv420p", long)
	out, errOut, code := runCLI(append([]string{"upload", long, "--collection", "main", "--wait", "--status"}, api...)...)
	if code != 0 || !strings.Contains(out, "COMPLETED") {
		t.Fatalf("upload --wait --status: exit %d\n%s%s", code, out, errOut)
	}
	line := regexp.MustCompile(`^(PENDING(  #\d+ in queue)?|PROCESSING +\d{1,3}%(  eta \d+:\d\d(:\d\d)?)?(  ×\d+\.\d)?)$`)
	processing := 0
	for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if !line.MatchString(l) {
			t.Fatalf("status line %q in\n%s", l, errOut)
		}
		if strings.HasPrefix(l, "PROCESSING") {
			processing++
		}
	}
	if processing == 0 {
		t.Fatalf("no PROCESSING line:\n%s", errOut)
	}
	t.Logf("status lines:\n%s", errOut)
}
