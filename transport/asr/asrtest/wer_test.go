package asrtest

import (
	"slices"
	"testing"
)

func TestWER(t *testing.T) {
	tests := []struct {
		name, ref, hyp string
		wer            float64
		match          []int
	}{
		{"exact", "the lazy dog", "The lazy dog.", 0, []int{0, 1, 2}},
		{"substitution", "the lazy dog", "the hazy dog", 1.0 / 3, []int{0, -1, 2}},
		{"deletion", "the quick brown fox", "the brown fox", 0.25, []int{0, 2, 3}},
		{"insertion", "the fox", "the red fox", 0.5, []int{0, -1, 1}},
		{"nothing heard", "the fox", "", 1, []int{}},
		{"compound", "sea shells", "seashells", 1, []int{-1}},
		{"apostrophe", "don't go", "don't, go", 0, []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wer, match := WER(Words(tt.ref), Words(tt.hyp))
			if wer != tt.wer || !slices.Equal(match, tt.match) {
				t.Errorf("WER(%q, %q) = %v, %v; want %v, %v", tt.ref, tt.hyp, wer, match, tt.wer, tt.match)
			}
		})
	}
}
