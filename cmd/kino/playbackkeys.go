package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/transport/playback"
)

// newPlaybackKeysCmd is `kino playback-keys`: the keys of kino's own
// playback tokens, kept in NATS (KINO_PLAYBACK_KEYS) sealed with the
// secret key, which workers cannot read.
func newPlaybackKeysCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "playback-keys", Short: "Rotate or list the keys of kino's playback tokens"}
	ring := func(c *cobra.Command, conn *natsClient, keyFile string, fn func(*playback.Ring) error) error {
		key, err := secretKey(keyFile, conn.data, false)
		if err != nil {
			return err
		}
		return withStore(c.Context(), conn, func(s *eventstore.Store) error {
			store, err := kv.OpenPlaybackKeys(c.Context(), s)
			if err != nil {
				return err
			}
			return fn(playback.ExistingRing(store, key, nil))
		})
	}

	var rotConn natsClient
	var rotKey string
	var grace time.Duration
	rotate := &cobra.Command{
		Use:   "rotate [--grace DURATION]",
		Short: "Sign new playback tokens with a new key; tokens of the old keys are refused at once, or after --grace",
		Long: oneLine(`Makes a new key current for kino's playback tokens, on every kino serve
			within about a second. Tokens signed with the keys before it are refused at
			once (the default: revoke them all, e.g. after a leak), or are still accepted
			for --grace (a routine rotation: no viewer's player stops). Tokens that
			accounts sign with their own signing keys are not affected.`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return ring(c, &rotConn, rotKey, func(r *playback.Ring) error {
				id, err := r.Rotate(c.Context(), grace)
				if err != nil {
					return err
				}
				if grace == 0 {
					fmt.Fprintf(c.OutOrStdout(), "playback tokens are signed with key %s; tokens of earlier keys are refused from now on\n", id)
				} else {
					fmt.Fprintf(c.OutOrStdout(), "playback tokens are signed with key %s; tokens of earlier keys are accepted until %s\n", id, domain.FormatTime(time.Now().Add(grace)))
				}
				return nil
			})
		},
	}
	rotate.Flags().DurationVar(&grace, "grace", 0, "how long tokens of the keys before it stay accepted (e.g. 1h; at most 7 days, the longest token life); 0 refuses them at once")
	natsFlags(rotate.Flags(), &rotConn, eventstore.RoleAdmin)
	secretKeyFlag(rotate.Flags(), &rotKey)

	var listConn natsClient
	var listKey string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the keys playback tokens are accepted from (ids and dates, never a key)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return ring(c, &listConn, listKey, func(r *playback.Ring) error {
				keys, err := r.List(c.Context())
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tCREATED\tSTATE")
				for _, k := range keys {
					state := "current: signs new tokens"
					if !k.Current {
						state = "retiring: accepted until " + domain.FormatTime(*k.Until)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", k.ID, domain.FormatTime(k.Created), state)
				}
				return tw.Flush()
			})
		},
	}
	natsFlags(list.Flags(), &listConn, eventstore.RoleAdmin)
	secretKeyFlag(list.Flags(), &listKey)
	cmd.AddCommand(rotate, list)
	return cmd
}
