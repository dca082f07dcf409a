package asrtest

import (
	"strings"
	"unicode"
)

// Words splits text into lower-case words, without punctuation but for
// apostrophes inside words ("don't").
func Words(text string) []string {
	f := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
	words := f[:0]
	for _, w := range f {
		if w = strings.Trim(w, "'"); w != "" {
			words = append(words, w)
		}
	}
	return words
}

// WER aligns hyp to ref with the fewest word substitutions, insertions and
// deletions (Levenshtein on words) and returns their number over the
// words of ref, and for each word of hyp the word of ref it matches
// exactly in that alignment (-1 when none).
func WER(ref, hyp []string) (wer float64, match []int) {
	n, m := len(ref), len(hyp)
	d := make([][]int, n+1)
	for i := range d {
		d[i] = make([]int, m+1)
		d[i][0] = i
	}
	for j := 0; j <= m; j++ {
		d[0][j] = j
	}
	for i := 1; i <= n; i++ {
		for j := 1; j <= m; j++ {
			sub := d[i-1][j-1]
			if ref[i-1] != hyp[j-1] {
				sub++
			}
			d[i][j] = min(sub, d[i-1][j]+1, d[i][j-1]+1)
		}
	}
	match = make([]int, m)
	for j := range match {
		match[j] = -1
	}
	for i, j := n, m; i > 0 && j > 0; {
		switch {
		case ref[i-1] == hyp[j-1] && d[i][j] == d[i-1][j-1]:
			match[j-1] = i - 1
			i, j = i-1, j-1
		case d[i][j] == d[i-1][j-1]+1:
			i, j = i-1, j-1
		case d[i][j] == d[i-1][j]+1:
			i--
		default:
			j--
		}
	}
	if n == 0 {
		return float64(m), match
	}
	return float64(d[n][m]) / float64(n), match
}
