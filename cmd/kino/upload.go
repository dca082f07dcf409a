package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/kino-video/kino/transport/apiclient"
)

// clientFlags adds --key and --url (KINO_API_KEY, KINO_URL). The key's
// default is read from the environment by checkClient, not here, so
// --help never shows it.
func clientFlags(fs *pflag.FlagSet, c *apiclient.Client) {
	fs.StringVar(&c.Key, "key", "", "API key (env KINO_API_KEY)")
	fs.StringVar(&c.BaseURL, "url", env("KINO_URL", "http://localhost:8080/v1"), "API base address, ending in /v1 (env KINO_URL)")
}

func checkClient(c *apiclient.Client) error {
	if c.Key == "" {
		c.Key = os.Getenv("KINO_API_KEY")
	}
	if c.Key == "" {
		return errors.New("an API key is required: --key or KINO_API_KEY")
	}
	return nil
}

// isTerminal reports whether w is an interactive terminal: progress bars
// are drawn only there.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func newUploadCmd() *cobra.Command {
	var c apiclient.Client
	var collection string
	var wait, asJSON, showStatus bool
	var poll time.Duration
	var details apiclient.Details
	var thumbnailTime float64
	cmd := &cobra.Command{
		Use:   "upload FILE --collection SLUG [--title T] [--description D] [--tag T]... [--meta K=V]... [--key K] [--url BASE] [--wait] [--json]",
		Short: "Upload a video, with a progress bar; --wait follows its processing to the end",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkClient(&c); err != nil {
				return err
			}
			if collection == "" {
				return errors.New("--collection is required")
			}
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			fi, err := f.Stat()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			interactive := isTerminal(out) && !asJSON
			var progress func(sent, total int64)
			var bar *progressbar.ProgressBar
			if interactive {
				bar = progressbar.DefaultBytes(fi.Size(), "uploading "+filepath.Base(args[0]))
				progress = func(sent, _ int64) { _ = bar.Set64(sent) }
			}
			opts := []apiclient.UploadOption{apiclient.WithDetails(details)}
			if cmd.Flags().Changed("thumbnail-time") {
				opts = append(opts, apiclient.WithThumbnailTime(thumbnailTime))
			}
			up, err := c.Upload(cmd.Context(), f, fi.Size(), filepath.Base(args[0]), collection, progress, opts...)
			if bar != nil {
				_ = bar.Finish()
			}
			if err != nil {
				return err
			}
			if !wait {
				if asJSON {
					return json.NewEncoder(out).Encode(up)
				}
				fmt.Fprintf(out, "uploaded %s as video %s (%s)\n", up.Video.Filename, up.Video.ID, up.Video.Status)
				return nil
			}
			var status *statusLine // percent, time left and speed, or place in the queue
			if interactive || showStatus {
				status = &statusLine{w: cmd.ErrOrStderr(), terminal: interactive}
			}
			v, err := c.Wait(cmd.Context(), up.Video.ID, apiclient.WaitOptions{Interval: poll, OnPoll: func(v apiclient.Video) {
				if status != nil {
					status.update(v)
				}
			}})
			if status != nil {
				status.finish()
			}
			var failed *apiclient.FailedError
			if err != nil && !errors.As(err, &failed) {
				return err
			}
			if asJSON {
				if err := json.NewEncoder(out).Encode(v); err != nil {
					return err
				}
			}
			if failed != nil {
				return failed
			}
			if !asJSON {
				fmt.Fprintf(out, "video %s COMPLETED (%s)\nplayer: %s/play/%s\n%s\n", v.ID, joinRes(v.Resolutions),
					strings.TrimSuffix(strings.TrimRight(c.BaseURL, "/"), "/v1"), v.ID, deref(v.PlaylistURL))
			}
			return nil
		},
	}
	clientFlags(cmd.Flags(), &c)
	cmd.Flags().StringVar(&collection, "collection", "", "slug of the target collection")
	cmd.Flags().StringVar(&details.Title, "title", "", "the video's title (default: the filename without its extension)")
	cmd.Flags().StringVar(&details.Description, "description", "", "the video's description")
	cmd.Flags().StringArrayVar(&details.Tags, "tag", nil, "a tag of the video (repeat for more)")
	cmd.Flags().StringToStringVar(&details.Metadata, "meta", nil, "a metadata key=value of the video (repeat for more)")
	cmd.Flags().Float64Var(&thumbnailTime, "thumbnail-time", 0, "take the thumbnail at this moment, in seconds (default: a tenth of the way in)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the video is COMPLETED (print the playlist URL) or FAILED (exit 1)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the video as JSON")
	cmd.Flags().DurationVar(&poll, "poll", apiclient.PollInterval, "how often --wait asks (spec §3: every 2 s)")
	_ = cmd.Flags().MarkHidden("poll")
	cmd.Flags().BoolVar(&showStatus, "status", false, "print each processing state on a line of its own even when the output is not a terminal")
	_ = cmd.Flags().MarkHidden("status")
	return cmd
}

func joinRes(r []string) string {
	out := ""
	for i, s := range r {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func newVideosCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "videos", Short: "List, show and delete videos through the API"}

	var lc apiclient.Client
	var opts apiclient.ListOptions
	var status string
	var listJSON bool
	list := &cobra.Command{
		Use:   "list [--collection SLUG] [--status S] [--limit N] [--offset N]",
		Short: "List videos, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkClient(&lc); err != nil {
				return err
			}
			opts.Status = apiclient.Status(status)
			vs, err := lc.Videos(cmd.Context(), opts)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if listJSON {
				return json.NewEncoder(out).Encode(vs)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tCOLLECTION\tFILENAME\tCREATED")
			for _, v := range vs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.ID, v.Status, v.Collection.Slug, v.Filename, v.CreatedAt.Format("2006-01-02T15:04:05.000Z"))
			}
			return tw.Flush()
		},
	}
	clientFlags(list.Flags(), &lc)
	list.Flags().StringVar(&opts.Collection, "collection", "", "only this collection")
	list.Flags().StringVar(&status, "status", "", "only PENDING, PROCESSING, COMPLETED or FAILED")
	list.Flags().IntVar(&opts.Limit, "limit", 0, "at most this many (1..100; default 50)")
	list.Flags().IntVar(&opts.Offset, "offset", 0, "skip this many")
	list.Flags().BoolVar(&listJSON, "json", false, "print JSON")

	var gc apiclient.Client
	get := &cobra.Command{
		Use:   "get ID",
		Short: "Show one video as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkClient(&gc); err != nil {
				return err
			}
			v, err := gc.Video(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		},
	}
	clientFlags(get.Flags(), &gc)

	var dc apiclient.Client
	del := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a video and its files",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkClient(&dc); err != nil {
				return err
			}
			if err := dc.DeleteVideo(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "video %s deleted\n", args[0])
			return nil
		},
	}
	clientFlags(del.Flags(), &dc)
	cmd.AddCommand(list, get, del)
	return cmd
}
