package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/kv"
	"github.com/kino-video/kino/transport/accounts"
)

// withUsers opens the user service of the instance c reaches for one
// command.
func withUsers(ctx context.Context, c *natsClient, fn func(*eventstore.Store, *accounts.Users) error) error {
	return withStore(ctx, c, func(s *eventstore.Store) error {
		u, err := openUsers(ctx, s, accounts.UsersConfig{})
		if err != nil {
			return err
		}
		return fn(s, u)
	})
}

// openUsers opens the sessions buckets on s (kino serve creates them, or
// updates the sessions bucket's TTL to cfg.SessionTTL) and the user
// service over them.
func openUsers(ctx context.Context, s *eventstore.Store, cfg accounts.UsersConfig) (*accounts.Users, error) {
	ttl := cfg.SessionTTL
	if ttl <= 0 {
		ttl = accounts.DefaultSessionTTL
	}
	sessions, err := kv.OpenSessions(ctx, s, ttl)
	if err != nil {
		return nil, fmt.Errorf("open users: %w", err)
	}
	cfg.Log, cfg.Warm = s.Log(), s.Manages()
	return accounts.NewUsers(s, sessions, cfg)
}

// passwordLink is the page a set-password token opens.
func passwordLink(base, token string) string {
	return strings.TrimRight(base, "/") + "/password?token=" + token
}

func newUsersCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "users", Short: "Manage the people who log in to the dashboard and the admin interface"}

	var createConn natsClient
	var operator bool
	var base string
	var linkTTL time.Duration
	create := &cobra.Command{
		Use:   "create ACCOUNT EMAIL | create --operator EMAIL",
		Short: "Create a user of an account (or an operator) and print a one-time link to set the password",
		Args: func(cmd *cobra.Command, args []string) error {
			if operator {
				return cobra.ExactArgs(1)(cmd, args)
			}
			return cobra.ExactArgs(2)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			nu := accounts.NewUser{Operator: operator, LinkTTL: linkTTL}
			if operator {
				nu.Email = args[0]
			} else {
				nu.Account, nu.Email = args[0], args[1]
			}
			return withUsers(cmd.Context(), &createConn, func(_ *eventstore.Store, u *accounts.Users) error {
				res, token, err := u.CreateUser(cmd.Context(), nu)
				if err != nil {
					return err
				}
				user, out := res.State, cmd.OutOrStdout()
				who := "operator"
				if !user.Operator {
					who = "user of account " + user.Account
				}
				fmt.Fprintf(out, "%s %s (%s) created. Send them this link to set their password; it works once, until %s:\n",
					who, user.Email, user.ID, domain.FormatTime(user.LinkExpiresAt))
				fmt.Fprintln(out, passwordLink(base, token))
				return nil
			})
		},
	}
	create.Flags().BoolVar(&operator, "operator", false, "create an operator of the instance (logs in to /admin) instead of an account's user")
	create.Flags().StringVar(&base, "url", env("KINO_PUBLIC_URL", "http://localhost:8080"), "public URL of kino, the start of the link (env KINO_PUBLIC_URL)")
	create.Flags().DurationVar(&linkTTL, "link-ttl", accounts.DefaultLinkTTL, "how long the link works")
	natsFlags(create.Flags(), &createConn, eventstore.RoleAdmin)

	var linkConn natsClient
	var linkBase string
	var linkLinkTTL time.Duration
	link := &cobra.Command{
		Use:   "link EMAIL",
		Short: "Print a new one-time link to set a user's password (a forgotten one); older links stop working",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withUsers(cmd.Context(), &linkConn, func(_ *eventstore.Store, u *accounts.Users) error {
				res, token, err := u.IssuePasswordLink(cmd.Context(), args[0], linkLinkTTL)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "a new link for %s; it works once, until %s:\n", res.State.Email, domain.FormatTime(res.State.LinkExpiresAt))
				fmt.Fprintln(cmd.OutOrStdout(), passwordLink(linkBase, token))
				return nil
			})
		},
	}
	link.Flags().StringVar(&linkBase, "url", env("KINO_PUBLIC_URL", "http://localhost:8080"), "public URL of kino, the start of the link (env KINO_PUBLIC_URL)")
	link.Flags().DurationVar(&linkLinkTTL, "link-ttl", accounts.DefaultLinkTTL, "how long the link works")
	natsFlags(link.Flags(), &linkConn, eventstore.RoleAdmin)

	var listConn natsClient
	list := &cobra.Command{
		Use:   "list [ACCOUNT]",
		Short: "List the users (of one account, or all with the operators)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd.Context(), &listConn, func(s *eventstore.Store) error {
				users, err := listUsers(cmd.Context(), s)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tEMAIL\tACCOUNT\tPASSWORD\tCREATED")
				for _, u := range users {
					if len(args) == 1 && u.Account != args[0] {
						continue
					}
					account, password := u.Account, "not set"
					if u.Operator {
						account = "(operator)"
					}
					if u.PasswordHash != "" {
						password = "set"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.ID, u.Email, account, password, domain.FormatTime(u.CreatedAt))
				}
				return tw.Flush()
			})
		},
	}
	natsFlags(list.Flags(), &listConn, eventstore.RoleAdmin)

	var removeConn natsClient
	remove := &cobra.Command{
		Use:   "remove EMAIL",
		Short: "Remove a user; their sessions end at their next request",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd.Context(), &removeConn, func(s *eventstore.Store) error {
				res, err := eventstore.Execute[domain.User](cmd.Context(), s, domain.UserStream(args[0]), domain.RemoveUser{})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "user %s (%s) removed\n", res.State.Email, res.State.ID)
				return nil
			})
		},
	}
	natsFlags(remove.Flags(), &removeConn, eventstore.RoleAdmin)
	cmd.AddCommand(create, link, list, remove)
	return cmd
}

// listUsers folds every user's events: users are few, and the CLI needs no
// read model.
func listUsers(ctx context.Context, s *eventstore.Store) ([]domain.User, error) {
	byKey := map[string]domain.User{}
	var order []string
	err := s.Scan(ctx, []string{domain.AggUser + ".>"}, func(e domain.Event) error {
		u, seen := byKey[e.AggregateID]
		if !seen {
			order = append(order, e.AggregateID)
		}
		byKey[e.AggregateID] = u.Evolve(e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]domain.User, 0, len(order))
	for _, k := range order {
		if u := byKey[k]; u.Created {
			out = append(out, u)
		}
	}
	return out, nil
}
