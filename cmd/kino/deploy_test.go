package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The systemd units in docs/deploy pass systemd-analyze verify, run kino
// serve and kino worker with flags kino knows, and keep their hardening.
func TestSystemdUnits(t *testing.T) {
	t.Parallel()
	units, err := filepath.Glob("../../docs/deploy/*.service")
	if err != nil || len(units) != 2 {
		t.Fatalf("units %v: %v", units, err)
	}
	analyze, _ := exec.LookPath("systemd-analyze")
	bin := buildKino(t)
	for _, u := range units {
		t.Run(filepath.Base(u), func(t *testing.T) {
			b, err := os.ReadFile(u)
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			for _, want := range []string{"NoNewPrivileges=yes", "ProtectSystem=strict", "CapabilityBoundingSet=", "SystemCallFilter=@system-service", "PrivateTmp=yes"} {
				if !strings.Contains(text, want) {
					t.Errorf("%s lacks %s", u, want)
				}
			}
			// The command line is one kino takes.
			var exe []string
			for _, line := range strings.Split(text, "\n") {
				if rest, ok := strings.CutPrefix(line, "ExecStart="); ok {
					exe = strings.Fields(rest)
				}
			}
			if len(exe) < 2 || exe[0] != "/usr/local/bin/kino" {
				t.Fatalf("ExecStart %v", exe)
			}
			if out, err := exec.Command(bin, append(exe[1:], "--help")...).CombinedOutput(); err != nil {
				t.Fatalf("kino %v --help: %v\n%s", exe[1:], err, out)
			}
			if analyze == "" {
				t.Skip("systemd-analyze is not installed here: the unit's syntax is not checked")
			}
			dir := t.TempDir()
			unit := filepath.Join(dir, filepath.Base(u))
			if err := os.WriteFile(unit, []byte(strings.ReplaceAll(text, "/usr/local/bin/kino", bin)), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(analyze, "verify", unit).CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
				t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
			}
		})
	}
}
