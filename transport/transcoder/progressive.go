package transcoder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/eventstore"
	"github.com/kino-video/kino/transport/ffmpeg"
	"github.com/kino-video/kino/transport/hls"
	"github.com/kino-video/kino/transport/media"
)

// Progressive publishing (see the package doc): while the ladder's ffmpeg
// runs, an early publisher looks at its work directory about once a second
// and publishes what it finished: the segments each rendition's playlist
// lists, then that rendition's playlist listing exactly the segments
// published (an EVENT playlist starting at 0, without ENDLIST), and the
// master once every rendition has a segment. When every rendition plays
// and a viewer starting now would not catch up with the encoder, it
// records MarkPlayable: the video gets its playlistUrl while PROCESSING.
// When ffmpeg is done, finish publishes the last of it and turns the
// playlists into VOD ones for Publish, which replaces everything.

// earlyEvery is how often the early publisher looks at the work directory.
const earlyEvery = time.Second

// earlySegment is the segment length ffmpeg is asked for (ffmpeg's
// segmentSeconds), the margin of the playable rule.
const earlySegment = 4.0

// playable is the rule that lets a video play before it is complete:
// encoded seconds (published in every rendition) of total at speed (×
// real time, measured so far). A viewer starting now plays 1 s of video a
// second; the encoder adds speed seconds a second. Playback never stalls
// when the encoder, slower than real time, still stays a segment ahead at
// the moment it finishes: encoded >= total*(1-speed) + speed*segment.
// The measured speed is discounted by 10% and a whole segment kept as the
// margin, for encoders that slow down (harder scenes, a busier machine).
func playable(encoded, total, speed float64) bool {
	if encoded <= 0 {
		return false
	}
	if encoded >= total {
		return true
	}
	s := 0.9 * speed
	if s >= 1 {
		return true
	}
	return encoded >= total*(1-s)+earlySegment
}

// early is the early publisher of one attempt.
type early struct {
	t          *Transcoder
	log        *slog.Logger
	id, work   string
	staged     string           // kino's own directory of the rewritten playlists
	renditions []string         // directory names under hls/: the rungs, then the audio
	first      []string         // the renditions of the first master: the low lane's, or all of them (one lane)
	res        []string         // the rungs of the first master, for MarkPlayable
	high       []string         // the high lane's rungs, when the ladder is split into lanes
	total      float64          // seconds the ladder encodes
	rate       float64          // frames per second of the ladder's video (FRAME-RATE)
	bandwidths map[string]int64 // BANDWIDTH of a rendition before it is measured, by name: a copied top rung's
	began      time.Time
	root       *os.Root // the work directory, read without leaving it

	mu        sync.Mutex // one pass at a time
	published map[string][]segment
	master    bool // the first master is published
	playable  bool
	whole     bool // the merged master, every rung, is published (lanes)
	dead      bool // the video is gone: publish nothing more

	quit     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	// ready is closed once the video is playable, or publishing early is
	// off: the small outputs wait for it (transcode).
	ready     chan struct{}
	readyOnce sync.Once
}

// playableNow is closed once the video is playable (or nothing will be
// published early).
func (e *early) playableNow() <-chan struct{} { return e.ready }

func (e *early) markReady() { e.readyOnce.Do(func() { close(e.ready) }) }

type segment struct {
	name string
	dur  float64
}

// publishEarly starts the early publisher of the ladder ffmpeg is about to
// write under work/hls. Stop it (stop, or finish then stop) before the
// work directory goes.
//
// split is where the ladder splits into lanes (ffmpeg.SplitLadder), 0
// for one process: the first master is then the low lane's (ffmpeg's
// master.m3u8, its rungs and the audio), and the video plays at those
// rungs first; once the high lane too is safe to start from, by the same
// rule, the merged master listing every rung replaces it, for the viewers
// who come after.
func (t *Transcoder) publishEarly(ctx context.Context, log *slog.Logger, id, work string, info ffmpeg.Info, rungs []ffmpeg.Rung, split int, fast ffmpeg.FastPath) *early {
	e := &early{t: t, log: log, id: id, work: work, staged: work + stagedSuffix, total: info.Length(), rate: ffmpeg.OutputRate(info),
		bandwidths: map[string]int64{},
		began:      time.Now(), published: map[string][]segment{}, quit: make(chan struct{}), done: make(chan struct{}),
		ready: make(chan struct{})}
	for k, r := range rungs {
		e.renditions = append(e.renditions, r.Name)
		if k < split {
			e.high = append(e.high, r.Name)
		} else {
			e.res = append(e.res, r.Name)
		}
	}
	if bw := fast.Bandwidth(info); bw > 0 && len(rungs) > 0 {
		e.bandwidths[rungs[0].Name] = bw
	}
	e.first = append(e.first, e.res...)
	if info.HasAudio {
		e.renditions = append(e.renditions, ffmpeg.AudioRendition)
		e.first = append(e.first, ffmpeg.AudioRendition)
	}
	var err error
	if err = os.Mkdir(e.staged, 0o700); err == nil {
		e.root, err = os.OpenRoot(work)
	}
	if err != nil {
		log.Warn("no progressive publishing", "err", err)
		close(e.done)
		e.markReady()
		return e
	}
	go e.run(ctx)
	return e
}

func (e *early) run(ctx context.Context) {
	defer close(e.done)
	tick := e.t.cfg.hooks.earlyTick
	if tick == nil {
		ticker := time.NewTicker(earlyEvery)
		defer ticker.Stop()
		tick = ticker.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.quit:
			return
		case <-tick:
			e.pass(ctx)
		}
	}
}

// stop ends the publisher, waits for a pass under way, and removes its
// directory. Safe to call more than once.
func (e *early) stop() {
	e.stopOnce.Do(func() { close(e.quit) })
	<-e.done
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.root != nil {
		e.root.Close()
		e.root = nil
	}
	_ = os.RemoveAll(e.staged)
}

// finish, once ffmpeg ended well, publishes what the last passes missed
// (still as EVENT playlists: the video plays until Publish) and turns
// every media playlist of the work directory into a VOD one.
func (e *early) finish(ctx context.Context) error {
	e.stopOnce.Do(func() { close(e.quit) })
	<-e.done
	if e.root == nil {
		return nil
	}
	e.pass(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.renditions {
		if err := toVOD(e.root, path.Join(media.HLSDir, r, "index.m3u8")); err != nil {
			return fmt.Errorf("%w: %s: %v", errIncomplete, r, err)
		}
	}
	return nil
}

// pass publishes what ffmpeg finished since the last pass.
func (e *early) pass(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dead || e.root == nil || ctx.Err() != nil {
		return
	}
	if h := e.t.cfg.hooks.earlyPass; h != nil {
		h(e.work)
	}
	err := e.publish(ctx)
	switch {
	case err == nil:
	case domain.IsKind(err, domain.NotFound):
		e.dead = true // deleted: the job ends, Remove takes what was published
	case ctx.Err() == nil:
		e.log.Warn("progressive publishing", "err", err)
	}
}

func (e *early) publish(ctx context.Context) error {
	for _, r := range e.renditions {
		listed, header, init, err := e.listed(r)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return err
		}
		have := e.published[r]
		if len(listed) < len(have) {
			return fmt.Errorf("%s: the playlist lost segments", r)
		}
		if len(listed) > len(have) {
			rels := make([]string, 0, len(listed)-len(have)+1)
			if len(have) == 0 && init != "" {
				// Before the first playlist naming it. ffmpeg creates it
				// empty at its start and writes it whole before its first
				// segment; a rendition whose initialization segment is
				// still empty waits for the next pass.
				rel := path.Join(media.HLSDir, r, init)
				if fi, err := e.root.Lstat(rel); err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
					continue
				}
				rels = append(rels, rel)
			}
			for _, s := range listed[len(have):] {
				rels = append(rels, path.Join(media.HLSDir, r, s.name))
			}
			if err := e.t.cfg.Media.PublishFiles(ctx, e.id, e.work, rels); err != nil {
				return err
			}
			if err := e.stage(r, header, listed); err != nil {
				return err
			}
			if err := e.t.cfg.Media.PublishFiles(ctx, e.id, e.staged, []string{path.Join(media.HLSDir, r, "index.m3u8")}); err != nil {
				return err
			}
			e.published[r] = listed
		}
	}
	if e.encoded(e.first) <= 0 {
		return nil
	}
	if !e.master {
		data, err := readPlaylist(e.root, path.Join(media.HLSDir, media.MasterName))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err == nil {
			// The low lane's master, or already the merged one (finish).
			if err = checkMaster(data, e.first); err != nil && checkMaster(data, e.renditions) == nil {
				err = nil
			}
		}
		if err == nil {
			var cerr error
			// Every listed rendition has its initialization segment.
			if data, cerr = describeVariants(e.root, data, e.rate, e.bandwidths); cerr != nil {
				e.log.Warn("the master published while processing lacks a variant's CODECS", "err", cerr)
			}
			err = e.stageFile(media.MasterName, data)
		}
		if err != nil {
			return err
		}
		if err := e.t.cfg.Media.PublishFiles(ctx, e.id, e.staged, []string{path.Join(media.HLSDir, media.MasterName)}); err != nil {
			return err
		}
		e.master = true
	}
	if !e.playable {
		// The rungs decide, once the audio has begun (the gate above): an
		// audio track shorter than the video stops growing at its end, and
		// would hold the video back until it completed.
		encoded := e.encoded(e.res)
		speed := encoded / max(time.Since(e.began).Seconds(), 0.001)
		if !playable(encoded, e.total, speed) {
			return nil
		}
		_, err := eventstore.Execute[domain.Video](ctx, e.t.cfg.Store, videoStream(e.id), domain.MarkPlayable{Resolutions: e.res})
		switch {
		case err == nil:
			e.playable = true
			e.markReady()
			e.log.Info("video playable while processing", "encoded_s", encoded, "speed", speed,
				"resolutions", e.res, "after_ms", time.Since(e.began).Milliseconds())
		case domain.IsKind(err, domain.Conflict) && !errors.Is(err, eventstore.ErrConcurrency):
			e.playable = true // no attempt running any more: nothing to mark
			e.markReady()
		default:
			return err
		}
	}
	if len(e.high) > 0 && !e.whole {
		return e.publishWhole(ctx)
	}
	return nil
}

// encoded is the seconds published in every one of renditions.
func (e *early) encoded(renditions []string) float64 {
	encoded := e.total
	for _, r := range renditions {
		var sum float64
		for _, s := range e.published[r] {
			sum += s.dur
		}
		encoded = min(encoded, sum)
	}
	return encoded
}

// publishWhole publishes the merged master of a ladder in lanes, every
// rung, once the high lane is safe to start from as well.
func (e *early) publishWhole(ctx context.Context) error {
	encoded := e.encoded(e.high)
	if !playable(encoded, e.total, encoded/max(time.Since(e.began).Seconds(), 0.001)) {
		return nil
	}
	merged, err := readPlaylist(e.root, path.Join(media.HLSDir, media.MasterName))
	if err != nil {
		return err
	}
	if checkMaster(merged, e.renditions) != nil { // not merged yet (mergeLanes)
		merged, err = mergedMaster(e.root, merged)
		if errors.Is(err, os.ErrNotExist) {
			return nil // the high lane has not written its master yet
		}
		if err == nil {
			err = checkMaster(merged, e.renditions)
		}
		if err != nil {
			return err
		}
	}
	merged, cerr := describeVariants(e.root, merged, e.rate, e.bandwidths)
	if cerr != nil {
		e.log.Warn("the master published while processing lacks a variant's CODECS", "err", cerr)
	}
	if err := e.stageFile(media.MasterName, merged); err != nil {
		return err
	}
	if err := e.t.cfg.Media.PublishFiles(ctx, e.id, e.staged, []string{path.Join(media.HLSDir, media.MasterName)}); err != nil {
		return err
	}
	e.whole = true
	e.log.Info("every rung playable while processing", "encoded_s", encoded, "after_ms", time.Since(e.began).Milliseconds())
	return nil
}

// segmentName and initName are what ffmpeg names segments and their
// initialization segment (ffmpeg's segmentPattern and initSegment).
var (
	segmentName = regexp.MustCompile(`^seg_[0-9]{5,}\.m4s$`)
	initName    = regexp.MustCompile(`^init(_[0-9]{1,3})?\.mp4$`)
)

// mapTag is the tag naming a media playlist's initialization segment.
const mapTag = "#EXT-X-MAP"

// listed reads rendition r's playlist as ffmpeg last wrote it: its
// segments, its header tags (those before the first segment, but the
// playlist type, ENDLIST and START, which the rewrite sets, and those
// with a quoted value or not of HLS) and its initialization segment
// (#EXT-X-MAP, rewritten as a tag of its URI alone).
func (e *early) listed(r string) (segs []segment, header []hls.Tag, init string, err error) {
	data, err := readPlaylist(e.root, path.Join(media.HLSDir, r, "index.m3u8"))
	if err != nil {
		return nil, nil, "", err
	}
	pl, err := hls.ParseMedia(data)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%s: %w", r, err)
	}
	for _, t := range pl.Header {
		s := string(t)
		set := strings.HasPrefix(s, hls.PlaylistType+":") || t == hls.EndList || strings.HasPrefix(s, "#EXT-X-START:")
		switch {
		case t.Name() == mapTag:
			if init, err = initSegmentOf(t); err != nil {
				return nil, nil, "", fmt.Errorf("%s: %w", r, err)
			}
			header = append(header, hls.Tag(mapTag+":URI="+hls.Quote(init)))
		case !set && strings.HasPrefix(s, "#EXT-X-") && !strings.Contains(s, `"`):
			header = append(header, t)
		}
	}
	segs = make([]segment, 0, len(pl.Segments))
	for _, s := range pl.Segments {
		if !segmentName.MatchString(s.URI) {
			return nil, nil, "", fmt.Errorf("%s: unexpected entry %q", r, s.URI)
		}
		segs = append(segs, segment{name: s.URI, dur: s.Duration})
	}
	if len(segs) > 0 && init == "" {
		return nil, nil, "", fmt.Errorf("%s: segments without an initialization segment", r)
	}
	return segs, header, init, nil
}

// initSegmentOf is the initialization segment an #EXT-X-MAP tag names:
// a file beside the playlist, named as ffmpeg names it, the whole file
// (no BYTERANGE).
func initSegmentOf(t hls.Tag) (string, error) {
	a, err := hls.ParseAttrs(t.Value())
	if err != nil {
		return "", fmt.Errorf("%s: %w", mapTag, err)
	}
	uri, _ := a.Get("URI")
	if len(a) != 1 || a[0].Value != hls.Quote(uri) || !initName.MatchString(uri) {
		return "", fmt.Errorf("unexpected %s %.100q", mapTag, t)
	}
	return uri, nil
}

// stage writes the playlist of rendition r listing segs, as published while
// processing, in the staging directory.
func (e *early) stage(r string, header []hls.Tag, segs []segment) error {
	pl := hls.Media{Header: slices.Concat(header, []hls.Tag{"#EXT-X-PLAYLIST-TYPE:EVENT", "#EXT-X-START:TIME-OFFSET=0"})}
	for _, s := range segs {
		pl.Segments = append(pl.Segments, hls.Segment{Duration: s.dur, URI: s.name})
	}
	data, err := pl.Encode()
	if err != nil {
		return err
	}
	return e.stageFile(path.Join(r, "index.m3u8"), data)
}

// stageFile writes data as rel (under hls/) in the staging directory.
func (e *early) stageFile(rel string, data []byte) error {
	file := path.Join(e.staged, media.HLSDir, rel)
	if err := os.MkdirAll(path.Dir(file), 0o700); err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}

// checkMaster checks the master playlist data lists exactly the
// renditions want.
func checkMaster(data []byte, want []string) error {
	m, err := hls.ParseMaster(data)
	if err != nil {
		return err
	}
	listed, err := m.URIs()
	if err != nil {
		return err
	}
	for _, r := range want {
		if !slices.Contains(listed, r+"/index.m3u8") {
			return fmt.Errorf("master playlist does not list %s", r)
		}
	}
	if len(listed) != len(want) {
		return fmt.Errorf("master playlist lists %d playlists, not %d", len(listed), len(want))
	}
	return nil
}

// toVOD rewrites the EVENT playlist rel of root (ffmpeg ended it with
// ENDLIST) as a VOD playlist, through a new file renamed over it. A
// playlist that does not parse (a full disk cut it short) is left as it
// is, for verifyOutputs to find.
func toVOD(root *os.Root, rel string) error {
	data, err := readPlaylist(root, rel)
	if err != nil {
		return err
	}
	pl, err := hls.ParseMedia(data)
	if err != nil {
		return nil
	}
	if pl.Type() == "EVENT" {
		pl.SetType("VOD")
	}
	if data, err = pl.Encode(); err != nil {
		return err
	}
	return replaceFile(root, rel, data)
}

// replaceFile writes data to rel of root through a new file renamed over
// it.
func replaceFile(root *os.Root, rel string, data []byte) error {
	tmp := path.Join(path.Dir(rel), ".new.m3u8")
	_ = root.Remove(tmp)
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

// maxPlaylist bounds a playlist read from a work directory (a 10-hour
// video's has about 9000 segments of 40 bytes).
const maxPlaylist = 4 << 20

// readPlaylist reads the playlist rel of root: a plain file (what ffmpeg's
// user put there may be a FIFO, opened without blocking and refused) of at
// most maxPlaylist bytes.
func readPlaylist(root *os.Root, rel string) ([]byte, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a plain file (%s)", rel, fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxPlaylist+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxPlaylist {
		return nil, fmt.Errorf("%s: playlist over %d bytes", rel, maxPlaylist)
	}
	return data, nil
}

// Lanes is how a transcoder splits ladders into lanes.
type Lanes string

const (
	LanesAuto Lanes = "auto" // the heavy ladders (ffmpeg.SplitLadder)
	LanesOne  Lanes = "one"  // none: every ladder is one process
	LanesTwo  Lanes = "two"  // every ladder of two rungs or more (ffmpeg.LaneSplit)
)

// split is where the ladder of info splits into lanes, 0 for none.
func (t *Transcoder) split(info ffmpeg.Info, rungs []ffmpeg.Rung, x ffmpeg.Extras) int {
	switch t.cfg.Lanes {
	case LanesOne:
		return 0
	case LanesTwo:
		return ffmpeg.LaneSplit(rungs, x)
	}
	return ffmpeg.SplitLadder(info, rungs, x)
}

// lane is one ffmpeg process of the ladder: its rungs and extras.
type lane struct {
	rungs []ffmpeg.Rung
	x     ffmpeg.Extras
}

// ladderLanes are the processes of a ladder split at split (0: one).
func ladderLanes(rungs []ffmpeg.Rung, split int, x ffmpeg.Extras) []lane {
	if split <= 0 || split >= len(rungs) {
		return []lane{{rungs, x}}
	}
	high := x
	high.Lane = ffmpeg.SecondLane
	return []lane{{rungs[split:], x}, {rungs[:split], high}}
}

// lanesProgress reports the progress of a ladder in lanes: the least
// advanced lane's.
type lanesProgress struct {
	mu     sync.Mutex
	f      []float64
	report func(float64)
}

func (p *lanesProgress) set(i int, f float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.f[i] = f
	p.report(slices.Min(p.f))
}

// mergeLanes makes the one master playlist of a ladder that ran in lanes
// (ffmpeg.MergeMasters) in work's hls directory, and removes the high
// lane's master and spare audio rendition. Read and written inside work,
// as the early publisher does: a plain file, no link followed.
func mergeLanes(work string) error {
	root, err := os.OpenRoot(work)
	if err != nil {
		return err
	}
	defer root.Close()
	master := path.Join(media.HLSDir, media.MasterName)
	low, err := readPlaylist(root, master)
	if err == nil {
		low, err = mergedMaster(root, low)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", errIncomplete, err)
	}
	if err := replaceFile(root, master, low); err != nil {
		return err
	}
	if err := root.Remove(path.Join(media.HLSDir, ffmpeg.LaneMaster(ffmpeg.SecondLane))); err != nil {
		return err
	}
	return root.RemoveAll(path.Join(media.HLSDir, ffmpeg.LaneAudio(ffmpeg.SecondLane)))
}

// mergedMaster merges the low lane's master low with the high lane's, read
// from root (os.ErrNotExist until the high lane wrote it).
func mergedMaster(root *os.Root, low []byte) ([]byte, error) {
	high, err := readPlaylist(root, path.Join(media.HLSDir, ffmpeg.LaneMaster(ffmpeg.SecondLane)))
	if err != nil {
		return nil, err
	}
	return ffmpeg.MergeMasters(low, high)
}
