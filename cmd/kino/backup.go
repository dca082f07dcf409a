package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/backup"
	"github.com/kino-video/kino/eventstore/natsserver"
	"github.com/kino-video/kino/transport/media"
	"github.com/kino-video/kino/transport/seal"
)

// manifestFile describes a backup directory.
const manifestFile = "kino-backup.json"

// manifest is kino-backup.json.
type manifest struct {
	Version   int            `json:"version"`
	Created   string         `json:"created"`
	Streams   []backup.Saved `json:"streams"`
	Media     string         `json:"media"`            // dir, nats (in the streams) or s3 (not in the backup)
	Videos    int            `json:"videos,omitempty"` // media directories copied (dir)
	SecretKey bool           `json:"secretKey"`        // secret.key is in the backup
}

func newBackupCmd() *cobra.Command {
	var (
		conn    natsClient
		to      string
		kind    string
		withKey bool
		keyFile string
	)
	cmd := &cobra.Command{
		Use:   "backup --to DIR",
		Short: "Back up kino while it serves: the event stream and what cannot be rebuilt, and the media of --media dir",
		Long: oneLine(`Writes into DIR (new or empty) a snapshot of each stream kino cannot
			rebuild (the events, the webhook deliveries and transcode queues with their
			consumers' positions, the playback key ring, and with --media nats the media
			bucket), through JetStream's snapshot API while kino serves; with --media dir,
			the media directory, hard-linked where DIR is on the same file system (kino
			never rewrites a published file in place), else copied. The secret key is
			left out unless --with-secret-key: keep it apart from the backup. With --media
			s3 the bucket is backed up by the service's own means. kino restore --from DIR
			puts it back into an empty data directory.`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if to == "" {
				return errors.New("--to DIR is required")
			}
			if err := emptyDir(to); err != nil {
				return err
			}
			start := time.Now()
			out := c.OutOrStdout()
			m := manifest{Version: 1, Created: domain.FormatTime(start), Media: kind}
			err := withStore(c.Context(), &conn, func(s *eventstore.Store) error {
				saved, err := backup.Save(c.Context(), s.NATS().NC, filepath.Join(to, "nats"), func(stream string) {
					fmt.Fprintf(out, "saving %s\n", stream)
				})
				m.Streams = saved
				return err
			})
			if err != nil {
				return err
			}
			switch kind {
			case mediaDir:
				if m.Videos, err = media.CopyVideos(filepath.Join(conn.data, "media"), filepath.Join(to, "media")); err != nil {
					return fmt.Errorf("backup: media: %w", err)
				}
			case mediaS3:
				fmt.Fprintln(out, "media: in the S3 bucket, not in this backup: keep the bucket's own backups (versioning, replication)")
			}
			if withKey {
				if _, err := secretKey(keyFile, conn.data, false); err != nil { // it must be a key
					return err
				}
				dst := filepath.Join(to, seal.KeyFile)
				if v := os.Getenv(seal.EnvKey); v != "" {
					err = os.WriteFile(dst, []byte(v+"\n"), 0o600)
				} else {
					if keyFile == "" {
						keyFile = filepath.Join(conn.data, seal.KeyFile)
					}
					err = copySecret(keyFile, dst)
				}
				if err != nil {
					return err
				}
				m.SecretKey = true
			}
			b, _ := json.MarshalIndent(m, "", "  ")
			if err := os.WriteFile(filepath.Join(to, manifestFile), append(b, '\n'), 0o600); err != nil {
				return err
			}
			var events uint64
			for _, s := range m.Streams {
				if s.Stream == eventstore.StreamName {
					events = s.Messages
				}
			}
			fmt.Fprintf(out, "backed up %d events, %d streams, %d media directories to %s in %s\n", events, len(m.Streams), m.Videos, to, time.Since(start).Round(time.Millisecond))
			if !withKey {
				fmt.Fprintln(out, "the secret key is not in the backup: keep a copy of it apart (restored webhook secrets and playback keys need it)")
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&to, "to", "", "directory to write the backup into (new, or empty)")
	fs.StringVar(&kind, "media", env("KINO_MEDIA", mediaDir), `the media store kino serve uses: "dir" (copied), "nats" (in the streams) or "s3" (not copied) (env KINO_MEDIA)`)
	fs.BoolVar(&withKey, "with-secret-key", false, "also copy the secret key into the backup (0600); by default it is left out, to be kept apart")
	secretKeyFlag(fs, &keyFile)
	natsFlags(fs, &conn, eventstore.RoleAdmin)
	return cmd
}

func newRestoreCmd() *cobra.Command {
	var from, data string
	cmd := &cobra.Command{
		Use:   "restore --from DIR --data NEWDIR",
		Short: "Restore a kino backup into an empty data directory, then start kino serve on it",
		Long: oneLine(`Puts the streams of a backup (kino backup) into a new embedded NATS
			store under NEWDIR, its media directory under NEWDIR/media, and its secret key
			if it holds one (else copy the kept one to NEWDIR/secret.key). kino serve
			--data NEWDIR then rebuilds the read models from the events at its start and
			goes on where the backup was taken.`),
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if from == "" || data == "" {
				return errors.New("--from DIR and --data NEWDIR are required")
			}
			var m manifest
			b, err := os.ReadFile(filepath.Join(from, manifestFile))
			if err == nil {
				err = json.Unmarshal(b, &m)
			}
			if err != nil {
				return fmt.Errorf("%s is not a kino backup: %w", from, err)
			}
			if err := emptyDir(data); err != nil {
				return err
			}
			if err := os.Chmod(data, 0o711); err != nil {
				return err
			}
			out := c.OutOrStdout()
			srv, err := natsserver.StartEmbedded(data, "127.0.0.1:0")
			if err != nil {
				return err
			}
			defer srv.Shutdown()
			nc, err := eventstore.Connect(srv.URL(), srv.Auth(eventstore.RoleAdmin), "kino restore")
			if err != nil {
				return err
			}
			defer nc.Close()
			if err := backup.Restore(c.Context(), nc, filepath.Join(from, "nats"), func(stream string) {
				fmt.Fprintf(out, "restoring %s\n", stream)
			}); err != nil {
				return err
			}
			videos := 0
			if _, err := os.Stat(filepath.Join(from, "media")); err == nil {
				if videos, err = media.CopyVideos(filepath.Join(from, "media"), filepath.Join(data, "media")); err != nil {
					return fmt.Errorf("restore: media: %w", err)
				}
			}
			if m.SecretKey {
				if err := copySecret(filepath.Join(from, seal.KeyFile), filepath.Join(data, seal.KeyFile)); err != nil {
					return err
				}
			}
			fmt.Fprintf(out, "restored the backup of %s (%d streams, %d media directories) into %s: start kino serve --data %s\n", m.Created, len(m.Streams), videos, data, data)
			if !m.SecretKey {
				fmt.Fprintf(out, "the backup holds no secret key: copy the one kept apart to %s before the start\n", filepath.Join(data, seal.KeyFile))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the backup directory (kino backup --to)")
	cmd.Flags().StringVar(&data, "data", "", "the new data directory (new, or empty)")
	return cmd
}

// emptyDir makes dir, or accepts it when it exists and is empty.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o700)
	case err != nil:
		return err
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty: give a new or empty directory", dir)
	}
	return nil
}

// copySecret copies the secret key file src to dst, a new file of mode
// 0600 (never a link: the copy outlives what is done to the original).
func copySecret(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	defer clear(b)
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
