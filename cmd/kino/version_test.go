package main

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		info *debug.BuildInfo
		want []string
		not  []string
	}{
		{"tagged and clean", &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "3659c80aa"}, {Key: "vcs.time", Value: "2026-11-22T18:00:00Z"}, {Key: "vcs.modified", Value: "false"},
		}}, []string{"kino v1.4.0\n", "commit 3659c80aa (2026-11-22T18:00:00Z)\n", "built with go1.99.1 for "}, []string{"uncommitted"}},
		{"checkout with changes", &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"},
		}}, []string{"kino (devel)\n", "commit abc, with uncommitted changes\n"}, nil},
		{"no vcs information", &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "(devel)"}}, []string{"kino (devel)\n", "built with go1.99.1"}, []string{"commit"}},
		{"no build information", nil, []string{"kino (unknown)\n", "built with " + runtime.Version()}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := describeBuild(tt.info)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("unexpected %q in:\n%s", n, got)
				}
			}
		})
	}
}

// A build the toolchain could not stamp shows the commit the build recipe
// stamped. (Not parallel: it sets the package's stamp.)
func TestDescribeBuildStampedByTheRecipe(t *testing.T) {
	commit, commitTime = "0123abc-dirty", "2026-11-27T05:00:00Z"
	defer func() { commit, commitTime = "", "" }()
	got := describeBuild(&debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "(devel)"}})
	if !strings.Contains(got, "commit 0123abc (2026-11-27T05:00:00Z), with uncommitted changes\n") {
		t.Fatalf("stamped build:\n%s", got)
	}
	got = describeBuild(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "fff"}}})
	if !strings.Contains(got, "commit fff\n") {
		t.Fatalf("the toolchain's own stamp comes first:\n%s", got)
	}
}

// TestVersionCommandAndFlag: `kino version` and `kino --version` print the
// same description of this build, exit 0.
func TestVersionCommandAndFlag(t *testing.T) {
	t.Parallel()
	var outs []string
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 0 {
			t.Fatalf("kino %s: exit %d: %s", args[0], code, errb.String())
		}
		if !strings.HasPrefix(out.String(), "kino ") || !strings.Contains(out.String(), "built with go") {
			t.Fatalf("kino %s printed %q", args[0], out.String())
		}
		outs = append(outs, out.String())
	}
	if outs[0] != outs[1] {
		t.Fatalf("kino version and kino --version differ:\n%s\n%s", outs[0], outs[1])
	}
}
