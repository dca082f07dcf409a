package projections

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/kino-video/kino/domain"
)

// apply folds one event into the read models inside tx. It has no side
// effects outside tx, so it may run again on a rebuild from sequence 1.
func apply(tx *bolt.Tx, e domain.Event) error {
	switch d := e.Data.(type) {
	case domain.UploadAccepted:
		v := Video{
			ID: e.AggregateID, Account: d.Account, Filename: d.Filename, Ext: d.Ext,
			Status: domain.StatusPending, OriginalSize: d.OriginalSize, Resolutions: []string{},
			Collection: d.Collection, CollectionName: d.CollectionName,
			CreatedAt: e.OccurredAt, UpdatedAt: e.OccurredAt, CreatedSeq: e.Seq,
		}
		if err := putVideo(tx, v, ""); err != nil {
			return err
		}
		return updateCollection(tx, d.Account, d.Collection, func(c *Collection) { c.VideoCount++ })
	case domain.TranscodeStarted:
		return changeVideo(tx, e, func(v *Video) { v.Status = domain.StatusProcessing })
	case domain.TranscodeSucceeded:
		return changeVideo(tx, e, func(v *Video) {
			dur, size := d.Duration, d.ProcessedSize
			v.Status, v.Duration, v.ProcessedSize, v.ErrorMessage = domain.StatusCompleted, &dur, &size, nil
			v.Resolutions = append([]string{}, d.Resolutions...)
		})
	case domain.TranscodeFailed:
		return changeVideo(tx, e, func(v *Video) {
			if d.Final {
				reason := d.Reason
				v.Status, v.ErrorMessage = domain.StatusFailed, &reason
			}
		})
	case domain.VideoDeleted:
		v, ok, err := getJSON[Video](tx.Bucket(bVideos), []byte(e.AggregateID))
		if err != nil || !ok {
			return err
		}
		if err := deleteVideo(tx, v); err != nil {
			return err
		}
		// Clamped: a video uploaded while its collection was being deleted
		// may outlive it and be counted by neither the old nor a new one.
		return updateCollection(tx, v.Account, v.Collection, func(c *Collection) { c.VideoCount = max(0, c.VideoCount-1) })

	case domain.CollectionCreated:
		return putJSON(tx.Bucket(bCollections), key(d.Account, d.Slug), Collection{
			Account: d.Account, Slug: d.Slug, Name: d.Name, CreatedAt: e.OccurredAt, UpdatedAt: e.OccurredAt,
		})
	case domain.CollectionRenamed:
		if err := updateCollection(tx, d.Account, d.Slug, func(c *Collection) { c.Name, c.UpdatedAt = d.Name, e.OccurredAt }); err != nil {
			return err
		}
		return renameInVideos(tx, d.Account, d.Slug, d.Name)
	case domain.CollectionDeleted:
		return tx.Bucket(bCollections).Delete(key(d.Account, d.Slug))

	case domain.AccountCreated:
		return putJSON(tx.Bucket(bAccounts), []byte(e.AggregateID), Account{Slug: e.AggregateID, Plan: d.Plan, CreatedAt: e.OccurredAt})
	case domain.PlanChanged:
		b := tx.Bucket(bAccounts)
		a, ok, err := getJSON[Account](b, []byte(e.AggregateID))
		if err != nil || !ok {
			return err
		}
		a.Plan = d.Plan
		return putJSON(b, []byte(e.AggregateID), a)
	case domain.KeyIssued:
		return putJSON(tx.Bucket(bKeys), []byte(d.Hash), Key{
			ID: d.KeyID, Account: e.AggregateID, Hash: d.Hash, Label: d.Label, CreatedAt: e.OccurredAt,
		})
	case domain.KeyRevoked:
		return tx.Bucket(bKeys).Delete([]byte(d.Hash))

	case domain.WebhookSubscribed:
		return putJSON(tx.Bucket(bWebhooks), key(d.Account, e.AggregateID), Webhook{
			ID: e.AggregateID, Account: d.Account, URL: d.URL, Events: d.Events, Secret: d.Secret, CreatedAt: e.OccurredAt,
		})
	case domain.WebhookDeleted:
		if err := deletePrefix(tx.Bucket(bDeliveries), append(key(e.AggregateID), 0)); err != nil {
			return err
		}
		return tx.Bucket(bWebhooks).Delete(key(d.Account, e.AggregateID))
	case domain.DeliverySucceeded:
		if tx.Bucket(bWebhooks).Get(key(d.Account, e.AggregateID)) == nil {
			return nil // an attempt that ended after the subscription was deleted
		}
		return putJSON(tx.Bucket(bDeliveries), seqKey(key(e.AggregateID), e.Seq), Delivery{
			WebhookID: e.AggregateID, DeliveryID: d.DeliveryID, EventID: d.EventID, Kind: d.Kind, VideoID: d.VideoID,
			Attempt: d.Attempt, Succeeded: true, StatusCode: d.StatusCode, DurationMs: d.DurationMs, At: e.OccurredAt,
		})
	case domain.DeliveryFailed:
		if tx.Bucket(bWebhooks).Get(key(d.Account, e.AggregateID)) == nil {
			return nil
		}
		return putJSON(tx.Bucket(bDeliveries), seqKey(key(e.AggregateID), e.Seq), Delivery{
			WebhookID: e.AggregateID, DeliveryID: d.DeliveryID, EventID: d.EventID, Kind: d.Kind, VideoID: d.VideoID,
			Attempt: d.Attempt, GaveUp: d.GaveUp, StatusCode: d.StatusCode, Error: d.Error, DurationMs: d.DurationMs, At: e.OccurredAt,
		})
	}
	return nil
}

// changeVideo applies change to a stored video and moves its status index.
// Events of a video the read models do not hold (deleted) change nothing.
func changeVideo(tx *bolt.Tx, e domain.Event, change func(*Video)) error {
	v, ok, err := getJSON[Video](tx.Bucket(bVideos), []byte(e.AggregateID))
	if err != nil || !ok {
		return err
	}
	old := v.Status
	change(&v)
	v.UpdatedAt = e.OccurredAt
	return putVideo(tx, v, old)
}

// putVideo stores v and moves its status index entry from oldStatus.
func putVideo(tx *bolt.Tx, v Video, oldStatus domain.Status) error {
	if err := putJSON(tx.Bucket(bVideos), []byte(v.ID), v); err != nil {
		return err
	}
	id := []byte(v.ID)
	if oldStatus == "" {
		if err := tx.Bucket(bByAccount).Put(seqKey(key(v.Account), v.CreatedSeq), id); err != nil {
			return err
		}
		if err := tx.Bucket(bByColl).Put(seqKey(key(v.Account, v.Collection), v.CreatedSeq), id); err != nil {
			return err
		}
	} else if oldStatus != v.Status {
		if err := tx.Bucket(bByStatus).Delete(seqKey(key(v.Account, string(oldStatus)), v.CreatedSeq)); err != nil {
			return err
		}
	}
	return tx.Bucket(bByStatus).Put(seqKey(key(v.Account, string(v.Status)), v.CreatedSeq), id)
}

func deleteVideo(tx *bolt.Tx, v Video) error {
	for _, del := range []struct {
		b []byte
		k []byte
	}{
		{bVideos, []byte(v.ID)},
		{bByAccount, seqKey(key(v.Account), v.CreatedSeq)},
		{bByColl, seqKey(key(v.Account, v.Collection), v.CreatedSeq)},
		{bByStatus, seqKey(key(v.Account, string(v.Status)), v.CreatedSeq)},
	} {
		if err := tx.Bucket(del.b).Delete(del.k); err != nil {
			return err
		}
	}
	return nil
}

func updateCollection(tx *bolt.Tx, account, slug string, change func(*Collection)) error {
	b := tx.Bucket(bCollections)
	k := key(account, slug)
	c, ok, err := getJSON[Collection](b, k)
	if err != nil || !ok {
		return err
	}
	change(&c)
	return putJSON(b, k, c)
}

func renameInVideos(tx *bolt.Tx, account, slug, name string) error {
	videos := tx.Bucket(bVideos)
	prefix := append(key(account, slug), 0)
	c := tx.Bucket(bByColl).Cursor()
	for k, id := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, id = c.Next() {
		v, ok, err := getJSON[Video](videos, id)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		v.CollectionName = name
		if err := putJSON(videos, id, v); err != nil {
			return err
		}
	}
	return nil
}

func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// applyBatch applies events and stores the last one's sequence as the
// checkpoint in the same transaction. Events at or below the checkpoint
// are skipped, so a redelivered batch is never applied twice.
func applyBatch(tx *bolt.Tx, events []domain.Event) error {
	cp := readCheckpoint(tx)
	for _, e := range events {
		if e.Seq <= cp {
			continue
		}
		if err := apply(tx, e); err != nil {
			return fmt.Errorf("apply %s %s (seq %d): %w", e.Type, e.AggregateID, e.Seq, err)
		}
		cp = e.Seq
	}
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], cp)
	return tx.Bucket(bMeta).Put(kCheckpoint, buf[:])
}
