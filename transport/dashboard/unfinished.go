package dashboard

import "github.com/kino-video/kino/transport/wire"

// Unfinished is an unfinished tus upload as GET /v1/uploads lists it.
type Unfinished struct{ wire.UnfinishedUpload }

// Percent is how much of the file has arrived, rounded down (100 only
// when all of it has).
func (u Unfinished) Percent() int64 {
	if u.Length <= 0 {
		return 0
	}
	return min(100, u.Offset*100/u.Length)
}

type unfinishedList struct {
	Data []Unfinished `json:"data"`
}
