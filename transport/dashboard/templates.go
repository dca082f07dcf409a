package dashboard

import (
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"strings"
	"time"

	"github.com/kino-video/kino/domain"
)

// pageNames are the pages; each is parsed with the layout into its own set.
var pageNames = []string{"login", "password", "error", "videos", "video", "upload", "collections",
	"keys", "key", "webhooks", "webhook", "usage", "admin", "account"}

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
	"deref64i": func(n *int) int {
		if n == nil {
			return 0
		}
		return *n
	},
	"bytes": formatBytes,
	"dur":   formatDuration,
	"when":  formatWhen,
	"pct": func(f *float64) int {
		if f == nil {
			return 0
		}
		return int(math.Round(math.Max(0, math.Min(1, *f)) * 100))
	},
	"live": func(s domain.Status) bool { return s == domain.StatusPending || s == domain.StatusProcessing },
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
