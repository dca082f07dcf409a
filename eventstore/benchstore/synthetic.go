package benchstore

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/kino-video/kino/domain"
)

// Synthetic builds n events shaped like kino's: accounts and collections
// first, then videos uploaded, started and completed (a few failed or
// deleted).
func Synthetic(n int) []domain.Event {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	events := make([]domain.Event, 0, n)
	add := func(agg string, p domain.Payload) {
		at = at.Add(time.Millisecond)
		events = append(events, domain.Event{ID: ulid.MustNew(ulid.Timestamp(at), ulidEntropy{uint64(len(events))}).String(),
			Type: p.EventType(), AggregateID: agg, OccurredAt: at, Data: p})
	}
	const accounts, collections = 100, 10
	for a := 0; a < accounts && len(events) < n; a++ {
		acct := fmt.Sprintf("acct-%d", a)
		add(acct, domain.AccountCreated{Plan: domain.PlanPro})
		for c := 0; c < collections; c++ {
			add(acct+"_c"+fmt.Sprint(c), domain.CollectionCreated{Account: acct, Slug: "c" + fmt.Sprint(c), Name: "Collection"})
		}
	}
	for v := 0; len(events) < n; v++ {
		acct := fmt.Sprintf("acct-%d", v%accounts)
		id := ulid.MustNew(ulid.Timestamp(at), ulidEntropy{uint64(v) << 20}).String()
		add(id, domain.UploadAccepted{Account: acct, Collection: "c" + fmt.Sprint(v%collections), CollectionName: "Collection", Filename: "clip.mp4", OriginalSize: 12345678, Ext: ".mp4"})
		add(id, domain.TranscodeStarted{Account: acct, Attempt: 1, Worker: "bench"})
		switch {
		case v%50 == 0:
			add(id, domain.TranscodeFailed{Account: acct, Attempt: 1, Final: true, Reason: "The file is truncated or corrupt."})
		default:
			add(id, domain.TranscodeSucceeded{Account: acct, Attempt: 1, Duration: 30.04, Width: 1920, Height: 1080, HasAudio: true,
				Resolutions: []string{"1080p", "720p", "480p", "360p", "240p"}, ProcessedSize: 45678901})
		}
		if v%20 == 0 {
			add(id, domain.VideoDeleted{Account: acct})
		}
	}
	return events[:n]
}

type ulidEntropy struct{ n uint64 }

func (e ulidEntropy) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 0
	}
	binary.BigEndian.PutUint64(p[len(p)-8:], e.n)
	return len(p), nil
}
