package eventstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
)

// Auth is how a client proves who it is to NATS, and how it checks the
// server over TLS. The zero value sends no credentials. Secrets come from
// files or the caller's environment, never from flag defaults.
type Auth struct {
	// CredsFile is an nkey seed file (what kino serve generates) or a
	// decorated .creds file (user JWT and seed, from nsc).
	CredsFile string
	User      string // with Password
	Password  string
	Token     string

	CAFile   string // trust this CA for the server's certificate
	CertFile string // client certificate, with KeyFile
	KeyFile  string

	// Role is the role these credentials are of, when known (Roles): a
	// worker's connection takes its replies on WorkerInbox, the only
	// inbox its role may hear.
	Role string
}

// Empty reports whether a carries no credential at all.
func (a Auth) Empty() bool {
	return a.CredsFile == "" && a.User == "" && a.Password == "" && a.Token == ""
}

func (a Auth) options() ([]nats.Option, error) {
	var opts []nats.Option
	if a.Role == RoleWorker {
		opts = append(opts, nats.CustomInboxPrefix(WorkerInbox))
	}
	if a.CredsFile != "" {
		raw, err := os.ReadFile(a.CredsFile)
		if err != nil {
			return nil, fmt.Errorf("nats credentials: %w", err)
		}
		isJWT := bytes.Contains(raw, []byte("BEGIN NATS USER JWT"))
		clear(raw)
		if isJWT {
			opts = append(opts, nats.UserCredentials(a.CredsFile))
		} else {
			o, err := nats.NkeyOptionFromSeed(a.CredsFile)
			if err != nil {
				return nil, fmt.Errorf("nats credentials %s: not an nkey seed or .creds file: %w", a.CredsFile, err)
			}
			opts = append(opts, o)
		}
	}
	if a.User != "" || a.Password != "" {
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	}
	if a.Token != "" {
		opts = append(opts, nats.Token(a.Token))
	}
	if a.CAFile != "" {
		opts = append(opts, nats.RootCAs(a.CAFile))
	}
	if a.CertFile != "" || a.KeyFile != "" {
		if a.CertFile == "" || a.KeyFile == "" {
			return nil, errors.New("nats tls: a client certificate needs both a certificate and a key file")
		}
		opts = append(opts, nats.ClientCert(a.CertFile, a.KeyFile))
	}
	return opts, nil
}

// Roles of the clients of an embedded server; each has its own nkey.
const (
	RoleServe  = "serve"  // kino serve: everything
	RoleAdmin  = "admin"  // the operator's CLI: everything but answering kino.admin.>
	RoleWorker = "worker" // kino worker: only what transcoding and delivery need

	// WorkerInbox is the prefix of a worker's reply subjects
	// (Config.Inbox): the only replies its role may hear.
	WorkerInbox = "_INBOX_worker"
)

// Roles lists every role an embedded server knows.
var Roles = []string{RoleServe, RoleAdmin, RoleWorker}

// Connect dials url with a's credentials, as name: a bare connection for
// the tools that must work on a server before kino's streams are there
// (restoring a backup).
func Connect(url string, a Auth, name string) (*nats.Conn, error) {
	opts, err := a.options()
	if err != nil {
		return nil, err
	}
	return nats.Connect(url, append(opts, nats.Name(name))...)
}
