package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/natsserver"
	"github.com/kino-video/kino/transport/seal"
)

// natsAuthFlags are the credentials a command presents to NATS. Paths and
// user names may show in --help; passwords and tokens come only from files
// or the environment, read when the command runs.
type natsAuthFlags struct {
	creds, user, passwordFile, tokenFile string
	ca, cert, key                        string
}

func (f *natsAuthFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.creds, "nats-creds", env("KINO_NATS_CREDS", ""), "NATS credentials: an nkey seed file or a .creds file (env KINO_NATS_CREDS; default: the one kino serve generated under --data)")
	fs.StringVar(&f.user, "nats-user", env("KINO_NATS_USER", ""), "NATS user name; its password comes from --nats-password-file or env KINO_NATS_PASSWORD (env KINO_NATS_USER)")
	fs.StringVar(&f.passwordFile, "nats-password-file", env("KINO_NATS_PASSWORD_FILE", ""), "file holding the NATS password (env KINO_NATS_PASSWORD_FILE)")
	fs.StringVar(&f.tokenFile, "nats-token-file", env("KINO_NATS_TOKEN_FILE", ""), "file holding a NATS token; or env KINO_NATS_TOKEN (env KINO_NATS_TOKEN_FILE)")
	fs.StringVar(&f.ca, "nats-tls-ca", env("KINO_NATS_TLS_CA", ""), "PEM file of the CA that signed the NATS server's certificate (env KINO_NATS_TLS_CA)")
	fs.StringVar(&f.cert, "nats-tls-cert", env("KINO_NATS_TLS_CERT", ""), "PEM client certificate for NATS TLS, with --nats-tls-key (env KINO_NATS_TLS_CERT)")
	fs.StringVar(&f.key, "nats-tls-key", env("KINO_NATS_TLS_KEY", ""), "PEM private key of --nats-tls-cert (env KINO_NATS_TLS_KEY)")
}

// auth resolves the flags. When none names a credential and natsURL
// carries none, the seed kino serve generated for role under data is used
// if it exists (discover false: never).
func (f *natsAuthFlags) auth(data, role, natsURL string, discover bool) (eventstore.Auth, error) {
	a := eventstore.Auth{CredsFile: f.creds, User: f.user, CAFile: f.ca, CertFile: f.cert, KeyFile: f.key, Role: role}
	var err error
	if a.Password, err = secretFrom(f.passwordFile, "KINO_NATS_PASSWORD"); err != nil {
		return a, fmt.Errorf("--nats-password-file: %w", err)
	}
	if a.Token, err = secretFrom(f.tokenFile, "KINO_NATS_TOKEN"); err != nil {
		return a, fmt.Errorf("--nats-token-file: %w", err)
	}
	if discover && a.Empty() && !urlHasCredentials(natsURL) {
		if p := natsserver.CredsFile(data, role); fileExists(p) {
			a.CredsFile = p
		}
	}
	return a, nil
}

// secretFrom reads a secret from file (trailing newline dropped) or, when
// no file is named, from the environment variable name.
func secretFrom(file, name string) (string, error) {
	if file == "" {
		return os.Getenv(name), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func urlHasCredentials(raw string) bool {
	for _, p := range strings.Split(raw, ",") {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			return true
		}
	}
	return false
}

// natsClient is how an operator command or a worker reaches kino's NATS.
type natsClient struct {
	url     string
	urlFlag *pflag.Flag // --nats, to know whether it was given
	data    string
	role    string
	natsAuthFlags
}

// natsURLFile, under --data, holds the client URL of the embedded NATS
// server that kino serve last started there: the operator commands given
// only --data reach that kino whatever its --nats-listen.
const natsURLFile = "nats.url"

// writeNATSURL records the embedded server's client URL under data.
func writeNATSURL(data, u string) error {
	tmp := filepath.Join(data, natsURLFile+".tmp")
	if err := os.WriteFile(tmp, []byte(u+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(data, natsURLFile))
}

// natsFlags adds --nats (KINO_NATS_URL), --data (unless the command has
// it already: then c.data must be bound to it by the caller) and the
// credential flags to a command acting as role.
func natsFlags(fs *pflag.FlagSet, c *natsClient, role string) {
	c.role = role
	fs.StringVar(&c.url, "nats", env("KINO_NATS_URL", "nats://127.0.0.1:4222"), "NATS server of the kino instance (env KINO_NATS_URL; default: the one kino serve last started under --data, else nats://127.0.0.1:4222; prefer credential files to secrets in the URL, which ps shows)")
	hideURLSecret(fs, "nats")
	c.urlFlag = fs.Lookup("nats")
	if fs.Lookup("data") == nil {
		fs.StringVar(&c.data, "data", env("KINO_DATA", "./data"), "data directory of the kino serve, whose generated NATS credentials are used (env KINO_DATA)")
	}
	c.register(fs)
}

// hideURLSecret keeps a password in a URL taken from the environment out
// of --help.
func hideURLSecret(fs *pflag.FlagSet, name string) {
	if f := fs.Lookup(name); f != nil {
		f.DefValue = eventstore.RedactURL(f.DefValue)
	}
}

// config is the event store configuration of this client, named name.
func (c *natsClient) config(name string) (eventstore.Config, error) {
	if c.urlFlag != nil && !c.urlFlag.Changed && os.Getenv("KINO_NATS_URL") == "" {
		if b, err := os.ReadFile(filepath.Join(c.data, natsURLFile)); err == nil {
			if u := strings.TrimSpace(string(b)); strings.HasPrefix(u, "nats://") || strings.HasPrefix(u, "tls://") {
				c.url = u
			}
		}
	}
	a, err := c.auth(c.data, c.role, c.url, true)
	if err != nil {
		return eventstore.Config{}, err
	}
	return eventstore.Config{URL: c.url, Auth: a, Name: name}, nil
}

// explain adds what to do to NATS's refusal of a client.
func (c *natsClient) explain(err error, a eventstore.Auth) error {
	if !errors.Is(err, eventstore.ErrUnauthorized) {
		return err
	}
	if a.Empty() && !urlHasCredentials(c.url) {
		return fmt.Errorf("%w (no credentials given and none found at %s: pass --data of the kino serve, or --nats-creds)", err, natsserver.CredsFile(c.data, c.role))
	}
	return fmt.Errorf("%w by %s: is that the NATS of the kino serve whose --data is %s? (check --nats, or the credentials: --nats-creds, --nats-user, --nats-token-file)",
		err, eventstore.RedactURL(c.url), c.data)
}

// secretKey is the key sealing webhook secrets: KINO_SECRET_KEY when set,
// else the file (default <data>/secret.key), created when create is set.
func secretKey(file, data string, create bool) (*seal.Key, error) {
	if v := os.Getenv(seal.EnvKey); v != "" {
		k, err := seal.Parse(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", seal.EnvKey, err)
		}
		return k, nil
	}
	if file == "" {
		file = filepath.Join(data, seal.KeyFile)
	}
	if create {
		return seal.LoadOrCreate(file)
	}
	k, err := seal.Load(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: webhook delivery needs kino serve's secret key: copy its %s here, or set %s or --secret-key-file", err, seal.KeyFile, seal.EnvKey)
	}
	return k, err
}

// secretKeyFlag adds --secret-key-file.
func secretKeyFlag(fs *pflag.FlagSet, file *string) {
	fs.StringVar(file, "secret-key-file", env("KINO_SECRET_KEY_FILE", ""), "key sealing webhook secrets (env KINO_SECRET_KEY_FILE; default <data>/secret.key; env KINO_SECRET_KEY gives the key itself, base64 or hex of 32 bytes)")
}

// clusterFlags make the embedded NATS of kino serve or kino worker a node
// of a NATS cluster. The routes' secret and the role nkeys come from files
// under --data (kino cluster init), never from a flag.
type clusterFlags struct {
	listen, routes, name, secretFile string
	cert, key, ca                    string
	readyWait                        time.Duration
}

func (f *clusterFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.listen, "nats-cluster", env("KINO_NATS_CLUSTER", ""), "make the embedded NATS a cluster node: host:port where the other nodes' routes connect, e.g. 0.0.0.0:6222 (env KINO_NATS_CLUSTER; needs kino cluster init's credentials under --data)")
	fs.StringVar(&f.routes, "nats-routes", env("KINO_NATS_ROUTES", ""), "comma-separated routes to the cluster's nodes, nats://host:6222,...; give every node the same list, itself included (env KINO_NATS_ROUTES)")
	fs.StringVar(&f.name, "nats-name", env("KINO_NATS_NAME", ""), "this node's server name, unique in the cluster and kept across restarts (env KINO_NATS_NAME; default kino-<hostname>-<cluster port>)")
	fs.StringVar(&f.secretFile, "nats-cluster-secret-file", env("KINO_NATS_CLUSTER_SECRET_FILE", ""), "file holding the routes' shared secret (env KINO_NATS_CLUSTER_SECRET_FILE; default <data>/nats-creds/cluster.secret)")
	fs.StringVar(&f.cert, "nats-cluster-tls-cert", env("KINO_NATS_CLUSTER_TLS_CERT", ""), "PEM certificate of this node for TLS on the routes, with --nats-cluster-tls-key and --nats-cluster-tls-ca (env KINO_NATS_CLUSTER_TLS_CERT)")
	fs.StringVar(&f.key, "nats-cluster-tls-key", env("KINO_NATS_CLUSTER_TLS_KEY", ""), "PEM private key of --nats-cluster-tls-cert (env KINO_NATS_CLUSTER_TLS_KEY)")
	fs.StringVar(&f.ca, "nats-cluster-tls-ca", env("KINO_NATS_CLUSTER_TLS_CA", ""), "PEM CA that signed every node's route certificate (env KINO_NATS_CLUSTER_TLS_CA)")
	fs.DurationVar(&f.readyWait, "nats-ready-timeout", envDuration("KINO_NATS_READY_TIMEOUT", 2*time.Minute), "on a cluster, how long to wait at start for enough nodes to be up before giving up (env KINO_NATS_READY_TIMEOUT)")
}

// cluster is the node's cluster configuration, nil when --nats-cluster is
// not given.
func (f *clusterFlags) cluster() (*natsserver.Cluster, error) {
	if f.listen == "" {
		if f.routes != "" || f.name != "" || f.secretFile != "" || f.cert != "" || f.key != "" || f.ca != "" {
			return nil, errors.New("--nats-routes, --nats-name and the --nats-cluster-* flags need --nats-cluster")
		}
		return nil, nil
	}
	if f.readyWait <= 0 {
		return nil, errors.New("--nats-ready-timeout must be positive")
	}
	c := &natsserver.Cluster{Listen: f.listen, Name: f.name, SecretFile: f.secretFile, CertFile: f.cert, KeyFile: f.key, CAFile: f.ca}
	for _, r := range strings.Split(f.routes, ",") {
		if r = strings.TrimSpace(r); r != "" {
			c.Routes = append(c.Routes, r)
		}
	}
	if len(c.Routes) == 0 {
		return nil, errors.New("--nats-cluster needs --nats-routes: the routes to the cluster's nodes (the same list on every node, itself included)")
	}
	return c, nil
}

// clusterReplicas is the default replica count on cluster: one per node
// named in its routes (this node counted once, listed or not), at most 3.
func clusterReplicas(c *natsserver.Cluster) int {
	nodes := map[string]bool{}
	self := false
	for _, r := range c.Routes {
		if !strings.Contains(r, "://") {
			r = "nats://" + r
		}
		u, err := url.Parse(r)
		if err != nil {
			continue
		}
		nodes[u.Host] = true
		if isSelf(u.Hostname(), u.Port(), c.Listen) {
			self = true
		}
	}
	n := len(nodes)
	if !self {
		n++
	}
	return min(3, n)
}

// isSelf reports whether a route to host:port reaches the cluster listen
// address of this node.
func isSelf(host, port, listen string) bool {
	lhost, lport, err := net.SplitHostPort(listen)
	if err != nil || port != lport {
		return false
	}
	if host == lhost {
		return true
	}
	if lip := net.ParseIP(lhost); lhost != "" && (lip == nil || !lip.IsUnspecified()) {
		return false
	}
	// Listening on every address: a route to any address of this host
	// is a route to itself.
	ips, err := net.LookupIP(host)
	if err != nil {
		return false
	}
	local, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ip := range ips {
		for _, a := range local {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}
