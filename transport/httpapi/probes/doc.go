// Package probes answers a node's liveness and readiness for load
// balancers and orchestrators: /healthz (the process answers, is connected
// and can make progress) and /readyz (every readiness check passes, each
// named in the answer, 503 with Retry-After otherwise). The checks
// themselves come from the server that mounts the probes; a probe's
// outcome is logged when it changes, not on every probe. A new endpoint
// an operator's tooling scrapes (metrics) goes beside it.
package probes
