package kv

import (
	"strings"
	"testing"
)

// Values of buckets made before the size bound, and of hostile writers.
func TestParseProgress(t *testing.T) {
	for _, tc := range []struct {
		raw string
		ok  bool
		p   float64
	}{
		{"0.425", true, 0.425},
		{`{"p":0.5,"s":2,"e":10}`, true, 0.5},
		{"-3", true, 0},
		{"Inf", false, 0},
		{"NaN", false, 0},
		{"", false, 0},
		{`{"p":0.5,"pad":"` + strings.Repeat("a", maxProgressValue) + `"}`, false, 0},
		{strings.Repeat("1", maxProgressValue+1), false, 0},
		{`{"p":0.5,"s":"fast"}`, false, 0},
		{`{"p":0.5,"s":NaN}`, false, 0},
	} {
		r, ok := parseProgress([]byte(tc.raw))
		if ok != tc.ok || r.Progress != tc.p {
			t.Errorf("parseProgress(%.40q) = %+v %v, want %v %v", tc.raw, r, ok, tc.p, tc.ok)
		}
	}
}
