package natsserver

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/kino-video/kino/eventstore"
)

// Embedded is a nats-server with JetStream running inside this process.
type Embedded struct {
	dataDir string
	opts    *server.Options // as started, with the port it got: for a restart (see Heal)

	mu      sync.Mutex
	srv     *server.Server
	problem error // what Heal last found wrong; nil when healthy
	closed  bool
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

// Cluster makes an embedded server one node of a NATS cluster: its
// JetStream replicates kino's streams and buckets across the nodes.
type Cluster struct {
	Listen string   // host:port where other nodes' routes connect
	Routes []string // nats://host:port of the other nodes (a route to itself is ignored)
	// Name is this server's name, unique in the cluster and the same on
	// every restart (JetStream knows its peers by it). Default:
	// DefaultNodeName(Listen).
	Name string
	// SecretFile holds the password every node's routes present to the
	// others; default <data>/nats-creds/cluster.secret (see InitCluster).
	SecretFile string
	// TLS of the routes, optional: this node's certificate and key, and
	// the CA that signed every node's certificate (verified both ways).
	CertFile, KeyFile, CAFile string
}

// ClusterName is the name every kino cluster's nodes share.
const ClusterName = "kino"

// routeUser is the user name of the routes (the secret is the password).
const routeUser = "kino-route"

// ClusterSecretFile is where a node keeps the routes' shared secret.
func ClusterSecretFile(dataDir string) string {
	return filepath.Join(dataDir, CredsDir, "cluster.secret")
}

// DefaultNodeName is a server name unique per host and cluster port.
func DefaultNodeName(listen string) string {
	host, _ := os.Hostname()
	_, port, _ := net.SplitHostPort(listen)
	name := "kino-" + host + "-" + port
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '.' || r == '*' || r == '>' {
			return '-'
		}
		return r
	}, name)
}

// InitCluster makes (once: existing files are kept) the credentials every
// node of a cluster shares under dataDir/nats-creds: the role nkeys and
// the routes' secret. Copy that directory to every node.
func InitCluster(dataDir string) error {
	if _, err := ensureCreds(dataDir); err != nil {
		return err
	}
	path := ClusterSecretFile(dataDir)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	secret := []byte(hex.EncodeToString(b) + "\n")
	clear(b)
	defer clear(secret)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster secret: %w", err)
	}
	_, err = f.Write(secret)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("cluster secret: %w", err)
	}
	return nil
}

// StartEmbedded starts a JetStream server storing under dataDir/nats and
// listening on listen ("host:port"; port 0 picks a free one). It takes
// only clients holding one of the nkeys under dataDir/nats-creds, which it
// generates on first start (see eventstore.Roles and eventstore.Auth).
func StartEmbedded(dataDir, listen string) (*Embedded, error) {
	return StartNode(dataDir, listen, nil)
}

// StartNode is StartEmbedded, as a node of cluster when it is not nil. A
// clustered node needs the cluster's shared credentials under dataDir
// (InitCluster, copied to every node): the same role nkeys, so a client
// may use any node, and the routes' secret, so no stranger joins.
func StartNode(dataDir, listen string, cluster *Cluster) (*Embedded, error) {
	host, port, err := splitListen(listen)
	if err != nil {
		return nil, fmt.Errorf("start nats: listen address %q: %w", listen, err)
	}
	if port != server.RANDOM_PORT {
		if err := checkFree(listen); err != nil {
			return nil, fmt.Errorf("start nats: %w", err)
		}
	}
	if cluster != nil {
		if _, err := os.Stat(CredsFile(dataDir, eventstore.RoleServe)); err != nil && cluster.SecretFile == "" {
			return nil, fmt.Errorf("start nats: a cluster node needs the cluster's credentials in %s: run `kino cluster init` once and copy its output into every node's data directory (%w)", filepath.Join(dataDir, CredsDir), err)
		}
	}
	pubs, err := ensureCreds(dataDir)
	if err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	var users []*server.NkeyUser
	for _, role := range eventstore.Roles {
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
	if cluster != nil {
		if err := clusterOptions(opts, dataDir, *cluster); err != nil {
			return nil, fmt.Errorf("start nats: %w", err)
		}
		if opts.Cluster.Port != server.RANDOM_PORT {
			if err := checkFree(cluster.Listen); err != nil {
				return nil, fmt.Errorf("start nats: cluster %w", err)
			}
		}
	}
	e := &Embedded{dataDir: dataDir, opts: opts.Clone()}
	srv, err := e.start()
	switch {
	case errors.Is(err, errNotReady):
		return nil, fmt.Errorf("start nats: %w (is %s in use?)", err, listen)
	case errors.Is(err, errListenInUse):
		// Taken between checkFree and the server's own listen: another
		// kino started at the same instant. The server's message names
		// the port (the clients', or the cluster's).
		return nil, fmt.Errorf("start nats: %w by another process (another kino serve or nats-server?): %v", ErrAddressInUse, err)
	case err != nil:
		return nil, fmt.Errorf("start nats: %w", err)
	}
	e.srv = srv
	// A restart listens where the first start did, so clients reconnect.
	if addr, ok := srv.Addr().(*net.TCPAddr); ok {
		e.opts.Port = addr.Port
	}
	return e, nil
}

// start starts a server with (a copy of) e's options. A fatal error the
// server reports while starting (it could not listen) ends the wait for
// readiness at once.
func (e *Embedded) start() (*server.Server, error) {
	srv, err := server.NewServer(e.opts.Clone())
	if err != nil {
		return nil, err
	}
	fatal := &fatalLog{err: make(chan error, 1)}
	srv.SetLoggerV2(fatal, false, false, false)
	srv.Start()
	deadline := time.Now().Add(readyWait)
	for !srv.ReadyForConnections(readyPoll) {
		select {
		case err := <-fatal.err:
			srv.Shutdown()
			return nil, err
		default:
		}
		if time.Now().After(deadline) {
			srv.Shutdown()
			return nil, errNotReady
		}
	}
	return srv, nil
}

const (
	readyWait = 30 * time.Second
	readyPoll = 50 * time.Millisecond
)

var (
	errNotReady    = fmt.Errorf("not ready after %s", readyWait)
	errListenInUse = errors.New("listen: address already in use")
)

// fatalLog is the embedded server's logger: it drops every line (kino's
// own log says what the server does) but the first fatal error, which the
// standalone nats-server would exit on, and hands it to start.
type fatalLog struct {
	once sync.Once
	err  chan error
}

func (l *fatalLog) Fatalf(format string, v ...any) {
	l.once.Do(func() {
		msg := fmt.Sprintf(format, v...)
		for _, a := range v {
			if err, ok := a.(error); ok && errors.Is(err, syscall.EADDRINUSE) {
				l.err <- fmt.Errorf("%w: %s", errListenInUse, msg)
				return
			}
		}
		l.err <- errors.New(msg)
	})
}

func (*fatalLog) Noticef(string, ...any) {}
func (*fatalLog) Warnf(string, ...any)   {}
func (*fatalLog) Errorf(string, ...any)  {}
func (*fatalLog) Debugf(string, ...any)  {}
func (*fatalLog) Tracef(string, ...any)  {}

func (e *Embedded) server() *server.Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.srv
}

func splitListen(listen string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", portStr, err)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

// clusterOptions fills opts' cluster part: listen, authenticated routes
// (the secret travels only inside this process, never in a flag or log),
// optional TLS.
func clusterOptions(opts *server.Options, dataDir string, c Cluster) error {
	host, port, err := splitListen(c.Listen)
	if err != nil {
		return fmt.Errorf("cluster listen address %q: %w", c.Listen, err)
	}
	secretFile := c.SecretFile
	if secretFile == "" {
		secretFile = ClusterSecretFile(dataDir)
	}
	raw, err := os.ReadFile(secretFile)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cluster secret %s is missing: run `kino cluster init` once and copy its output into every node's data directory", secretFile)
	}
	if err != nil {
		return fmt.Errorf("cluster secret: %w", err)
	}
	secret := strings.TrimSpace(string(raw))
	clear(raw)
	if len(secret) < 32 {
		return fmt.Errorf("cluster secret %s: too short (want at least 32 characters; kino cluster init makes one)", secretFile)
	}
	if len(c.Routes) == 0 {
		return errors.New("a cluster node needs routes to the other nodes (give every node the same list; a route to itself is ignored)")
	}
	name := c.Name
	if name == "" {
		name = DefaultNodeName(c.Listen)
	}
	opts.ServerName = name
	opts.Cluster = server.ClusterOpts{
		Name:     ClusterName,
		Host:     host,
		Port:     port,
		Username: routeUser,
		Password: secret,
	}
	for _, r := range c.Routes {
		u, err := routeURL(r)
		if err != nil {
			return err
		}
		u.User = url.UserPassword(routeUser, secret)
		opts.Routes = append(opts.Routes, u)
	}
	if c.CertFile != "" || c.KeyFile != "" || c.CAFile != "" {
		if c.CertFile == "" || c.KeyFile == "" || c.CAFile == "" {
			return errors.New("route TLS needs a certificate, its key and the CA that signed every node's certificate")
		}
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: c.CertFile, KeyFile: c.KeyFile, CaFile: c.CAFile, Verify: true, Timeout: 2})
		if err != nil {
			return fmt.Errorf("route TLS: %w", err)
		}
		// A route is both client and server: the CA checks either end
		// (as nats-server's own cluster tls block sets it up).
		tc.ClientAuth = tls.RequireAndVerifyClientCert
		tc.RootCAs = tc.ClientCAs
		opts.Cluster.TLSConfig = tc
		opts.Cluster.TLSTimeout = 2
	}
	return nil
}

// routeURL parses one --nats-routes entry: nats://host:port, or host:port.
func routeURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if !strings.Contains(raw, "://") {
		raw = "nats://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Port() == "" {
		return nil, fmt.Errorf("route %q: want nats://host:port", eventstore.RedactURL(raw))
	}
	if u.User != nil {
		return nil, fmt.Errorf("route %s: leave credentials out of route URLs: the cluster secret file gives them", eventstore.RedactURL(raw))
	}
	return u, nil
}

// Auth is what a client of role presents to this server: its seed file.
func (e *Embedded) Auth(role string) eventstore.Auth {
	return eventstore.Auth{CredsFile: CredsFile(e.dataDir, role), Role: role}
}

// URL is the client URL of the embedded server.
func (e *Embedded) URL() string { return e.server().ClientURL() }

// Name is the server's name (its JetStream peer name on a cluster).
func (e *Embedded) Name() string { return e.server().Name() }

// ClusterAddr is where the routes of other nodes reach this one
// (host:port), "" when it is not clustered.
func (e *Embedded) ClusterAddr() string {
	if a := e.server().ClusterAddr(); a != nil {
		return a.String()
	}
	return ""
}

// Peers is the number of other nodes this one has routes to.
func (e *Embedded) Peers() int { return e.server().NumRemotes() }

// Shutdown stops the server and waits until it has stopped.
func (e *Embedded) Shutdown() {
	e.mu.Lock()
	e.closed = true
	srv := e.srv
	e.mu.Unlock()
	srv.Shutdown()
	srv.WaitForShutdown()
}
