package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/metrics"
)

// listenMetrics binds --metrics-addr, when given, and makes the metrics
// the other steps record to (m.metrics stays nil without it).
func (m *Main) listenMetrics(context.Context) error {
	if m.MetricsAddr == "" {
		return nil
	}
	var err error
	if m.metricsListener, err = net.Listen("tcp", m.MetricsAddr); err != nil {
		return fmt.Errorf("listen %s: %w (choose another address with --metrics-addr or KINO_METRICS_ADDR)", m.MetricsAddr, err)
	}
	m.metrics = metrics.New()
	return nil
}

// serveMetrics registers what kino serve reads when scraped, then serves
// /metrics on the metrics listener.
func (m *Main) serveMetrics(context.Context) error {
	if m.metrics == nil {
		return nil
	}
	mt := m.metrics
	mt.PlanOf = func(account string) string {
		a, ok, err := m.db.Account(account)
		if err != nil || !ok {
			return ""
		}
		return string(a.Plan)
	}
	probe := func(fn func(context.Context) float64) func() float64 {
		return func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			return fn(ctx)
		}
	}
	mt.Gauge("kino_read_model_lag_events", "Events of the stream the read models have not applied yet (-1: the stream did not answer).", probe(func(ctx context.Context) float64 {
		last, err := m.store.LastSeq(ctx)
		if err != nil {
			return -1
		}
		return float64(last) - float64(min(last, m.projector.Applied()))
	}))
	mt.Gauge("kino_nats_connected", "1 while the event store is connected to NATS.", func() float64 { return bool01(m.store.Health().Connected) })
	mt.Gauge("kino_event_store_writable", "1 while appends to the event stream succeed (0: unacknowledged or refused, e.g. a full disk or no quorum).", func() float64 {
		h := m.store.Health()
		return bool01(h.Connected && h.Writes == nil)
	})
	mt.Gauge("kino_event_stream_messages", "Messages in the event stream KINO_EVENTS (-1: it did not answer).", probe(func(ctx context.Context) float64 {
		st, err := m.store.Status(ctx)
		if err != nil {
			return -1
		}
		return float64(st.Messages)
	}))
	mt.Gauge("kino_event_stream_bytes", "Bytes of the event stream KINO_EVENTS (-1: it did not answer).", probe(func(ctx context.Context) float64 {
		st, err := m.store.Status(ctx)
		if err != nil {
			return -1
		}
		return float64(st.Bytes)
	}))
	cache := func() (uint64, uint64) { return 0, 0 } // --media dir: no copies
	if b, ok := m.media.(*media.Bucket); ok {
		cache = b.CacheStats
	}
	mt.Counter("kino_media_cache_hits_total", "/cdn reads served from a local copy of an object (--media nats or s3).", func() float64 { h, _ := cache(); return float64(h) })
	mt.Counter("kino_media_cache_misses_total", "/cdn reads of an object store that found no local copy.", func() float64 { _, mi := cache(); return float64(mi) })
	usage := &planUsage{m: m}
	mt.GaugeVec("kino_storage_bytes", "Bytes of the live videos' originals and outputs, by the accounts' plan.", "plan", func() map[string]float64 { return usage.get().storage })
	mt.GaugeVec("kino_videos_pending", "Videos waiting for their transcode (PENDING), by the accounts' plan: the queue depth.", "plan", func() map[string]float64 { return usage.get().pending })
	mt.GaugeVec("kino_videos_processing", "Videos being transcoded (PROCESSING), by the accounts' plan.", "plan", func() map[string]float64 { return usage.get().processing })

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", mt.Handler())
	m.metricsServer = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	srv, l := m.metricsServer, m.metricsListener
	m.metricsDone = make(chan error, 1)
	go func() { m.metricsDone <- srv.Serve(l) }()
	m.Log.Info("metrics served", "addr", l.Addr().String())
	return nil
}

// closeMetrics stops the metrics listener.
func (m *Main) closeMetrics() error {
	if m.metricsServer == nil {
		if m.metricsListener != nil {
			_ = m.metricsListener.Close()
		}
		return nil
	}
	err := m.metricsServer.Close()
	if serr := <-m.metricsDone; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	m.metricsServer, m.metricsListener = nil, nil
	return err
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// planUsage sums the accounts' usage by plan for the metrics, from the
// read models (two reads an account), again only when they changed since.
type planUsage struct {
	m    *Main
	mu   sync.Mutex
	at   uint64 // the read models' sequence last summed at
	last usageByPlan
}

type usageByPlan struct{ storage, pending, processing map[string]float64 }

func (u *planUsage) get() usageByPlan {
	u.mu.Lock()
	defer u.mu.Unlock()
	applied := u.m.projector.Applied()
	if u.last.storage != nil && applied == u.at {
		return u.last
	}
	out := usageByPlan{storage: map[string]float64{}, pending: map[string]float64{}, processing: map[string]float64{}}
	for _, p := range []domain.Plan{domain.PlanFree, domain.PlanPro, domain.PlanBusiness} {
		out.storage[string(p)], out.pending[string(p)], out.processing[string(p)] = 0, 0, 0
	}
	accts, err := u.m.db.Accounts()
	if err != nil {
		return u.last
	}
	for _, a := range accts {
		us, err := u.m.db.Usage(a.Slug)
		if err != nil {
			continue
		}
		p := string(a.Plan)
		out.storage[p] += float64(us.StorageBytes)
		out.pending[p] += float64(us.Pending)
		out.processing[p] += float64(us.Processing)
	}
	u.last, u.at = out, applied
	return out
}
