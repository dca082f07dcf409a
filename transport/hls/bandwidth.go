package hls

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Rates are the bit rates of a media playlist's segments, in bits per
// second: the peak segment bit rate (RFC 8216 4.3.4.2: the largest of
// each segment's size over its duration) and the average (all their
// sizes over all their durations).
type Rates struct {
	Peak, Average int64
}

// MediaRates measures the segments of pl, size giving each segment's
// bytes from its URI. A playlist without segments, or whose segments
// last no time, has no rates.
func MediaRates(pl *Media, size func(uri string) (int64, error)) (Rates, error) {
	var r Rates
	var bytes int64
	var secs float64
	for _, s := range pl.Segments {
		n, err := size(s.URI)
		if err != nil {
			return Rates{}, err
		}
		if s.Duration <= 0 {
			continue
		}
		r.Peak = max(r.Peak, bitsPerSecond(n, s.Duration))
		bytes += n
		secs += s.Duration
	}
	if secs <= 0 {
		return Rates{}, errors.New("no segment with a duration")
	}
	r.Average = bitsPerSecond(bytes, secs)
	return r, nil
}

func bitsPerSecond(bytes int64, secs float64) int64 {
	return int64(math.Ceil(float64(bytes) * 8 / secs))
}

// SetBandwidth sets every variant stream's BANDWIDTH and
// AVERAGE-BANDWIDTH to what its media playlist's segments carry, with
// the largest of its audio group's renditions (AUDIO="..."): the rates
// of "any playable combination of renditions" (RFC 8216 4.3.4.2), as a
// player adding the audio to the video it picked would fetch. rates
// measures the media playlist at a URI.
func (m *Master) SetBandwidth(rates func(uri string) (Rates, error)) error {
	rs, err := m.Renditions()
	if err != nil {
		return err
	}
	groups := map[string]Rates{}
	for _, a := range rs {
		typ, _ := a.Get("TYPE")
		group, _ := a.Get("GROUP-ID")
		uri, ok := a.Get("URI")
		if typ != "AUDIO" || !ok {
			continue
		}
		r, err := rates(uri)
		if err != nil {
			return fmt.Errorf("%s: %w", uri, err)
		}
		g := groups[group]
		groups[group] = Rates{max(g.Peak, r.Peak), max(g.Average, r.Average)}
	}
	for i, v := range m.Variants {
		r, err := rates(v.URI)
		if err != nil {
			return fmt.Errorf("%s: %w", v.URI, err)
		}
		if group, ok := v.Attrs.Get("AUDIO"); ok {
			a, ok := groups[group]
			if !ok {
				return fmt.Errorf("%s: no audio rendition in group %q", v.URI, group)
			}
			r.Peak += a.Peak
			r.Average += a.Average
		}
		m.Variants[i].Attrs = v.Attrs.Set("BANDWIDTH", strconv.FormatInt(r.Peak, 10)).
			SetAfter("AVERAGE-BANDWIDTH", strconv.FormatInt(r.Average, 10), "BANDWIDTH")
	}
	return nil
}

// SetAfter is a with attribute name set to value: in its place when a has
// it, else right after attribute after (last when a has neither).
func (a Attrs) SetAfter(name, value, after string) Attrs {
	if _, ok := a.Get(name); ok {
		return a.Set(name, value)
	}
	for i, at := range a {
		if at.Name == after {
			out := append(Attrs(nil), a[:i+1]...)
			out = append(out, Attr{name, value})
			return append(out, a[i+1:]...)
		}
	}
	return a.Set(name, value)
}
