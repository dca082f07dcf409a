package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// run executes the CLI with args and returns the exit status. Errors are
// printed as one line on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "kino: "+oneLine(err.Error()))
		return 1
	}
	return 0
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "kino",
		Short:         "kino: self-hostable video hosting (upload, HLS transcoding, webhooks)",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate("{{.Version}}")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		newServeCmd(),
		newWorkerCmd(),
		newClusterCmd(),
		newAccountsCmd(),
		newKeysCmd(),
		newCollectionsCmd(),
		newHistoryCmd(),
		newReplayCmd(),
		newUploadCmd(),
		newBenchCmd(),
		newVideosCmd(),
		newVersionCmd(),
		newUsersCmd(),
		newMediaCmd(),
		newPlaybackKeysCmd(),
		newBackupCmd(),
		newRestoreCmd(),
	)
	return root
}

// env returns the environment's value for name, or def.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

func envBool(name string) bool {
	b, _ := strconv.ParseBool(os.Getenv(name))
	return b
}
