package ffmpeg

import (
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
	"io"
	"math"
	"os"
	"path/filepath"
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
	// A last part under a tenth of a step (the few milliseconds an audio
	// track starting first adds) is the cue before's, not a tile of its own.
	count := min(max(int(math.Ceil(length*1000/float64(step)-0.1)), 1), storyboardMaxTiles)
	tw := min(storyboardTileWidth, w&^1)
	th := even(float64(tw) * float64(h) / float64(w))
	cols := min(count, storyboardCols)
	return Storyboard{StepMS: step, Count: count, Cols: cols, Rows: (count + cols - 1) / cols,
		TileW: tw, TileH: th, Length: length}
}

// Width and Height are the sprite's size.
func (s Storyboard) Width() int  { return s.Cols * s.TileW }
func (s Storyboard) Height() int { return s.Rows * s.TileH }

// filter is the filter chain from a decoded picture to the tiles: one
// frame per step, scaled to a tile. Tile k is the picture on screen at
// k steps into the video, the start of its cue: the last frame at or
// before that moment (round=up puts each frame on the tick at or after
// it, and fps keeps a tick's last frame; round=down would keep the last
// frame before the next tick, a whole step late). start_time=0 starts the ticks
// at the file's start, where the ladder's output starts: a video that
// starts after the audio holds its first picture until then, as the
// ladder does. eof_action=pass lets the last frame through when the video
// ends before the next step: a one-frame video (or the part-step at the
// end of any) still gets its tile.
func (s Storyboard) filter() string {
	return fmt.Sprintf("fps=fps=1000/%d:start_time=0:round=up:eof_action=pass,scale=%d:%d", s.StepMS, s.TileW, s.TileH)
}

// StoryboardTileName is the image2 pattern of the tiles StoryboardArgs
// writes (numbered from 0, cue k's tile is tile k), and TileFile the name
// of tile k.
const StoryboardTileName = "storyboard_tile_%03d.jpg"

func TileFile(k int) string { return fmt.Sprintf(StoryboardTileName, k) }

// StoryboardArgs builds the pass that makes the sprite's tiles, from the
// source: one JPEG per cue (Count at most), named by StoryboardTileName
// under dir; Assemble then lays them out. StillsArgs writes the same tiles
// beside the thumbnail and previews; the transcoder runs this pass alone
// only when that one could not make them all. Neither is part of the
// ladder's pass.
//
// No pass tiles in ffmpeg: an output whose only frame comes at the
// end (the tile filter holds it back until its last tile) is not opened
// until then, and ffmpeg 5.1 prints no -progress line until every output
// is open. As a branch of the ladder's pass it froze the ladder's progress
// at 0 for the whole encode; alone, it would print nothing (and write
// nothing) for as long as a long source takes to decode, and the stall
// watchdog would kill it. One file per tile opens the output at the first
// tile: progress lines flow, and the directory grows.
func StoryboardArgs(in Input, dir string, info Info, s Storyboard) []string {
	args := append(start(), in.capped(info.MaxPixels)...)
	return append(args, storyboardOutput(0, info, s, dir)...)
}

// storyboardOutput is the storyboard's output options (its filtergraph
// included), of input k's video stream.
func storyboardOutput(k int, info Info, s Storyboard, dir string) []string {
	chain := s.filter()
	if f := sparseCap(info); f != "" {
		chain = f + "," + chain
	}
	args := []string{"-filter_complex", fmt.Sprintf("[%s]", videoMapOf(k, info)) + chain + "[sb]"}
	if l := info.Length(); l > 0 {
		args = append(args, "-t", seconds(l+1))
	}
	return append(args, "-map", "[sb]", "-frames:v", strconv.Itoa(s.Count),
		"-c:v", "mjpeg", "-q:v", strconv.Itoa(storyboardQuality), "-start_number", "0",
		"-f", "image2", filepath.Join(dir, StoryboardTileName))
}

// Assemble lays out the tiles StoryboardArgs wrote under dir into the
// sprite, written to out as a JPEG, and removes them. A tile missing (the
// video ended early) is left black; a tile not of the planned size is an
// error. At least the first tile must be there.
func (s Storyboard) Assemble(dir, out string) error {
	defer func() {
		for k := range s.Count {
			_ = os.Remove(filepath.Join(dir, TileFile(k)))
		}
	}()
	if s.Count <= 0 {
		return errors.New("no storyboard planned")
	}
	sprite := image.NewRGBA(image.Rect(0, 0, s.Width(), s.Height()))
	draw.Draw(sprite, sprite.Bounds(), image.Black, image.Point{}, draw.Src)
	for k := range s.Count {
		tile, err := readTile(filepath.Join(dir, TileFile(k)), s.TileW, s.TileH)
		if errors.Is(err, os.ErrNotExist) && k > 0 {
			break // the video ended before its planned length
		}
		if err != nil {
			return fmt.Errorf("storyboard tile %d: %w", k, err)
		}
		x, y, w, h := s.Tile(k)
		draw.Draw(sprite, image.Rect(x, y, x+w, y+h), tile, tile.Bounds().Min, draw.Src)
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	err = jpeg.Encode(f, sprite, &jpeg.Options{Quality: spriteQuality})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// spriteQuality is the JPEG quality of the assembled sprite.
const spriteQuality = 85

// readTile decodes one tile, refusing any size but w×h before decoding.
func readTile(path string, w, h int) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cfg, err := jpeg.DecodeConfig(f)
	if err != nil {
		return nil, err
	}
	if cfg.Width != w || cfg.Height != h {
		return nil, fmt.Errorf("%dx%d, not %dx%d", cfg.Width, cfg.Height, w, h)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return jpeg.Decode(f)
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
