package transcoder

import (
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/kino-video/kino/transport/hls"
	"github.com/kino-video/kino/transport/media"
)

// measureBandwidth rewrites the master playlist of work (verified: every
// playlist it lists is whole and local) with each variant stream's
// BANDWIDTH and AVERAGE-BANDWIDTH as its segments and its audio carry
// them. ffmpeg writes its guess from the encoder's settings, which with a
// quality target (CRF) under a cap says nothing of what a rung really
// needs: a slide talk's 1080p may average a tenth of its cap, and a
// player choosing by the guess would never pick it on a modest link.
// The CODECS ffmpeg left out are filled too (fillCodecs), and FRAME-RATE
// set to rate (setFrameRate), even when the measure fails. Read and
// written inside work, no link followed.
func measureBandwidth(work string, rate float64) error {
	root, err := os.OpenRoot(work)
	if err != nil {
		return err
	}
	defer root.Close()
	master := path.Join(media.HLSDir, media.MasterName)
	data, err := readPlaylist(root, master)
	if err != nil {
		return err
	}
	m, err := hls.ParseMaster(data)
	if err != nil {
		return err
	}
	err = m.SetBandwidth(func(uri string) (hls.Rates, error) {
		if !local(uri) {
			return hls.Rates{}, fmt.Errorf("%q is not a playlist of its own", uri)
		}
		rel := path.Join(media.HLSDir, uri)
		data, err := readPlaylist(root, rel)
		if err != nil {
			return hls.Rates{}, err
		}
		pl, err := hls.ParseMedia(data)
		if err != nil {
			return hls.Rates{}, err
		}
		return hls.MediaRates(pl, func(seg string) (int64, error) {
			if !local(seg) {
				return 0, fmt.Errorf("%q is not a segment of its own", seg)
			}
			fi, err := root.Lstat(path.Join(path.Dir(rel), seg))
			if err != nil {
				return 0, err
			}
			if !fi.Mode().IsRegular() {
				return 0, fmt.Errorf("segment %s is not a plain file", seg)
			}
			return fi.Size(), nil
		})
	})
	if err != nil {
		// ffmpeg's estimates stay; the codecs are filled all the same.
		berr := fmt.Errorf("%s: %w", media.MasterName, err)
		if m, err = hls.ParseMaster(data); err != nil {
			return berr
		}
		err = berr
	}
	setFrameRate(m, rate)
	if cerr := fillCodecs(root, m); cerr != nil { // codecs.go
		err = errors.Join(err, fmt.Errorf("%s: a variant's CODECS left out: %w", media.MasterName, cerr))
	}
	out, eerr := m.Encode()
	if eerr != nil {
		return errors.Join(err, eerr)
	}
	return errors.Join(err, replaceFile(root, master, out))
}
