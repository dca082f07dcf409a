package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
)

// --help never prints a secret taken from the environment as a flag
// default; it names the variable instead. The secret is still used.
func TestHelpShowsNoSecrets(t *testing.T) {
	const apiKey = "svc_live_SECRETsecretSECRETsecret0123"
	const adminToken = "ADMIN-secret-token-0123456789abcdef"
	t.Setenv("KINO_API_KEY", apiKey)
	t.Setenv("KINO_ADMIN_TOKEN", adminToken)
	tests := []struct {
		name string
		args []string
		env  string
	}{
		{name: "upload", args: []string{"upload", "--help"}, env: "(env KINO_API_KEY)"},
		{name: "videos list", args: []string{"videos", "list", "--help"}, env: "(env KINO_API_KEY)"},
		{name: "videos get", args: []string{"videos", "get", "--help"}, env: "(env KINO_API_KEY)"},
		{name: "videos delete", args: []string{"videos", "delete", "--help"}, env: "(env KINO_API_KEY)"},
		{name: "serve", args: []string{"serve", "--help"}, env: "(env KINO_ADMIN_TOKEN)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(tc.args...)
			if code != 0 || !strings.Contains(out, "Usage") || !strings.Contains(out, tc.env) {
				t.Fatalf("kino %v: exit %d\n%s%s", tc.args, code, out, errOut)
			}
			for _, secret := range []string{apiKey, adminToken, "SECRETsecret", "ADMIN-secret"} {
				if strings.Contains(out+errOut, secret) {
					t.Fatalf("kino %v shows a secret from the environment:\n%s", tc.args, out)
				}
			}
		})
	}

	// The key from the environment is what the client uses.
	h := start(t, t.TempDir())
	key := h.account("acme", domain.PlanPro)
	t.Setenv("KINO_API_KEY", key)
	if out, errOut, code := runCLI("videos", "list", "--url", h.url+"/v1"); code != 0 {
		t.Fatalf("videos list with KINO_API_KEY: exit %d\n%s%s", code, out, errOut)
	}
}

// The admin token comes from a flag, the environment or a file (not two of
// them) and has at least 24 characters; kino serve refuses to start
// otherwise, with an error that says why.
func TestAdminToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("  0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("tooshort\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		flag, env string
		file      string
		want      string
		err       string
	}{
		{name: "none", want: ""},
		{name: "flag", flag: "0123456789abcdef01234567", want: "0123456789abcdef01234567"},
		{name: "environment", env: "env-token-0123456789abcdef", want: "env-token-0123456789abcdef"},
		{name: "file, whitespace trimmed", file: file, want: "0123456789abcdef0123456789abcdef"},
		{name: "short flag", flag: "operator-secret", err: "at least 24 characters"},
		{name: "short file", file: short, err: "at least 24 characters"},
		{name: "flag and file", flag: "0123456789abcdef01234567", file: file, err: "give the admin token once"},
		{name: "missing file", file: filepath.Join(dir, "nope"), err: "--admin-token-file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KINO_ADMIN_TOKEN", tc.env)
			got, err := adminToken(tc.flag, tc.file)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("adminToken = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	t.Setenv("KINO_ADMIN_TOKEN", "")
	_, errOut, code := runCLI("serve", "--admin-token", "operator-secret", "--data", filepath.Join(dir, "data"), "--addr", "127.0.0.1:0", "--nats-listen", "127.0.0.1:0")
	if code == 0 || !strings.Contains(errOut, "at least 24 characters") || strings.Contains(errOut, "operator-secret") {
		t.Fatalf("serve with a short token: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Fatal("serve started before refusing the token")
	}
}
