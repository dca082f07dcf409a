package dashboard

// Unfinished is an unfinished tus upload as GET /v1/uploads lists it.
type Unfinished struct {
	ID         string `json:"id"`
	Filename   string `json:"filename"`
	Collection string `json:"collection"`
	Length     int64  `json:"length"`
	Offset     int64  `json:"offset"`
	CreatedAt  string `json:"createdAt"`
	ExpiresAt  string `json:"expiresAt"`
	Direct     bool   `json:"direct"`
}

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
