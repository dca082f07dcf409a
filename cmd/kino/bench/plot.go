package bench

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Colours of the ladders in the plot.
var ladderColour = map[string]string{ladderFixed: "#888888", ladderKino: "#1f77b4", ladderPeerTube: "#e8710a"}

// qualityPlot draws the quality measure as an SVG: a panel per clip, each
// ladder's rungs as points joined by a line, their bit rate across (log
// scale) against their SSIM up, in decibels (-10 log10(1 - SSIM)), where
// equal steps are equal steps of visible quality. Further left at the same
// height is fewer bits for the same quality.
func qualityPlot(clips []qualityClipResult) []byte {
	const (
		cols, pw, ph   = 4, 300, 230 // panels per row, panel size
		ml, mr, mt, mb = 48, 12, 28, 36
	)
	rows := (len(clips) + 1 + cols - 1) / cols // one cell for the legend
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", cols*pw, rows*ph)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	for i, c := range clips {
		x0, y0 := float64(i%cols*pw), float64(i/cols*ph)
		lo, hi, qlo, qhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
		for _, r := range c.Rungs {
			lo, hi = min(lo, r.Kbps), max(hi, r.Kbps)
			qlo, qhi = min(qlo, ssimDB(r.SSIM)), max(qhi, ssimDB(r.SSIM))
		}
		lo, hi = math.Log10(lo)-0.05, math.Log10(hi)+0.05
		qlo, qhi = math.Floor(qlo), math.Ceil(qhi)
		if qhi <= qlo {
			qhi = qlo + 1
		}
		px := func(kbps float64) float64 {
			return x0 + ml + (math.Log10(kbps)-lo)/(hi-lo)*(pw-ml-mr)
		}
		py := func(ssim float64) float64 {
			return y0 + mt + (qhi-ssimDB(ssim))/(qhi-qlo)*(ph-mt-mb)
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-weight="bold">%s</text>`+"\n", x0+ml, y0+16, html.EscapeString(c.Clip.Name))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%d" height="%d" fill="none" stroke="#ccc"/>`+"\n", x0+ml, y0+mt, pw-ml-mr, ph-mt-mb)
		for _, k := range ticks(math.Pow(10, lo), math.Pow(10, hi)) {
			x := px(k)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#eee"/><text x="%.1f" y="%.0f" text-anchor="middle" fill="#555">%g</text>`+"\n",
				x, y0+mt, x, y0+ph-mb, x, y0+ph-mb+13, k)
		}
		step := math.Max(1, math.Round((qhi-qlo)/5))
		for q := qlo; q <= qhi; q += step {
			y := y0 + mt + (qhi-q)/(qhi-qlo)*(ph-mt-mb)
			fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#eee"/><text x="%.0f" y="%.1f" text-anchor="end" fill="#555">%.0f</text>`+"\n",
				x0+ml, y, x0+pw-mr, y, x0+ml-4, y+4, q)
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle" fill="#555">kbit/s</text>`+"\n", x0+ml+(pw-ml-mr)/2, y0+ph-8)
		fmt.Fprintf(&b, `<text transform="translate(%.0f,%.0f) rotate(-90)" text-anchor="middle" fill="#555">SSIM dB</text>`+"\n", x0+12, y0+mt+(ph-mt-mb)/2)
		for _, l := range qualityLadders {
			var pts []string
			for _, r := range c.Rungs {
				if r.Ladder == l {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(r.Kbps), py(r.SSIM)))
				}
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.Join(pts, " "), ladderColour[l])
			for _, r := range c.Rungs {
				if r.Ladder == l {
					x, y := px(r.Kbps), py(r.SSIM)
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/><text x="%.1f" y="%.1f" font-size="8" fill="%s">%s</text>`+"\n",
						x, y, ladderColour[l], x+4, y-3, ladderColour[l], strings.TrimSuffix(r.Rung, "p"))
				}
			}
		}
	}
	lx, ly := float64(len(clips)%cols*pw)+ml, float64(len(clips)/cols*ph)+mt
	legend := map[string]string{ladderFixed: "fixed bitrate (kino before)", ladderKino: "kino: quality target under a cap", ladderPeerTube: "PeerTube's default VOD profile"}
	for i, l := range qualityLadders {
		y := ly + float64(i)*20
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="3"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			lx, y, lx+24, y, ladderColour[l], lx+30, y+4, legend[l])
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="#555">each point a rung, named by its height;</text>`+"\n", lx, ly+70)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="#555">left is fewer bits, up is better quality;</text>`+"\n", lx, ly+86)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="#555">a synthetic corpus, not real footage</text>`+"\n", lx, ly+102)
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// ssimDB is SSIM in decibels, -10 log10(1 - SSIM), at most 60.
func ssimDB(ssim float64) float64 {
	if ssim >= 1 {
		return 60
	}
	return min(60, -10*math.Log10(1-ssim))
}

// ticks are the values of 1, 2 and 5 times a power of ten between lo and
// hi.
func ticks(lo, hi float64) []float64 {
	var out []float64
	for p := math.Pow(10, math.Floor(math.Log10(lo))); p <= hi; p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := m * p; v >= lo && v <= hi {
				out = append(out, v)
			}
		}
	}
	return out
}
