package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/eventstoretest"
	"github.com/kino-video/kino/eventstore/eventstoretest/tlstest"
	"github.com/kino-video/kino/eventstore/natsserver"
	"github.com/kino-video/kino/eventstore/queue"
)

// A forged key: a local process publishes a KeyIssued with a
// hash of its choosing (or a PlanChanged) on kino's NATS and then uses the
// key. Without credentials it cannot even connect; with a worker's seed
// the server refuses the publish; the key never authenticates.
func TestForgedKeyIssuedIsImpossible(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir())
	h.account("acme", domain.PlanFree)
	forgedKey, err := domain.NewAPIKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ev := domain.Event{ID: "01JFORGED00000000000000000", Type: domain.TypeKeyIssued, Version: 1, AggregateID: "acme", OccurredAt: time.Now().UTC(),
		Data: domain.KeyIssued{KeyID: "01JFORGED00000000000000000", Hash: domain.HashKey(forgedKey), Prefix: forgedKey[:len(domain.KeyPrefix)+4], Label: "forged"}}
	body, err := domain.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	subject := "account.acme." + domain.TypeKeyIssued

	if nc, err := nats.Connect(h.nats); !errors.Is(err, nats.ErrAuthorization) {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("a client without credentials: %v", err)
	}

	violations := make(chan error, 4)
	worker, err := nats.NkeyOptionFromSeed(natsserver.CredsFile(h.data, eventstore.RoleWorker))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(h.nats, worker, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	before := countEvents(t, h, subject)
	if err := nc.Publish(subject, body); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-violations:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("want a permission violation, got %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker role published account.>")
	}
	h.settle()
	if n := countEvents(t, h, subject); n != before {
		t.Fatalf("KeyIssued events %d, before %d", n, before)
	}
	wantError(t, h.do("GET", "/v1/videos", forgedKey, nil), 401, "Invalid API key")
}

// Operator commands reach NATS only with credentials: by default those
// under --data; pointed at a directory without them, each is refused with
// a message that says what to give. kino.admin.replay included.
func TestCLIWithoutCredentialsIsRefused(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir())
	h.account("acme", domain.PlanFree)
	empty := t.TempDir()
	for _, args := range [][]string{
		{"accounts", "create", "mallory"},
		{"accounts", "set-plan", "acme", "business"},
		{"keys", "create", "acme"},
		{"keys", "list", "acme"},
		{"keys", "revoke", "01ARZ3NDEKTSV4RRFFQ69G5FAV"},
		{"collections", "create", "acme", "x", "X"},
		{"history", "01ARZ3NDEKTSV4RRFFQ69G5FAV"},
		{"replay", "--verify"},
		{"worker", "--webhook-workers", "0"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errOut, code := runCLI(append(args, "--nats", h.nats, "--data", empty)...)
			if code == 0 || !strings.Contains(errOut, "not authorized") || !strings.Contains(errOut, "--nats-creds") {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
		})
	}
	// Explicit credentials work from anywhere; another role's are refused
	// what it may not do.
	if _, errOut, code := runCLI("keys", "list", "acme", "--nats", h.nats, "--data", empty,
		"--nats-creds", natsserver.CredsFile(h.data, eventstore.RoleAdmin)); code != 0 {
		t.Fatalf("--nats-creds: %s", errOut)
	}
	// The worker role may not call kino.admin.replay; with its replies
	// confined to its own inbox prefix, it cannot even open an operator
	// command's store.
	if _, errOut, code := runCLI("replay", "--verify", "--nats", h.nats, "--nats-creds", natsserver.CredsFile(h.data, eventstore.RoleWorker)); code == 0 {
		t.Fatal("the worker role ran kino.admin.replay")
	} else if !strings.Contains(errOut, "may not call it") && !strings.Contains(errOut, "open event store") {
		t.Fatalf("worker role replay: %s", errOut)
	}
}

// `kino worker` on the same machine finds its own seed and the secret key
// under --data; it transcodes, fans out (given the API's --cdn-url) and
// delivers signed webhooks with nothing more than the worker role allows.
// kino serve fans out too: each event still reaches the subscription once.
func TestKinoWorkerRunsWithItsOwnRole(t *testing.T) {
	t.Parallel()
	h := start(t, t.TempDir()) // no workers in kino serve
	key := h.account("acme", domain.PlanBusiness)
	wantStatus(t, h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}), 201)
	rc := newReceiver(t)
	hookID, secret := h.subscribe(key, rc.srv.URL, "video.completed")
	id := h.uploadID(key, "main", "a.mp4", clip(t))
	passable(t, h.data) // kino worker's flags switch ffmpeg to nobody under root

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errb bytes.Buffer
	go func() {
		done <- run(ctx, []string{"worker", "--nats", h.nats, "--data", h.data, "--workers", "1", "--webhook-workers", "1",
			"--webhooks-allow-private", "--webhook-timeout", "5s", "--log-level", "error", "--cdn-url", h.m.CDNURL + "/"}, &out, &errb)
	}()
	stopped := false
	stop := func() int {
		if stopped {
			return 0
		}
		stopped = true
		cancel()
		return <-done
	}
	defer stop()

	h.waitStatus(key, id, domain.StatusCompleted)
	if m := verify(t, rc.next(t), secret); m["type"] != "video.completed" {
		t.Fatalf("delivered %v", m["type"])
	}
	wantStatus(t, h.do("POST", "/v1/webhooks/"+hookID+"/test", key, nil), 202)
	if m := verify(t, rc.next(t), secret); m["type"] != "webhook.test" {
		t.Fatalf("delivered %v", m["type"])
	}
	h.waitDeliveriesDone()
	if n := rc.count(); n != 2 {
		t.Fatalf("the receiver got %d deliveries, want 2", n)
	}
	// Its heartbeat, written with the worker role, is among the workers seen.
	eventstoretest.EventuallyEvery(t, "kino worker's heartbeat in "+queue.WorkersBucket, 20*time.Millisecond, func() (bool, string) {
		return hasWorker(t, h, "worker"), "stderr: " + errb.String()
	})
	if code := stop(); code != 0 {
		t.Fatalf("kino worker exit %d: %s", code, errb.String())
	}
}

// No webhook secret and no API key can be read from the files of the
// event stream or the read models: `strings data/nats/... projections.db`
// finds none, also of a deleted webhook. Deliveries still verify with the
// secret shown at creation.
func TestNoSecretInClearOnDisk(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	h := start(t, data, withWebhooks)
	key := h.account("acme", domain.PlanPro)
	rc := newReceiver(t)
	live, liveSecret := h.subscribe(key, rc.srv.URL+"/live", "video.completed")
	gone, goneSecret := h.subscribe(key, rc.srv.URL+"/gone", "video.failed")
	wantStatus(t, h.do("DELETE", "/v1/webhooks/"+gone, key, nil), 200)
	wantStatus(t, h.do("POST", "/v1/webhooks/"+live+"/test", key, nil), 202)
	if m := verify(t, rc.next(t), liveSecret); m["type"] != "webhook.test" {
		t.Fatalf("delivered %v", m["type"])
	}
	h.waitDeliveriesDone()
	h.stop() // everything written and closed

	var files []string
	err := filepath.WalkDir(filepath.Join(data, "nats"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(data, "projections.db"))
	secrets := map[string]string{
		"live webhook secret": liveSecret, "live webhook secret's hex": strings.TrimPrefix(liveSecret, "whsec_"),
		"deleted webhook secret": goneSecret, "deleted webhook secret's hex": strings.TrimPrefix(goneSecret, "whsec_"),
		"API key": key, "API key's random part": strings.TrimPrefix(key, domain.KeyPrefix),
	}
	sawURL := false
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for what, s := range secrets {
			if len(s) < 16 {
				t.Fatalf("%s %q too short to search for", what, s)
			}
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s found in clear in %s", what, f)
			}
		}
		// The search can succeed: what is not secret is there in clear.
		sawURL = sawURL || bytes.Contains(b, []byte(rc.srv.URL+"/gone"))
	}
	if !sawURL {
		t.Fatal("the receiver URL is in no file: the search proves nothing")
	}
}

// An operator's NATS (--nats) authenticates kino with the operator's
// credentials: user and password (file, environment or URL) or a token
// (file or environment). Without them every command is refused.
func TestExternalNATSWithOperatorCredentials(t *testing.T) {
	const user, password, token = "kino", "pw-0f1e2d3c4b5a", "tok-9a8b7c6d5e4f"
	dir := t.TempDir()
	passwordFile, tokenFile := filepath.Join(dir, "password"), filepath.Join(dir, "token")
	if err := os.WriteFile(passwordFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pki := newPKI(t)
	tests := []struct {
		name   string
		server func(*server.Options)
		serve  eventstore.Auth
		ok     [][]string // credential arguments that work
		env    map[string]string
		refuse string // what a command without them is told
	}{
		{
			name:   "user and password",
			server: func(o *server.Options) { o.Username, o.Password = user, password },
			serve:  eventstore.Auth{User: user, Password: password},
			ok:     [][]string{{"--nats-user", user, "--nats-password-file", passwordFile}},
			env:    map[string]string{"KINO_NATS_USER": user, "KINO_NATS_PASSWORD": password},
			refuse: "not authorized",
		},
		{
			name:   "token",
			server: func(o *server.Options) { o.Authorization = token },
			serve:  eventstore.Auth{Token: token},
			ok:     [][]string{{"--nats-token-file", tokenFile}},
			env:    map[string]string{"KINO_NATS_TOKEN": token},
			refuse: "not authorized",
		},
		{
			name: "TLS with a client certificate",
			server: func(o *server.Options) {
				tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: pki.serverCert, KeyFile: pki.serverKey, CaFile: pki.ca, Verify: true})
				if err != nil {
					t.Fatal(err)
				}
				o.TLSConfig, o.TLS, o.TLSVerify, o.TLSTimeout = tc, true, true, 5
			},
			serve:  eventstore.Auth{CAFile: pki.ca, CertFile: pki.clientCert, KeyFile: pki.clientKey},
			ok:     [][]string{{"--nats-tls-ca", pki.ca, "--nats-tls-cert", pki.clientCert, "--nats-tls-key", pki.clientKey}},
			env:    map[string]string{"KINO_NATS_TLS_CA": pki.ca, "KINO_NATS_TLS_CERT": pki.clientCert, "KINO_NATS_TLS_KEY": pki.clientKey},
			refuse: "certificate",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true}
			tt.server(opts)
			ns, err := server.NewServer(opts)
			if err != nil {
				t.Fatal(err)
			}
			ns.Start()
			t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
			if !ns.ReadyForConnections(10 * time.Second) {
				t.Fatal("nats not ready")
			}
			url := ns.ClientURL()
			h := start(t, t.TempDir(), func(c *Config) { c.NATSURL, c.NATSAuth = url, tt.serve })

			if _, errOut, code := runCLI("accounts", "create", "acme", "--nats", url, "--data", h.data); code == 0 || !strings.Contains(errOut, tt.refuse) {
				t.Fatalf("without credentials: exit %d %s", code, errOut)
			}
			for _, args := range tt.ok {
				if _, errOut, code := runCLI(append([]string{"accounts", "create", "acme", "--nats", url}, args...)...); code != 0 {
					t.Fatalf("%v: %s", args, errOut)
				}
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			if _, errOut, code := runCLI("keys", "create", "acme", "--nats", url); code != 0 {
				t.Fatalf("credentials from the environment: %s", errOut)
			}
			// --help shows no secret taken from the environment.
			t.Setenv("KINO_NATS_URL", strings.Replace(url, "nats://", "nats://"+user+":"+password+"@", 1))
			help, _, _ := runCLI("keys", "list", "--help")
			if strings.Contains(help, password) || strings.Contains(help, token) {
				t.Fatalf("--help shows a secret:\n%s", help)
			}
		})
	}
}

// A subscription written before secrets were sealed (WebhookSubscribed v1,
// its secret in clear, read with Secret set) keeps being delivered, signed
// with that secret; the read model does not copy it.
func TestWebhookFromBeforeSealingStillDelivers(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	h := start(t, data, withWebhooks)
	key := h.account("acme", domain.PlanPro)
	rc := newReceiver(t)
	const clear = "whsec_00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	id := h.m.store.NewID()
	if _, err := h.m.store.Append(context.Background(), domain.StreamID{Aggregate: domain.AggWebhook, ID: id}, 0,
		[]domain.Payload{domain.WebhookSubscribed{Account: "acme", URL: rc.srv.URL, Events: []string{domain.EventVideoCompleted}, Secret: clear}}); err != nil {
		t.Fatal(err)
	}
	h.settle()
	wantStatus(t, h.do("POST", "/v1/webhooks/"+id+"/test", key, nil), 202)
	if m := verify(t, rc.next(t), clear); m["type"] != "webhook.test" {
		t.Fatalf("delivered %v", m["type"])
	}
	h.waitDeliveriesDone()
	h.stop()
	db, err := os.ReadFile(filepath.Join(data, "projections.db"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(db, []byte(clear)) || !bytes.Contains(db, []byte(rc.srv.URL)) {
		t.Fatal("the read model holds a v1 subscription's clear secret (or not the subscription)")
	}
}

// pki is a CA, a server certificate for 127.0.0.1 and a client
// certificate, as PEM files.
type pki struct{ ca, serverCert, serverKey, clientCert, clientKey string }

func newPKI(t *testing.T) pki {
	t.Helper()
	ca := tlstest.NewCA(t, "kino test CA")
	p := pki{ca: ca.File}
	p.serverCert, p.serverKey = ca.Issue("server", x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = ca.Issue("client", x509.ExtKeyUsageClientAuth)
	return p
}

// hasWorker reports whether a heartbeat of role is live.
func hasWorker(t *testing.T, h *harness, role string) bool {
	t.Helper()
	ws, err := queue.New(h.m.store).Workers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Role == role {
			return true
		}
	}
	return false
}
