package dashboard

import (
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"strings"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/wire"
)

// pageNames are the pages; each is parsed with the layout into its own set.
var pageNames = []string{"login", "password", "error", "videos", "video", "upload", "collections",
	"keys", "key", "webhooks", "webhook", "usage", "admin", "account", "signingkeys"}

func parsePages() (map[string]*template.Template, error) {
	layout, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard: page %s: %w", name, err)
		}
		pages[name] = t
	}
	if names, _ := fs.Glob(templateFS, "templates/*.html"); len(names) != len(pageNames)+1 {
		return nil, fmt.Errorf("dashboard: %d templates for %d pages and the layout", len(names), len(pageNames))
	}
	return pages, nil
}

var funcs = template.FuncMap{
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	"deref64": func(n *int64) int64 {
		if n == nil {
			return 0
		}
		return *n
	},
	"deref64u": func(n *uint64) uint64 {
		if n == nil {
			return 0
		}
		return *n
	},
	"deref64f": func(n *float64) float64 {
		if n == nil {
			return 0
		}
		return *n
	},
	"deref64i": func(n *int) int {
		if n == nil {
			return 0
		}
		return *n
	},
	"bytes": formatBytes,
	// ninetenths is where a usage meter turns to its warning colour.
	"ninetenths": func(n int64) int64 { return n / 10 * 9 },
	"dur":        formatDuration,
	"when":       formatWhen,
	"pct": func(f *float64) int {
		if f == nil {
			return 0
		}
		return int(math.Round(math.Max(0, math.Min(1, *f)) * 100))
	},
	"live": func(s domain.Status) bool { return s == domain.StatusPending || s == domain.StatusProcessing },
	"eta":  liveText,
	"lower": func(s any) string {
		return strings.ToLower(fmt.Sprint(s))
	},
	"title": func(s any) string {
		str := strings.ToLower(fmt.Sprint(s))
		if str == "" {
			return ""
		}
		return strings.ToUpper(str[:1]) + str[1:]
	},
	"total": func(m map[string]int) int {
		n := 0
		for _, v := range m {
			n += v
		}
		return n
	},
	// pair passes three values to a sub-template.
	"pair": func(a, b, c string) struct{ A, B, C string } { return struct{ A, B, C string }{a, b, c} },
	"join": strings.Join,
}

func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func formatDuration(d *float64) string {
	if d == nil {
		return ""
	}
	s := int(math.Round(*d))
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// formatWhen shows an RFC 3339 time in UTC, to the minute (app.js shows it
// in the visitor's time zone).
func formatWhen(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// liveText says where a waiting or processing video is: its place in the
// queue while PENDING; percent, time left and speed while PROCESSING.
// app.js's liveText writes the same as it polls.
func liveText(v wire.Video) string {
	switch v.Status {
	case domain.StatusPending:
		if v.QueuePosition != nil && *v.QueuePosition > 0 {
			if *v.QueuePosition == 1 {
				return "Waiting: next in line"
			}
			return fmt.Sprintf("Waiting: %d in line before it", *v.QueuePosition-1)
		}
		return "Waiting for a transcoder"
	case domain.StatusProcessing:
		pct := 0
		if v.Progress != nil {
			pct = int(math.Round(math.Max(0, math.Min(1, *v.Progress)) * 100))
		}
		parts := []string{fmt.Sprintf("%d%%", pct)}
		if v.ETA != nil {
			parts = append(parts, "about "+formatLeft(*v.ETA)+" left")
		}
		if v.Speed != nil && *v.Speed > 0 {
			parts = append(parts, fmt.Sprintf("%.1f× real time", *v.Speed))
		}
		return strings.Join(parts, " · ")
	}
	return ""
}

// formatLeft rounds seconds for people: "40 s", "3 min", "1 h 5 min".
func formatLeft(s float64) string {
	n := int(math.Ceil(math.Max(0, s)))
	switch {
	case n < 60:
		return fmt.Sprintf("%d s", n)
	case n < 3600:
		return fmt.Sprintf("%d min", (n+59)/60)
	}
	return fmt.Sprintf("%d h %d min", n/3600, (n%3600+59)/60)
}
