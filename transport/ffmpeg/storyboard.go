package ffmpeg

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Storyboard settings: at most storyboardMaxTiles thumbnails, one every
// storyboardMinStep or more (the duration over the tile count), each
// storyboardTileWidth wide keeping the aspect, storyboardCols to a row.
const (
	storyboardMaxTiles  = 100
	storyboardMinStepMS = 1000
	storyboardTileWidth = 160
	storyboardCols      = 10
	storyboardQuality   = 5 // mjpeg -q:v (2 best .. 31 worst)
)

// Storyboard is the plan of a sprite sheet: Count tiles of TileW×TileH, the
// k-th showing the video at k×Step, laid out Cols to a row over Rows rows,
// left to right, top to bottom. The sprite is Cols×TileW by Rows×TileH.
type Storyboard struct {
	StepMS       int // milliseconds between tiles
	Count        int
	Cols, Rows   int
	TileW, TileH int
	Length       float64 // seconds the cues cover
}

// PlanStoryboard plans the storyboard of a video of info's trusted length
// whose tiles are scaled from a picture of w×h (the lowest rung). The zero
// Storyboard (Count 0) means none: a video without a size.
func PlanStoryboard(info Info, w, h int) Storyboard {
	length := info.Length()
	if w <= 0 || h <= 0 {
		return Storyboard{}
	}
	step := max(storyboardMinStepMS, int(math.Ceil(length*1000/storyboardMaxTiles)))
	count := min(max(int(math.Ceil(length*1000/float64(step)-1e-6)), 1), storyboardMaxTiles)
	tw := min(storyboardTileWidth, w&^1)
	th := even(float64(tw) * float64(h) / float64(w))
	cols := min(count, storyboardCols)
	return Storyboard{StepMS: step, Count: count, Cols: cols, Rows: (count + cols - 1) / cols,
		TileW: tw, TileH: th, Length: length}
}

// Width and Height are the sprite's size.
func (s Storyboard) Width() int  { return s.Cols * s.TileW }
func (s Storyboard) Height() int { return s.Rows * s.TileH }

// filter is the filter chain from a decoded picture to the sprite: one
// frame per step, scaled to a tile, Count of them tiled (padded when the
// video ends early).
func (s Storyboard) filter() string {
	return fmt.Sprintf("fps=fps=1000/%d:round=down,scale=%d:%d,tile=%dx%d:nb_frames=%d",
		s.StepMS, s.TileW, s.TileH, s.Cols, s.Rows, s.Count)
}

// output are the arguments of the sprite's output file (a second output
// of the ladder's ffmpeg): the graph's label, one JPEG frame.
func (s Storyboard) output(label, file string, length float64) []string {
	var args []string
	if length > 0 {
		args = append(args, "-t", seconds(length+1))
	}
	return append(args, "-map", label, "-frames:v", "1", "-update", "1",
		"-c:v", "mjpeg", "-q:v", strconv.Itoa(storyboardQuality), "-f", "image2", file)
}

// StoryboardArgs builds a second pass that makes only the sprite, from
// the source (the alternative to a branch of the ladder's pass; kino bench
// --only outputs measures both).
func StoryboardArgs(in Input, out string, info Info, s Storyboard) []string {
	args := append(start(), in.capped(info.MaxPixels)...)
	chain := s.filter()
	if f := rateCap(info); f != "" {
		chain = f + "," + chain
	}
	args = append(args, "-filter_complex", videoIn(info)+chain+"[sb]")
	return append(args, s.output("[sb]", out, info.Length())...)
}

// Tile is the region of the sprite of cue k.
func (s Storyboard) Tile(k int) (x, y, w, h int) {
	return (k % s.Cols) * s.TileW, (k / s.Cols) * s.TileH, s.TileW, s.TileH
}

// VTT is the WebVTT thumbnails track of the storyboard: one cue per tile,
// from k×Step to the next tile (the last one to Length), pointing at its
// region of image (a URL relative to the VTT) by a media fragment
// "#xywh=x,y,w,h".
func (s Storyboard) VTT(image string) []byte {
	var b strings.Builder
	b.WriteString("WEBVTT\n")
	for k := range s.Count {
		from := float64(k*s.StepMS) / 1000
		to := float64((k+1)*s.StepMS) / 1000
		if k == s.Count-1 || to > s.Length {
			to = max(s.Length, from+0.001)
		}
		x, y, w, h := s.Tile(k)
		fmt.Fprintf(&b, "\n%s --> %s\n%s#xywh=%d,%d,%d,%d\n", vttTime(from), vttTime(to), image, x, y, w, h)
	}
	return []byte(b.String())
}

// vttTime formats seconds as WebVTT's hh:mm:ss.ttt.
func vttTime(sec float64) string {
	ms := int64(math.Round(sec * 1000))
	return fmt.Sprintf("%02d:%02d:%02d.%03d", ms/3600000, ms/60000%60, ms/1000%60, ms%1000)
}
