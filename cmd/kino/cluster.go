package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kino-video/kino/eventstore/natsserver"
	"github.com/kino-video/kino/transport/seal"
)

// newClusterCmd is `kino cluster`: what a NATS cluster of kino nodes
// needs besides the flags.
func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Prepare a cluster of kino nodes (kino serve and kino worker with --nats-cluster)",
	}
	var data string
	initCmd := &cobra.Command{
		Use:   "init",
		Short: "Make the credentials every node of a cluster shares, under --data; then copy them to every node",
		Long: `kino cluster init writes, under --data, what every node of a cluster must share:
  nats-creds/   the NATS nkeys of kino's roles (serve, worker, admin) and
                cluster.secret, the password the nodes' routes present to each other
  secret.key    the key sealing webhook secrets
Files that exist are kept, so it also turns an existing node's data directory into
the first node of a cluster. Copy both into every other node's --data before its first
start (they are secrets: keep them 0600, e.g. scp -p or rsync -a).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := os.MkdirAll(data, 0o711); err != nil {
				return fmt.Errorf("data directory: %w", err)
			}
			if err := natsserver.InitCluster(data); err != nil {
				return err
			}
			if _, err := seal.LoadOrCreate(filepath.Join(data, seal.KeyFile)); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster credentials in %s and %s: copy both into every node's --data before its first start\n",
				filepath.Join(data, natsserver.CredsDir), filepath.Join(data, seal.KeyFile))
			return nil
		},
	}
	initCmd.Flags().StringVar(&data, "data", env("KINO_DATA", "./data"), "data directory to write the credentials into (env KINO_DATA)")
	cmd.AddCommand(initCmd)
	return cmd
}
