package hls

import (
	"fmt"
	"math"
	"strconv"
)

// Rates are the bit rates of a media playlist's segments, in bits per
// second: the peak segment bit rate and the average (all their sizes
// over all their durations).
//
// The peak is the largest bit rate of any run of consecutive segments
// lasting 0.5 to 1.5 times the target duration (as draft-pantos-hls-rfc8216bis
// defines it), not of any one segment: a video's last segment is often a
// fraction of a second opening on a keyframe, whose bytes over its
// duration would claim many times the rate any viewer needs. A playlist
// shorter than half its target duration has its average as its peak.
type Rates struct {
	Peak, Average int64
}

// MediaRates measures the segments of pl, size giving each segment's
// bytes from its URI. The target duration is pl's #EXT-X-TARGETDURATION,
// else its longest segment's, rounded up. A playlist whose segments last
// no time (an audio track of one packet) has no rates: zero.
func MediaRates(pl *Media, size func(uri string) (int64, error)) (Rates, error) {
	n := len(pl.Segments)
	bytes := make([]int64, n)
	var total int64
	var secs, longest float64
	for i, s := range pl.Segments {
		b, err := size(s.URI)
		if err != nil {
			return Rates{}, err
		}
		bytes[i], total = b, total+b
		secs += max(s.Duration, 0)
		longest = max(longest, s.Duration)
	}
	if secs <= 0 {
		return Rates{}, nil
	}
	r := Rates{Average: bitsPerSecond(total, secs)}
	target := targetDuration(pl, longest)
	for i := range n {
		var b int64
		var d float64
		for j := i; j < n && d < 1.5*target; j++ {
			b, d = b+bytes[j], d+max(pl.Segments[j].Duration, 0)
			if d >= 0.5*target && d <= 1.5*target {
				r.Peak = max(r.Peak, bitsPerSecond(b, d))
			}
		}
	}
	if r.Peak == 0 {
		r.Peak = r.Average
	}
	return r, nil
}

// targetDuration is pl's #EXT-X-TARGETDURATION, else longest rounded up.
func targetDuration(pl *Media, longest float64) float64 {
	for _, t := range pl.Header {
		if t.Name() == "#EXT-X-TARGETDURATION" {
			if v, err := strconv.Atoi(t.Value()); err == nil && v > 0 {
				return float64(v)
			}
		}
	}
	return max(math.Ceil(longest), 1)
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
