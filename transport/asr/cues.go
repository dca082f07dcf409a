package asr

import (
	"strings"
	"time"
)

// Readable cues: at most two lines of 42 characters, shown at most 7 s.
const (
	maxLineLen = 42
	maxCue     = 7 * time.Second
	// maxWordTime bounds how far before its end an utterance is taken to
	// start (per word, plus a second), when no pause before it was found:
	// under constant background noise the pause detector finds no pause,
	// and an utterance would otherwise start where the last one ended.
	maxWordTime = 600 * time.Millisecond
)

// utterance is what the recognizer heard up to a pause: its words (none
// when it made nothing of the sound) and the time it noticed the pause (a
// little after the speech ended).
type utterance struct {
	end   time.Duration
	words []string
}

// span is a stretch of sound between two pauses.
type span struct{ start, end time.Duration }

// cues times each utterance (in order) by the sound heard between the end
// of the one before and its own end, and cuts it into readable cues.
func cues(utts []utterance, sound []span) []Segment {
	var out []Segment
	var prev time.Duration
	for _, u := range utts {
		if u.end <= prev {
			continue
		}
		if len(u.words) > 0 {
			start, end := within(sound, prev, u.end)
			if earliest := end - time.Duration(len(u.words))*maxWordTime - time.Second; start == prev && start < earliest {
				start = earliest // no pause before it
			}
			out = append(out, split(u.words, start, end)...)
		}
		prev = u.end // an utterance of nothing recognized ends here too
	}
	return out
}

// within is the part of (lo, hi] that sound covers, from its first sound
// to its last; all of it when there is none (the pause detector and the
// recognizer disagree, or the sound never pauses).
func within(sound []span, lo, hi time.Duration) (start, end time.Duration) {
	start, end = hi, lo
	for _, s := range sound {
		if s.end > lo && s.start < hi {
			start = min(start, max(s.start, lo))
			end = max(end, min(s.end, hi))
		}
	}
	if start >= end {
		return lo, hi
	}
	return start, end
}

// split cuts words spoken from start to end into the fewest cues that are
// readable, balanced by characters, each timed in proportion to its
// characters (a fair guess of speaking time when the recognizer gives no
// word times). When only one word a cue would still be too long, each
// word's cue is cut to maxCue from its start.
func split(words []string, start, end time.Duration) []Segment {
	chars := 0
	for _, w := range words {
		chars += len(w) + 1
	}
	k := max(1, int((end-start+maxCue-1)/maxCue), (chars+2*maxLineLen)/(2*maxLineLen+1))
	for ; k < len(words); k++ {
		if segs, ok := timed(balance(words, k), chars, start, end); ok {
			return segs
		}
	}
	one := make([][]string, len(words))
	for i, w := range words {
		one[i] = []string{w}
	}
	segs, _ := timed(one, chars, start, end)
	for i := range segs {
		segs[i].End = min(segs[i].End, segs[i].Start+maxCue) // one word said slowly, or a long pause within
	}
	return segs
}

// balance groups words, in order, into at most k runs of about equal
// characters: each word goes to the run its middle falls in.
func balance(words []string, k int) [][]string {
	total := 0
	for _, w := range words {
		total += len(w) + 1
	}
	groups := make([][]string, 0, k)
	at, last := 0, -1
	for _, w := range words {
		n := len(w) + 1
		g := min(k-1, (2*at+n)*k/(2*total))
		if g != last {
			groups = append(groups, nil)
			last = g
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], w)
		at += n
	}
	return groups
}

// timed shares start..end among groups by their characters (of chars in
// all) and reports whether every cue fits two lines and maxCue.
func timed(groups [][]string, chars int, start, end time.Duration) ([]Segment, bool) {
	segs := make([]Segment, 0, len(groups))
	ok := true
	at, from := 0, start
	for i, g := range groups {
		for _, w := range g {
			at += len(w) + 1
		}
		to := start + time.Duration(int64(end-start)*int64(at)/int64(chars))
		if i == len(groups)-1 {
			to = end
		}
		text, fits := lines(g)
		ok = ok && fits && to-from <= maxCue
		segs = append(segs, Segment{Start: from, End: to, Text: text})
		from = to
	}
	return segs, ok
}

// lines sets words on one line, or two of about equal length, and reports
// whether each is at most maxLineLen characters.
func lines(words []string) (string, bool) {
	one := strings.Join(words, " ")
	if len(one) <= maxLineLen || len(words) < 2 {
		return one, len(one) <= maxLineLen
	}
	best, bestLen := 0, len(one)
	left := -1
	for i := 1; i < len(words); i++ {
		left += len(words[i-1]) + 1
		if longer := max(left, len(one)-left-1); longer < bestLen {
			best, bestLen = i, longer
		}
	}
	text := strings.Join(words[:best], " ") + "\n" + strings.Join(words[best:], " ")
	return text, bestLen <= maxLineLen
}
