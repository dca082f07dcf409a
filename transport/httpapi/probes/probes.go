package probes

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kino-video/kino/transport/httpapi/respond"
)

// Timeout bounds one /readyz (and /healthz) round.
const Timeout = 2 * time.Second

// Check is one readiness check: its name in /readyz, and a run that
// returns what a failure tells an operator (fixed text: details, which may
// name files, go to the log) or "" when it passes.
type Check struct {
	Name string
	Run  func(ctx context.Context) (problem string, detail error)
}

// Config wires the probes.
type Config struct {
	// Checks are /readyz's checks, run in order on every probe.
	Checks []Check
	// Live is /healthz's one question: nil while the node is alive.
	Live func() error
	Log  *slog.Logger
}

// Probes answers /healthz and /readyz.
type Probes struct {
	cfg               Config
	health, readiness transitions
}

// New prepares the probes.
func New(cfg Config) *Probes {
	return &Probes{cfg: cfg, health: transitions{what: "healthy"}, readiness: transitions{what: "ready"}}
}

// Routes mounts /healthz and /readyz with mount.
func (p *Probes) Routes(mount func(path string, h func(http.ResponseWriter, *http.Request) error, methods ...string)) {
	mount("/healthz", p.healthz, http.MethodGet, http.MethodHead)
	mount("/readyz", p.readyz, http.MethodGet, http.MethodHead)
}

// readyz answers whether this node can serve requests: 200
// {"status":"ready","checks":{...}} or 503 with the failing checks named,
// so a load balancer can take it out. /healthz stays liveness.
func (p *Probes) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), Timeout)
	defer cancel()
	checks := map[string]string{}
	var failing []string
	var details []any
	for _, c := range p.cfg.Checks {
		problem, detail := c.Run(ctx)
		if problem == "" {
			checks[c.Name] = "ok"
			continue
		}
		checks[c.Name] = problem
		failing = append(failing, c.Name)
		if detail != nil {
			details = append(details, c.Name, detail.Error())
		}
	}
	p.readiness.report(p.cfg.Log, failing, details)
	if len(failing) > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(respond.UnavailableRetry))
		respond.JSON(w, http.StatusServiceUnavailable, struct {
			Status  string            `json:"status"`
			Failing []string          `json:"failing"`
			Checks  map[string]string `json:"checks"`
		}{"unavailable", failing, checks})
		return nil
	}
	respond.JSON(w, http.StatusOK, struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}{"ready", checks})
	return nil
}

// healthz is liveness: 200 {"status":"ok"} while Live answers nil, 503
// otherwise.
func (p *Probes) healthz(w http.ResponseWriter, r *http.Request) error {
	err := p.cfg.Live()
	var failing []string
	if err != nil {
		failing = []string{"liveness"}
	}
	p.health.report(p.cfg.Log, failing, []any{"err", err})
	if err != nil {
		w.Header().Set("Retry-After", strconv.Itoa(respond.UnavailableRetry))
		respond.JSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
		return nil
	}
	respond.JSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// transitions logs a probe's outcome when it changes, not on every probe:
// one line when checks start failing (or the failing set changes), one
// when all pass again.
type transitions struct {
	what    string // "ready" or "healthy", for the log
	mu      sync.Mutex
	failing []string
}

func (t *transitions) report(log *slog.Logger, failing []string, details []any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if slices.Equal(t.failing, failing) {
		return
	}
	t.failing = failing
	if len(failing) == 0 {
		log.Info("node " + t.what + " again")
		return
	}
	log.Warn("node not "+t.what, append([]any{"failing", strings.Join(failing, ",")}, details...)...)
}
