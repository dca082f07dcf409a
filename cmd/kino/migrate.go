package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/objects"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/s3"
)

func newMediaCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "media", Short: "Manage the media store"}
	var (
		conn     natsClient
		from, to string
		s3c      s3.Config
	)
	migrate := &cobra.Command{
		Use:   "migrate --to s3|nats",
		Short: "Copy every video's files into another media store, checked by SHA-256; run it again to copy what changed since",
		Long: oneLine(`Copies the files of every video (originals and outputs) from the media
			store --from (default: --media, env KINO_MEDIA) into --to, each checked by its
			SHA-256 once stored. A file already there with the same digest is not copied
			again, so an interrupted run resumes, and a second run copies only what changed
			since the first. It runs while kino serves: copy, stop kino serve and its
			workers, run it once more, and start them all with --media set to the new
			store (docs/operations.md, "Moving media to S3").`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if to != mediaS3 && to != mediaNATS {
				return fmt.Errorf("--to %q: want %q or %q", to, mediaS3, mediaNATS)
			}
			if from == to {
				return fmt.Errorf("--from and --to are both %q", to)
			}
			run := func(store *eventstore.Store) error {
				return migrateMedia(ctx, cmd.OutOrStdout(), from, to, s3c, store, conn.data)
			}
			if from == mediaNATS || to == mediaNATS {
				return withStore(ctx, &conn, run)
			}
			return run(nil)
		},
	}
	fs := migrate.Flags()
	fs.StringVar(&to, "to", "", `the media store to copy into: "s3" (--s3-*) or "nats" (the JetStream object store of the instance --nats reaches, made by kino serve --media nats)`)
	fs.StringVar(&from, "from", env("KINO_MEDIA", mediaDir), `the media store to copy from: "dir" (<data>/media), "nats" or "s3" (env KINO_MEDIA)`)
	s3Flags(fs, &s3c)
	natsFlags(fs, &conn, eventstore.RoleAdmin)
	cmd.AddCommand(migrate)
	return cmd
}

// migrateMedia copies every video of the store from into the store to,
// printing a line a video and a summary; it fails when a video could not
// be copied (the others are).
func migrateMedia(ctx context.Context, out io.Writer, from, to string, s3c s3.Config, store *eventstore.Store, data string) error {
	open := func(kind string) (media.Source, *media.Bucket, error) {
		var obj media.ObjectStore
		var err error
		switch kind {
		case mediaDir:
			root := filepath.Join(data, "media")
			if _, err := os.Stat(root); err != nil {
				return nil, nil, fmt.Errorf("no media directory to copy from: %w (is --data the one kino serve uses?)", err)
			}
			d, err := media.OpenDir(root)
			return d, nil, err
		case mediaNATS:
			obj, err = objects.Open(ctx, store)
		case mediaS3:
			if s3c.Endpoint == "" || s3c.Bucket == "" {
				return nil, nil, errors.New("the S3 store needs --s3-endpoint and --s3-bucket")
			}
			obj, err = s3.Open(ctx, s3c)
		default:
			return nil, nil, fmt.Errorf("media store %q: want %q, %q or %q", kind, mediaDir, mediaNATS, mediaS3)
		}
		if err != nil {
			return nil, nil, err
		}
		scratch, err := os.MkdirTemp("", "kino-migrate-*")
		if err != nil {
			return nil, nil, err
		}
		defer os.RemoveAll(scratch) // Import and the listing use none of it
		b, err := media.OpenBucket(obj, scratch, 0)
		return b, b, err
	}
	src, _, err := open(from)
	if err != nil {
		return err
	}
	_, dst, err := open(to)
	if err != nil {
		return err
	}
	ids, err := src.Videos(ctx)
	if err != nil {
		return err
	}
	var total media.Imported
	var gone, failed int
	for i, id := range ids {
		got, err := dst.Import(ctx, src, id)
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("stopped after %d of %d videos; run it again to go on: %w", i, len(ids), ctx.Err())
		case domain.IsKind(err, domain.NotFound):
			gone++
			fmt.Fprintf(out, "%s  gone from %s meanwhile (deleted)\n", id, from)
			continue
		case err != nil:
			failed++
			fmt.Fprintf(out, "%s  FAILED: %v\n", id, err)
			continue
		}
		total.Copied += got.Copied
		total.Verified += got.Verified
		total.Bytes += got.Bytes
		fmt.Fprintf(out, "%s  %d files copied (%s), %d already there\n", id, got.Copied, byteSize(got.Bytes), got.Verified)
	}
	fmt.Fprintf(out, "%d videos from %s to %s: %d files copied (%s), %d already there and checked, %d gone meanwhile, %d failed\n",
		len(ids), from, to, total.Copied, byteSize(total.Bytes), total.Verified, gone, failed)
	if failed > 0 {
		return fmt.Errorf("%d videos were not copied; run it again once the cause is fixed", failed)
	}
	return nil
}

// byteSize is n in bytes, KiB, MiB or GiB, for people.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
