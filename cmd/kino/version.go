package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// commit and commitTime are stamped by the build recipe (`just build`:
// -ldflags "-X main.commit=... -X main.commitTime=..."), for the builds
// the toolchain records no VCS data for (git missing, or a checkout owned
// by another user, which git refuses to read).
var commit, commitTime string

// version describes this binary from the build information the Go
// toolchain records: the module version (a tag when built with go install
// ...@vX.Y.Z, "(devel)" in a checkout), the commit, its time, whether the
// tree had uncommitted changes, and the Go version.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return describeBuild(nil)
	}
	return describeBuild(info)
}

func describeBuild(info *debug.BuildInfo) string {
	ver, goVer := "(unknown)", runtime.Version()
	settings := map[string]string{}
	if info != nil {
		if info.Main.Version != "" {
			ver = info.Main.Version
		}
		if info.GoVersion != "" {
			goVer = info.GoVersion
		}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
	}
	if settings["vcs.revision"] == "" && commit != "" {
		settings["vcs.revision"], settings["vcs.time"] = strings.TrimSuffix(commit, "-dirty"), commitTime
		if strings.HasSuffix(commit, "-dirty") {
			settings["vcs.modified"] = "true"
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kino %s\n", ver)
	if rev := settings["vcs.revision"]; rev != "" {
		line := "commit " + rev
		if t := settings["vcs.time"]; t != "" {
			line += " (" + t + ")"
		}
		if settings["vcs.modified"] == "true" {
			line += ", with uncommitted changes"
		}
		fmt.Fprintln(&b, line)
	}
	fmt.Fprintf(&b, "built with %s for %s/%s\n", goVer, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print kino's version, commit and Go version (also: kino --version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), version())
			return err
		},
	}
}
