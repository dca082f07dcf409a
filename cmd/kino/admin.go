package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/accounts"
)

// withStore opens the event store of the instance c reaches for one command.
func withStore(ctx context.Context, c *natsClient, fn func(*eventstore.Store) error) error {
	cfg, err := c.config("kino cli")
	if err != nil {
		return err
	}
	return c.explain(withStoreConfig(ctx, cfg, fn), cfg.Auth)
}

// withStoreConfig opens the event store cfg describes for one command.
func withStoreConfig(ctx context.Context, cfg eventstore.Config, fn func(*eventstore.Store) error) error {
	store, err := eventstore.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	return fn(store)
}

// loadAccount folds an account's events; NotFound when it does not exist.
func loadAccount(ctx context.Context, store *eventstore.Store, slug string) (domain.Account, error) {
	if !domain.ValidSlug(slug) {
		return domain.Account{}, domain.E("load account", domain.NotFound, "account %q not found", slug)
	}
	events, _, err := store.Load(ctx, domain.AccountStream(slug))
	if err != nil {
		return domain.Account{}, err
	}
	a := domain.Fold[domain.Account](events)
	if !a.Created {
		return a, domain.E("load account", domain.NotFound, "account %q not found", slug)
	}
	return a, nil
}

func newAccountsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "accounts", Short: "Manage accounts"}
	var conn natsClient
	var plan string
	create := &cobra.Command{
		Use:   "create SLUG --plan free|pro|business",
		Short: "Create an account",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := domain.ParsePlan(plan)
			if err != nil {
				return err
			}
			return withStore(cmd.Context(), &conn, func(s *eventstore.Store) error {
				if _, err := eventstore.Execute[domain.Account](cmd.Context(), s, domain.AccountStream(args[0]), domain.CreateAccount{Slug: args[0], Plan: p}); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "account %s created (plan %s)\n", args[0], p)
				return nil
			})
		},
	}
	create.Flags().StringVar(&plan, "plan", "free", "plan: free, pro or business")
	natsFlags(create.Flags(), &conn, eventstore.RoleAdmin)

	var planConn natsClient
	setPlan := &cobra.Command{
		Use:   "set-plan SLUG PLAN",
		Short: "Change an account's plan (free, pro or business); limits apply from the next request",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := domain.ParsePlan(args[1])
			if err != nil {
				return err
			}
			return withStore(cmd.Context(), &planConn, func(s *eventstore.Store) error {
				if _, err := loadAccount(cmd.Context(), s, args[0]); err != nil {
					return err
				}
				if _, err := eventstore.Execute[domain.Account](cmd.Context(), s, domain.AccountStream(args[0]), domain.ChangePlan{Plan: p}); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "account %s is on plan %s\n", args[0], p)
				return nil
			})
		},
	}
	natsFlags(setPlan.Flags(), &planConn, eventstore.RoleAdmin)

	var quotaConn natsClient
	setQuota := &cobra.Command{
		Use:   "set-storage-quota SLUG SIZE|none|plan",
		Short: "Give an account its own storage quota (e.g. 500GiB; none: no quota) or its plan's again (plan)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var quota *int64
			switch args[1] {
			case "plan":
			case "none":
				quota = new(int64)
			default:
				n, err := parseSize(args[1])
				if err != nil {
					return fmt.Errorf("%w; or none, or plan", err)
				}
				quota = &n
			}
			if err := domain.CheckStorageQuota(quota); err != nil {
				return err
			}
			return withStore(cmd.Context(), &quotaConn, func(s *eventstore.Store) error {
				if _, err := loadAccount(cmd.Context(), s, args[0]); err != nil {
					return err
				}
				if _, err := eventstore.Execute[domain.Account](cmd.Context(), s, domain.AccountStream(args[0]), domain.SetStorageQuota{Bytes: quota}); err != nil {
					return err
				}
				switch {
				case quota == nil:
					fmt.Fprintf(cmd.OutOrStdout(), "account %s has its plan's storage quota\n", args[0])
				case *quota == 0:
					fmt.Fprintf(cmd.OutOrStdout(), "account %s has no storage quota\n", args[0])
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "account %s has a storage quota of %s\n", args[0], byteSize(*quota))
				}
				return nil
			})
		},
	}
	natsFlags(setQuota.Flags(), &quotaConn, eventstore.RoleAdmin)
	cmd.AddCommand(create, setPlan, setQuota)
	return cmd
}

func newKeysCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "keys", Short: "Manage API keys"}

	var createConn natsClient
	var label string
	create := &cobra.Command{
		Use:   "create ACCOUNT [--label L]",
		Short: "Create an API key; the key is printed once, alone on the last line",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd.Context(), &createConn, func(s *eventstore.Store) error {
				if _, err := loadAccount(cmd.Context(), s, args[0]); err != nil {
					return err
				}
				key, id, err := accounts.IssueKey(cmd.Context(), s, args[0], label)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "key %s created for account %s; store it now, it is not shown again:\n", id, args[0])
				fmt.Fprintln(out, key)
				return nil
			})
		},
	}
	create.Flags().StringVar(&label, "label", "", "a name for the key, e.g. the environment using it")
	natsFlags(create.Flags(), &createConn, eventstore.RoleAdmin)

	var listConn natsClient
	list := &cobra.Command{
		Use:   "list ACCOUNT",
		Short: "List an account's keys (never the keys themselves)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd.Context(), &listConn, func(s *eventstore.Store) error {
				a, err := loadAccount(cmd.Context(), s, args[0])
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tPREFIX\tLABEL\tCREATED\tSTATUS")
				for _, k := range a.Keys {
					status := "active"
					if k.Revoked {
						status = "revoked"
					}
					fmt.Fprintf(tw, "%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Prefix, k.Label, domain.FormatTime(k.IssuedAt), status)
				}
				return tw.Flush()
			})
		},
	}
	natsFlags(list.Flags(), &listConn, eventstore.RoleAdmin)

	var revokeConn natsClient
	revoke := &cobra.Command{
		Use:   "revoke KEYID",
		Short: "Revoke a key; requests with it answer 401 from then on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			keyID := args[0]
			return withStore(cmd.Context(), &revokeConn, func(s *eventstore.Store) error {
				account, err := findKeyAccount(cmd.Context(), s, keyID)
				if err != nil {
					return err
				}
				if _, err := eventstore.Execute[domain.Account](cmd.Context(), s, domain.AccountStream(account), domain.RevokeKey{KeyID: keyID}); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "key %s of account %s revoked\n", keyID, account)
				return nil
			})
		},
	}
	natsFlags(revoke.Flags(), &revokeConn, eventstore.RoleAdmin)
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// findKeyAccount finds which account issued a key by scanning the
// KeyIssued events: keys are few, and the CLI needs no read model.
func findKeyAccount(ctx context.Context, s *eventstore.Store, keyID string) (string, error) {
	var account string
	err := s.Scan(ctx, []string{domain.TypeFilter(domain.AggAccount, domain.TypeKeyIssued)}, func(e domain.Event) error {
		if k, ok := e.Data.(domain.KeyIssued); ok && k.KeyID == keyID {
			account = e.AggregateID
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if account == "" {
		return "", domain.E("revoke key", domain.NotFound, "key %q not found", keyID)
	}
	return account, nil
}

func newCollectionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "collections", Short: "Manage collections"}
	var conn natsClient
	create := &cobra.Command{
		Use:   "create ACCOUNT SLUG NAME",
		Short: "Create a collection in an account",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			account, slug, name := args[0], args[1], args[2]
			if !domain.ValidSlug(slug) {
				return fmt.Errorf("slug must match ^[a-z0-9][a-z0-9-]{0,62}$ (got %q)", slug)
			}
			return withStore(cmd.Context(), &conn, func(s *eventstore.Store) error {
				if _, err := loadAccount(cmd.Context(), s, account); err != nil {
					return err
				}
				if _, err := eventstore.Execute[domain.Collection](cmd.Context(), s, domain.CollectionStream(account, slug),
					domain.CreateCollection{Account: account, Slug: slug, Name: name}); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "collection %s created in account %s\n", slug, account)
				return nil
			})
		},
	}
	natsFlags(create.Flags(), &conn, eventstore.RoleAdmin)
	cmd.AddCommand(create)
	return cmd
}

func newHistoryCmd() *cobra.Command {
	var conn natsClient
	cmd := &cobra.Command{
		Use:   "history VIDEOID",
		Short: "Print a video's events, oldest first (its audit history)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			return withStore(cmd.Context(), &conn, func(s *eventstore.Store) error {
				if !domain.ValidID(id) {
					return fmt.Errorf("video %s not found", id)
				}
				events, _, err := s.Load(cmd.Context(), domain.VideoStream(id))
				if err != nil {
					return err
				}
				if len(events) == 0 {
					return fmt.Errorf("video %s not found", id)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tOCCURRED AT\tTYPE\tVERSION\tDATA")
				for _, e := range events {
					data, err := json.Marshal(e.Data)
					if err != nil {
						return err
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\n", e.Seq, domain.FormatTime(e.OccurredAt), e.Type, e.Version, data)
				}
				return tw.Flush()
			})
		},
	}
	natsFlags(cmd.Flags(), &conn, eventstore.RoleAdmin)
	return cmd
}
