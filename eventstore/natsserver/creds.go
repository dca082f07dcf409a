package natsserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/eventstore/adminrpc"
	"github.com/kino-video/kino/eventstore/internal/natsconn"
)

// CredsDir is where an embedded server keeps its clients' nkey seeds,
// under the data directory.
const CredsDir = "nats-creds"

// CredsFile is the nkey seed file of role under dataDir.
func CredsFile(dataDir, role string) string {
	return filepath.Join(dataDir, CredsDir, role+".nk")
}

// ensureCreds creates (once) a random nkey user seed for every role under
// dataDir/nats-creds (0700, files 0600), and returns each role's public key.
func ensureCreds(dataDir string) (map[string]string, error) {
	dir := filepath.Join(dataDir, CredsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("nats credentials: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("nats credentials: %w", err)
	}
	pubs := make(map[string]string, len(eventstore.Roles))
	for _, role := range eventstore.Roles {
		path := CredsFile(dataDir, role)
		seed, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			seed, err = newSeed(path)
			if errors.Is(err, os.ErrExist) { // another process made it first
				seed, err = os.ReadFile(path)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("nats credentials %s: %w", path, err)
		}
		kp, err := nkeys.ParseDecoratedNKey(seed)
		clear(seed)
		if err != nil {
			return nil, fmt.Errorf("nats credentials %s: %w", path, err)
		}
		pub, err := kp.PublicKey()
		kp.Wipe()
		if err != nil || !nkeys.IsValidPublicUserKey(pub) {
			return nil, fmt.Errorf("nats credentials %s: not an nkey user seed", path)
		}
		pubs[role] = pub
	}
	return pubs, nil
}

// newSeed writes a fresh user seed to path, which must not exist yet.
func newSeed(path string) ([]byte, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	defer kp.Wipe()
	s, err := kp.Seed()
	if err != nil {
		return nil, err
	}
	seed := append([]byte(nil), s...) // Wipe overwrites s

	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(append(seed, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return nil, err
	}
	return seed, nil
}

// permissions of each role on the embedded server. nil: everything.
func permissions(role string) *server.Permissions {
	switch role {
	case eventstore.RoleAdmin:
		// The CLI may write any event and call kino.admin.>, but never
		// answer those calls in kino serve's place.
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{">"}},
			Subscribe: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{adminrpc.Subject + ".>"}},
		}
	case eventstore.RoleWorker:
		// A worker appends only the events of the jobs it runs (a
		// transcode, a delivery attempt), consumes its work queues, queues
		// webhook deliveries (the fan-out) and writes progress. It can
		// neither write account.> or collection.> events (keys, plans),
		// nor subscribe a webhook, nor manage streams, nor call or answer
		// kino.admin.>. It hears a video's Deleted, to stop that video's
		// ffmpeg at once.
		return &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{
				"video.*." + domain.TypeTranscodeStarted, "video.*." + domain.TypeTranscodeSucceeded, "video.*." + domain.TypeTranscodeFailed,
				"video.*." + domain.TypeTranscodeInterrupted, "video.*." + domain.TypeTranscodePlayable,
				"webhook.*." + domain.TypeDeliverySucceeded, "webhook.*." + domain.TypeDeliveryFailed,
				"delivery.*", // the fan-out's deliveries (KINO_DELIVERIES), one subject per subscription
				"$JS.API.INFO",
				"$JS.API.STREAM.INFO.*",
				"$JS.API.STREAM.MSG.GET.*",
				"$JS.API.DIRECT.GET.>",
				// Only the consumers a worker runs, and no deletes: the
				// transcode intake and queues, the webhook fan-out (two
				// filter subjects: created without a subject suffix) and
				// the webhook sender (TestKinoWorkerRunsWithItsOwnRole runs
				// a real worker).
				"$JS.API.CONSUMER.CREATE." + eventstore.StreamName + "." + natsconn.TranscodeIntake,
				"$JS.API.CONSUMER.CREATE." + eventstore.StreamName + "." + natsconn.TranscodeIntake + ".>",
				"$JS.API.CONSUMER.CREATE." + eventstore.StreamName + "." + natsconn.FanoutDurable,
				"$JS.API.CONSUMER.CREATE." + natsconn.DeliveriesStream + "." + natsconn.DeliveryDurable,
				"$JS.API.CONSUMER.CREATE." + natsconn.DeliveriesStream + "." + natsconn.DeliveryDurable + ".>",
				"$JS.API.CONSUMER.CREATE." + natsconn.JobsStream + ".>",
				"$JS.API.CONSUMER.INFO.>",
				// Jobs are fetched and acknowledged from those consumers
				// only: not from the projector's or another tool's.
				"$JS.API.CONSUMER.MSG.NEXT." + eventstore.StreamName + "." + natsconn.TranscodeIntake,
				"$JS.API.CONSUMER.MSG.NEXT." + eventstore.StreamName + "." + natsconn.FanoutDurable,
				"$JS.API.CONSUMER.MSG.NEXT." + natsconn.DeliveriesStream + "." + natsconn.DeliveryDurable,
				"$JS.API.CONSUMER.MSG.NEXT." + natsconn.JobsStream + ".>",
				"$JS.ACK." + eventstore.StreamName + "." + natsconn.TranscodeIntake + ".>",
				"$JS.ACK." + eventstore.StreamName + "." + natsconn.FanoutDurable + ".>",
				"$JS.ACK." + natsconn.DeliveriesStream + "." + natsconn.DeliveryDurable + ".>",
				"$JS.ACK." + natsconn.JobsStream + ".>",
				"$JS.FC.>",
				"$KV." + natsconn.ProgressBucket + ".>",
				"$KV." + natsconn.SendLocksBucket + ".>",
				"$KV." + natsconn.AttemptsBucket + ".>",
				"$KV." + natsconn.WorkersBucket + ".>", // its heartbeat (GET /v1/admin/health)
				natsconn.JobsSubjects,                  // the transcode queues (KINO_JOBS): intake and retries
				// The media bucket (--media nats): objects are written as
				// chunk and description messages, read by direct get, and
				// a replaced or deleted object's old chunks are purged. A
				// purge request cannot be limited to some subjects, so a
				// worker could purge the bucket's media; it cannot delete
				// or reconfigure the bucket, nor list it.
				"$O." + eventstore.MediaBucket + ".>",
				"$JS.API.STREAM.PURGE.OBJ_" + eventstore.MediaBucket, // the media bucket's stream
				"_INBOX.>",
			}, Deny: workerDenied()},
			// Replies only on its own inbox prefix: subscribing to _INBOX.>
			// would let it hear every reply kino serve gets (the playback
			// key ring it reads, sessions).
			Subscribe: &server.SubjectPermission{Allow: []string{eventstore.WorkerInbox + ".>", natsconn.JobsReady + ">", "video.*." + domain.TypeVideoDeleted}},
		}
	}
	return nil
}

// workerDenied: what the allowed direct and message gets above would
// otherwise let a worker read: the sessions (by the hashes of their ids:
// who is logged in, from when), the keys' last use, and the keys of
// kino's playback tokens (sealed, but a worker holds the secret key).
func workerDenied() []string {
	var deny []string
	for _, b := range []string{natsconn.SessionsBucket, natsconn.KeyUsageBucket, natsconn.PlaybackKeysBucket} {
		stream := "KV_" + b
		deny = append(deny,
			"$JS.API.DIRECT.GET."+stream, "$JS.API.DIRECT.GET."+stream+".>",
			"$JS.API.STREAM.MSG.GET."+stream, "$JS.API.STREAM.INFO."+stream,
			"$KV."+b+".>")
	}
	return deny
}
