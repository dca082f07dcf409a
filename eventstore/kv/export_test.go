package kv

import "context"

// PutRaw stores raw as a video's progress value, as any writer of the
// bucket could.
func (p *Progress) PutRaw(ctx context.Context, videoID string, raw []byte) error {
	_, err := p.kv.Put(ctx, videoID, raw)
	return err
}
