package eventstore

import "github.com/kino-video/kino/eventstore/internal/storeaccess"

func init() {
	storeaccess.Of = func(store any) storeaccess.Handles {
		s := store.(*Store)
		return storeaccess.Handles{JS: s.js, Events: s.stream, Replicas: max(s.cfg.Replicas, 1), DuplicateWindow: duplicateWindow}
	}
}
