// Package metrics is kino's Prometheus metrics (client_golang), served in
// the text format on kino serve's --metrics-addr, never on the public
// listener.
//
// What each process exports:
//
//   - kino_http_requests_total{route,method,status} and
//     kino_http_request_duration_seconds{route,method}: every answer of the
//     API, /cdn and the pages, by route template (never by id: bounded
//     labels), timed to the answer's header.
//   - kino_upload_bytes_total: bytes of accepted uploads.
//   - From the event stream, as kino serve's projector applies it (so every
//     kino serve reports the whole cluster's work, wherever its workers
//     run; take one node's, or the max, not the sum):
//     kino_transcode_jobs_total{outcome} (succeeded, failed, interrupted),
//     kino_transcode_seconds_per_rendition, kino_transcode_wait_seconds{plan}
//     (accepted or retried to started), kino_playable_seconds (accepted to
//     playable), kino_webhook_deliveries_total{outcome} and
//     kino_webhook_delivery_seconds.
//   - Gauges and counters read when scraped (Gauge, Counter, GaugeVec),
//     which kino serve registers: the read models' lag, the NATS
//     connection and the event stream, the queues, the media cache, storage
//     per plan.
//
// Labels never carry an account, a video or a key: a plan at most.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kino-video/kino/domain"
)

// Metrics are one process's metrics. A nil *Metrics records nothing.
type Metrics struct {
	reg *prometheus.Registry

	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	uploads    prometheus.Counter
	jobs       *prometheus.CounterVec
	rendition  prometheus.Histogram
	wait       *prometheus.HistogramVec
	playable   prometheus.Histogram
	deliveries *prometheus.CounterVec
	delivery   prometheus.Histogram

	// PlanOf is the plan of an account (for the wait's label); nil or ""
	// gives "unknown".
	PlanOf func(account string) string

	mu     sync.Mutex
	videos map[string]videoTimes // in flight: accepted or retried, not yet ended
}

// videoTimes is what the event metrics remember of a video in flight.
type videoTimes struct {
	account          string
	queued, accepted time.Time
	started          time.Time
}

// maxTracked bounds the videos remembered between their events: past it
// the oldest memory is dropped (their wait and playable time go unmeasured).
const maxTracked = 100_000

var secondsBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
var jobBuckets = []float64{1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200}

// New makes the metrics of one process, with Go's and the process's own.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), videos: map[string]videoTimes{}}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.requests = m.counterVec("kino_http_requests_total", "HTTP answers by route template, method and status.", "route", "method", "status")
	m.duration = m.histogramVec("kino_http_request_duration_seconds", "Time to each HTTP answer's header, by route template and method.", secondsBuckets, "route", "method")
	m.uploads = m.counter("kino_upload_bytes_total", "Bytes of uploads accepted (multipart, tus and direct).")
	m.jobs = m.counterVec("kino_transcode_jobs_total", "Transcode attempts ended, by outcome (succeeded, failed, interrupted).", "outcome")
	m.rendition = m.histogram("kino_transcode_seconds_per_rendition", "Seconds of a successful transcode attempt divided by its renditions.", jobBuckets)
	m.wait = m.histogramVec("kino_transcode_wait_seconds", "Seconds from an upload accepted (or a retry) to its transcode starting, by plan.", jobBuckets, "plan")
	m.playable = m.histogram("kino_playable_seconds", "Seconds from an upload accepted to its video playable.", jobBuckets)
	m.deliveries = m.counterVec("kino_webhook_deliveries_total", "Webhook delivery attempts, by outcome (succeeded, failed).", "outcome")
	m.delivery = m.histogram("kino_webhook_delivery_seconds", "Seconds of a webhook delivery attempt.", secondsBuckets)
	// Every outcome is there from the start, at 0, so that rates and
	// alerts see them before the first one happens.
	for _, o := range []string{"succeeded", "failed", "interrupted"} {
		m.jobs.WithLabelValues(o)
	}
	for _, o := range []string{"succeeded", "failed"} {
		m.deliveries.WithLabelValues(o)
	}
	return m
}

func (m *Metrics) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	m.reg.MustRegister(c)
	return c
}

func (m *Metrics) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	m.reg.MustRegister(c)
	return c
}

func (m *Metrics) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	m.reg.MustRegister(h)
	return h
}

func (m *Metrics) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	m.reg.MustRegister(h)
	return h
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, Timeout: 10 * time.Second})
}

// Request records an HTTP answer.
func (m *Metrics) Request(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route, method).Observe(d.Seconds())
}

// UploadBytes records n bytes of an upload accepted.
func (m *Metrics) UploadBytes(n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.uploads.Add(float64(n))
}

// Gauge exports fn's value as the gauge name, read at each scrape.
func (m *Metrics) Gauge(name, help string, fn func() float64) {
	if m != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
	}
}

// Counter exports fn's value as the counter name, read at each scrape.
func (m *Metrics) Counter(name, help string, fn func() float64) {
	if m != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, fn))
	}
}

// GaugeVec exports fn's values as the gauge name with one label, read at
// each scrape (fn's keys are the label's values: keep them few).
func (m *Metrics) GaugeVec(name, help, label string, fn func() map[string]float64) {
	if m != nil {
		m.reg.MustRegister(&gaugeVec{desc: prometheus.NewDesc(name, help, []string{label}, nil), fn: fn})
	}
}

type gaugeVec struct {
	desc *prometheus.Desc
	fn   func() map[string]float64
}

func (g *gaugeVec) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }
func (g *gaugeVec) Collect(ch chan<- prometheus.Metric) {
	for k, v := range g.fn() {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, k)
	}
}

// Observe records what an event says of the work: kino serve's projector
// calls it for each event it applies (never while rebuilding).
func (m *Metrics) Observe(e domain.Event) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id := e.AggregateID
	switch d := e.Data.(type) {
	case domain.UploadAccepted:
		m.track(id, videoTimes{account: d.Account, accepted: e.OccurredAt, queued: e.OccurredAt})
	case domain.TranscodeRetried:
		v := m.videos[id]
		v.account, v.queued = d.Account, e.OccurredAt
		m.track(id, v)
	case domain.TranscodeStarted:
		v, ok := m.videos[id]
		if ok && !v.queued.IsZero() {
			m.wait.WithLabelValues(m.plan(d.Account)).Observe(e.OccurredAt.Sub(v.queued).Seconds())
			v.queued = time.Time{}
		}
		v.account, v.started = d.Account, e.OccurredAt
		m.track(id, v)
	case domain.TranscodePlayable:
		if v, ok := m.videos[id]; ok && !v.accepted.IsZero() {
			m.playable.Observe(e.OccurredAt.Sub(v.accepted).Seconds())
			v.accepted = time.Time{}
			m.videos[id] = v
		}
	case domain.TranscodeSucceeded:
		m.jobs.WithLabelValues("succeeded").Inc()
		if v, ok := m.videos[id]; ok {
			if !v.accepted.IsZero() { // playable only when done
				m.playable.Observe(e.OccurredAt.Sub(v.accepted).Seconds())
			}
			if !v.started.IsZero() && len(d.Resolutions) > 0 {
				m.rendition.Observe(e.OccurredAt.Sub(v.started).Seconds() / float64(len(d.Resolutions)))
			}
		}
		delete(m.videos, id)
	case domain.TranscodeFailed:
		m.jobs.WithLabelValues("failed").Inc()
		if d.Final {
			delete(m.videos, id)
		} else if v, ok := m.videos[id]; ok {
			v.queued = e.OccurredAt // waits again for its next attempt
			m.videos[id] = v
		}
	case domain.TranscodeInterrupted:
		m.jobs.WithLabelValues("interrupted").Inc()
		if v, ok := m.videos[id]; ok {
			v.queued = e.OccurredAt
			m.videos[id] = v
		}
	case domain.VideoDeleted:
		delete(m.videos, id)
	case domain.DeliverySucceeded:
		m.deliveries.WithLabelValues("succeeded").Inc()
		m.delivery.Observe(float64(d.DurationMs) / 1000)
	case domain.DeliveryFailed:
		m.deliveries.WithLabelValues("failed").Inc()
		m.delivery.Observe(float64(d.DurationMs) / 1000)
	}
}

func (m *Metrics) track(id string, v videoTimes) {
	if _, ok := m.videos[id]; !ok && len(m.videos) >= maxTracked {
		for k := range m.videos { // drop one: any
			delete(m.videos, k)
			break
		}
	}
	m.videos[id] = v
}

func (m *Metrics) plan(account string) string {
	if m.PlanOf != nil {
		if p := m.PlanOf(account); p != "" {
			return p
		}
	}
	return "unknown"
}
