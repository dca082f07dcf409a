// Package tlstest writes the TLS material of tests that run NATS over TLS
// (client certificates, cluster routes): a CA and the certificates it
// signs for 127.0.0.1, as PEM files in a temp dir. It imports only the
// standard library, so the tests of package natsserver use it as well.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority valid for the hour around now; File is
// its certificate (ca.pem).
type CA struct {
	File   string
	t      testing.TB
	dir    string
	key    *ecdsa.PrivateKey
	tmpl   *x509.Certificate
	serial int64
}

// NewCA makes a CA named name and writes its certificate.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	ca := &CA{t: t, dir: t.TempDir(), key: newKey(t), serial: 1}
	ca.tmpl = &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, ca.tmpl, ca.tmpl, &ca.key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	ca.File = ca.write("ca.pem", "CERTIFICATE", der)
	return ca
}

// Issue writes a certificate for 127.0.0.1 named name, for usage, and its
// key (name.pem, name-key.pem), and returns their paths.
func (ca *CA) Issue(name string, usage ...x509.ExtKeyUsage) (cert, key string) {
	ca.t.Helper()
	k := newKey(ca.t)
	ca.serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(ca.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.tmpl, &k.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		ca.t.Fatal(err)
	}
	return ca.write(name+".pem", "CERTIFICATE", der), ca.write(name+"-key.pem", "EC PRIVATE KEY", kder)
}

// write writes der as a PEM block of typ to name in the CA's directory.
func (ca *CA) write(name, typ string, der []byte) string {
	ca.t.Helper()
	p := filepath.Join(ca.dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		ca.t.Fatal(err)
	}
	return p
}

// newKey is a new P-256 key.
func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
