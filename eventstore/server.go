// Package eventstore is kino's only door to NATS: it runs the embedded
// server, keeps the event stream, appends events with optimistic
// concurrency and reads them back. Callers never see a nats type or code.
package eventstore

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Embedded is a nats-server with JetStream running inside this process.
type Embedded struct {
	srv     *server.Server
	dataDir string
}

// ErrAddressInUse is returned by StartEmbedded when another process
// listens on its address already.
var ErrAddressInUse = errors.New("address in use")

// checkFree fails at once when addr ("host:port", port not 0) cannot be
// listened on, rather than letting the server's ReadyForConnections wait
// for a listener that never comes. The probe is released at once: the
// server binds the address a moment later.
func checkFree(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%s: %w by another process (another kino serve or nats-server?)", addr, ErrAddressInUse)
		}
		return err
	}
	return l.Close()
}

// StartEmbedded starts a JetStream server storing under dataDir/nats and
// listening on listen ("host:port"; port 0 picks a free one). It takes
// only clients holding one of the nkeys under dataDir/nats-creds, which it
// generates on first start (see Roles and Auth).
func StartEmbedded(dataDir, listen string) (*Embedded, error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("start nats: listen address %q: %w", listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("start nats: listen port %q: %w", portStr, err)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	} else if err := checkFree(listen); err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	pubs, err := ensureCreds(dataDir)
	if err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	var users []*server.NkeyUser
	for _, role := range Roles {
		users = append(users, &server.NkeyUser{Nkey: pubs[role], Permissions: permissions(role)})
	}
	opts := &server.Options{
		ServerName: "kino",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   filepath.Join(dataDir, "nats"),
		NoSigs:     true,
		NoLog:      true,
		// Accept large event batches from the CLI or the projector.
		MaxPayload: 8 << 20,
		Nkeys:      users,
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("start nats: not ready after 30s (is %s in use?)", listen)
	}
	return &Embedded{srv: srv, dataDir: dataDir}, nil
}

// Auth is what a client of role presents to this server: its seed file.
func (e *Embedded) Auth(role string) Auth {
	return Auth{CredsFile: CredsFile(e.dataDir, role)}
}

// URL is the client URL of the embedded server.
func (e *Embedded) URL() string { return e.srv.ClientURL() }

// Shutdown stops the server and waits until it has stopped.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}
