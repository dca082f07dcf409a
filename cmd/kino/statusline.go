package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/kino-video/kino/transport/apiclient"
)

// statusLine shows `kino upload --wait`'s processing state on one line:
// rewritten in place on a terminal, one line per change elsewhere.
type statusLine struct {
	w        io.Writer
	terminal bool
	last     string
}

func (s *statusLine) update(v apiclient.Video) {
	line := processingLine(v)
	if line == "" || line == s.last {
		return
	}
	s.last = line
	if s.terminal {
		fmt.Fprint(s.w, "\r"+line+"\x1b[K")
		return
	}
	fmt.Fprintln(s.w, line)
}

// finish clears the line on a terminal.
func (s *statusLine) finish() {
	if s.terminal && s.last != "" {
		fmt.Fprint(s.w, "\r\x1b[K")
	}
}

// processingLine is e.g. "PROCESSING  42%  eta 0:31  ×1.9", or "PENDING
// #3 in queue"; parts not known yet are left out.
func processingLine(v apiclient.Video) string {
	parts := []string{string(v.Status)}
	switch v.Status {
	case apiclient.StatusPending:
		if v.QueuePosition != nil {
			parts = append(parts, fmt.Sprintf("#%d in queue", *v.QueuePosition))
		}
	case apiclient.StatusProcessing:
		if v.Progress != nil {
			parts = append(parts, fmt.Sprintf("%3d%%", int(math.Floor(min(max(*v.Progress, 0), 1)*100))))
		}
		if v.ETA != nil {
			parts = append(parts, "eta "+clockTime(*v.ETA))
		}
		if v.Speed != nil {
			parts = append(parts, fmt.Sprintf("×%.1f", *v.Speed))
		}
	default:
		return ""
	}
	return strings.Join(parts, "  ")
}

// clockTime is seconds as m:ss, or h:mm:ss from an hour.
func clockTime(sec float64) string {
	if math.IsNaN(sec) || sec < 0 {
		sec = 0
	}
	s := int64(math.Round(min(sec, 1e9)))
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
