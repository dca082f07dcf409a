package main

import (
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kino-video/kino/domain"
)

// scrape reads kino serve's /metrics with Prometheus' own parser.
func (h *harness) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + h.m.metricsListener.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// value is the sum of the samples of family name whose labels include
// want (a histogram's: its count).
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
	var sum float64
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// /metrics on --metrics-addr (never on the API's listener) moves with the
// work: answers by route template (not by id), upload bytes, the
// transcode's outcome, wait and playable time (from the stream), storage
// and the queue by plan, the read models' lag and the NATS state.
func TestMetrics(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir(), withTranscoder, func(c *Config) { c.MetricsAddr = "127.0.0.1:0" })
	if r := h.get(h.url + "/metrics"); r.status != 404 {
		t.Fatalf("/metrics on the API's listener: %d", r.status)
	}
	before := h.scrape(t)
	if value(before, "kino_nats_connected", nil) != 1 || value(before, "kino_event_store_writable", nil) != 1 ||
		value(before, "go_goroutines", nil) <= 0 || value(before, "kino_storage_bytes", map[string]string{"plan": "pro"}) != 0 {
		t.Fatal("the gauges of an idle kino are not there")
	}

	key := h.account("acme", domain.PlanPro)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	clip := makeClip(t, "a.mp4", 320, 180, 1, true)
	id := h.uploadID(key, "main", "a.mp4", clip)
	h.waitStatus(key, id, domain.StatusCompleted)
	wantStatus(t, h.do("GET", "/v1/videos/"+id, key, nil), 200)
	wantStatus(t, h.do("GET", "/v1/videos/01ARZ3NDEKTSV4RRFFQ69G5FAV", key, nil), 404)
	h.settle()

	after := h.scrape(t)
	for _, c := range []struct {
		name    string
		labels  map[string]string
		atLeast float64
	}{
		{"kino_http_requests_total", map[string]string{"route": "/v1/videos/{id}", "method": "GET", "status": "200"}, 2},
		{"kino_http_requests_total", map[string]string{"route": "/v1/videos/{id}", "method": "GET", "status": "404"}, 1},
		{"kino_http_request_duration_seconds", map[string]string{"route": "/v1/videos", "method": "POST"}, 1},
		{"kino_upload_bytes_total", nil, float64(len(clip))},
		{"kino_transcode_jobs_total", map[string]string{"outcome": "succeeded"}, 1},
		{"kino_transcode_wait_seconds", map[string]string{"plan": "pro"}, 1},
		{"kino_transcode_seconds_per_rendition", nil, 1},
		{"kino_playable_seconds", nil, 1},
		{"kino_storage_bytes", map[string]string{"plan": "pro"}, float64(len(clip))},
	} {
		if got := value(after, c.name, c.labels); got < c.atLeast {
			t.Errorf("%s%v = %v, want at least %v", c.name, c.labels, got, c.atLeast)
		}
	}
	if got := value(after, "kino_upload_bytes_total", nil); got != float64(len(clip)) {
		t.Errorf("upload bytes %v, want %d", got, len(clip))
	}
	// No label carries an id.
	for _, m := range after["kino_http_requests_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if domain.ValidID(l.GetValue()) || len(l.GetValue()) > 40 {
				t.Fatalf("a label carries %q", l.GetValue())
			}
		}
	}
	if n := value(after, "kino_videos_processing", map[string]string{"plan": "pro"}) + value(after, "kino_videos_pending", map[string]string{"plan": "pro"}); n != 0 {
		t.Errorf("%v videos queued or processing after the transcode", n)
	}
	// Every metric the shipped dashboard and alerts use is one kino serves.
	for _, f := range []string{"../../docs/monitoring/grafana-dashboard.json", "../../docs/monitoring/alerts.yml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range regexp.MustCompile(`kino_[a-z_]+`).FindAllString(string(b), -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
			if _, ok := after[base]; !ok && name != "kino_" {
				t.Errorf("%s names %s, which /metrics does not serve", f, name)
			}
		}
	}
	if lag := value(after, "kino_read_model_lag_events", nil); lag != 0 {
		t.Errorf("read model lag %v after settling", lag)
	}
}
