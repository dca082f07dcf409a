// Package ffmpeg adapts the ffmpeg and ffprobe binaries, found on PATH or
// in Jail.Tools:
// Sniff and OpenInput name an input's demuxer, Probe learns what it is,
// Ladder picks its HLS renditions, the *Args functions build argument lists
// and Run executes one of them under a watchdog, reporting progress, in a
// Jail. The argument builders are pure and golden-tested: testdata/*.golden
// holds one argument per line, and go test ./transport/ffmpeg -update
// rewrites them.
//
// # Inputs
//
// Sniff names the demuxer from a file's first KiB (SniffLen), from a closed
// list: mov (mp4, mov, m4v, 3gp, 3g2), matroska (mkv, webm), avi, flv, asf
// (wmv), mpeg (program stream), mpegvideo (an MPEG-1/2 video elementary
// stream), mpegts (188-byte TS, 192-byte M2TS, 204-byte TS with parity;
// the sync pattern may start after stray bytes) and ogg. An mp4/mov may
// start with any box ffmpeg's own mov probe accepts first, or a segment's
// styp or sidx. Anything else (an HLS or DASH playlist, a concat script,
// SDP, an image, text, unknown bytes) is refused: ffmpeg is never asked to
// guess, and names and extensions play no part.
//
// An Input is always opened with its demuxer forced (-f), through the file
// protocol only (-protocol_whitelist file, which nested opens inherit), as
// file:<path> so that no prefix of the name is read as a protocol, with
// mov's external data references off (-enable_drefs 0) and, with a picture
// limit, -max_pixels: every decoder refuses a larger picture before
// allocating it, whatever the headers said. So no demuxer that opens
// further files (hls, concat, image2, tee, subfile) is ever chosen by a
// file's content.
//
// # Probe
//
// Probe runs ffprobe for the streams and format as JSON, then a packet
// scan of the video stream (timestamps, sizes and key flags; nothing
// decoded) that measures the frames, their span and the largest step
// between consecutive frames, and checks Bounds as it goes: it stops as
// soon as one is exceeded, so a file claiming ten hours in 10 KB costs no
// more than reading 10 KB. The video stream is the first that is not a
// cover picture; Info records its index and the first audio stream's, and
// every later run maps exactly those. The size is the displayed one: the
// sample aspect ratio applied to the width (HDV's 1440×1080 with 4:3
// pixels is 1920×1080, a DVD's 720×480 with 8:9 pixels 640×480; an
// absurd ratio, beyond 4:1 either way, is ignored), then
// the rotation; every output is scaled to it in square pixels. The
// duration is where the video ends on the file's timeline, which starts
// at its earliest stream (ffmpeg's output time 0): the video stream's
// duration after its start (an audio track may start first), else the
// format's (less the file's start for Matroska and MP4 when it reaches
// their video's end counted from time 0, as ffmpeg's muxer writes it),
// else the scanned lead and span; a claim that runs well past the video
// (Short) is the video's end when the audio's end, scanned too, explains
// it, and stays (for the transcoder to refuse as truncated) when the
// audio ends early as well. Info.Length is the smaller of that
// claim and the video's end as scanned (its Lead and Span), and every cap
// and progress goes by it: a late video's first picture is held from 0,
// as ffmpeg holds it. Each ffprobe run is killed after 10 minutes.
//
// Bounds (DefaultBounds: 7680×4320 either way round, 120 fps, a minute
// between frames or before the first, where the held first picture may
// cost no more than 10 s of a 2160p60 ladder; the duration is the
// caller's) are never taken from the file. The frame rate is checked
// against the average, against the rate ffmpeg would encode at
// (r_frame_rate, unless implausible by ffmpeg's own guess) and against
// frames over span as scanned. A file over a limit, a
// file ffprobe cannot read and one without a video stream are domain
// Unsupported errors with a message for the client; a missing binary or a
// cancelled context is a plain (transient) error.
//
// # The ladder
//
// Ladder chooses rungs on the displayed size, by its short side: every step
// of 2160, 1440, 1080, 720, 480, 360 and 240 not above the source's short
// side, highest first; nothing is upscaled. A source whose short side is
// below 240 gets one rung at its own short side, made even (320×180 gives
// 180p). The long side keeps the source's aspect, rounded to the nearest
// even number, and a rung is named <short side>p in both orientations (a
// 1080×1920 portrait video gives 1080p, 1080×1920).
//
//	rung        CRF   cap kbit/s (-maxrate, -bufsize)
//	2160p        23   16000
//	1440p        23    9000
//	1080p        23    5000
//	720p         22    2800
//	480p         22    1400
//	360p         21     800
//	240p         20     400
//	below 240p   20     400 × side / 240, at least 200
//
// Each rung has a quality target under a cap: x264's constant rate factor
// (-crf), so every picture gets the bits it needs for that quality, within
// a rate cap (-maxrate) with a second of it as buffer (-bufsize), so the
// hardest pictures get no more than the cap. A slide talk's 1080p averages
// a tenth of its cap, a football match runs at it: the bits follow the
// picture, not the rung. The lower rungs aim higher (a lower CRF), as a
// fixed ladder's lower rungs carry more bits per pixel. Rung.CRF 0 encodes
// at Rung.Bitrate on average instead (-b:v), the fixed ladder kino bench
// compares with. ffmpeg writes the caps into the master playlist (a
// ceiling while the video is processing); the transcoder replaces them
// with each rung's measured peak and average once it is encoded
// (BANDWIDTH, AVERAGE-BANDWIDTH). LadderArgs makes one ffmpeg process that
// decodes once and writes every rung: H.264 (libx264 veryfast, profile
// high, yuv420p), 4 s fMP4 segments (seg_NNNNN.m4s, after the
// rendition's initialization segment init.mp4, or init_N.mp4 when one
// process writes several renditions: N is the rendition's place in it)
// with keyframes
// forced every 4 s, independent segments, EVENT playlists written under a
// temporary name and renamed when complete (-hls_flags
// independent_segments+temp_file), which the transcoder publishes while
// ffmpeg runs and makes VOD at the end. Each rung is scaled from a rung
// above it, not from the source (a cascade: on two cores a 10 s 1080p
// five-rung ladder took 5.3 s instead of 7.7 s): from the nearest rung
// in its process, or the source, whose short side is a whole multiple of
// its own (360p from 720p, 240p from 480p), which blurs less than a 4:3
// or 3:2 step, else from the one just above; and to its exact size with
// square pixels, so a stream whose pictures
// change size mid-way still yields the rung's size. With audio, one AAC
// stereo 128 kbit/s rendition, audio/, is shared by every rung as the
// master's audio group. The output stops 1 s past the length, so audio or
// a claim running on past the video costs nothing. When the frames are at
// least 4× sparser than the nominal rate, an fps filter at their real rate
// (at least 1) comes first (rateCap): ffmpeg would otherwise repeat each
// frame across the gaps (61 frames over 59 min at 30 fps: 106 000 frames
// per rung). Over 60 fps, the video is encoded at its grid's rate divided
// by the smallest whole number that brings it to 60 or below (120 fps at
// 60, 119.88 at 59.94, 100 at 50), or at 60 when that would go below 48
// (highRate): H.264 at 1080p over 64 fps needs a level over the 4.2
// Apple's players are promised, and most hosts play 60 at most. A select
// keeps a frame when it comes no earlier than a quarter of a frame time
// before its slot, each slot a frame time after the one the last kept
// frame took, the first at the first frame: kept frames keep their own
// times, and the output's rate (-r) puts them on its ticks, a late start
// filled with the first frame as at any rate. Matroska, WebM and FLV keep whole
// milliseconds, and an fps filter at 60 kept 120 fps frames 1, 2 and 3
// apart by turns where they sit near the midpoint between two ticks; a
// variable rate (120 a second, then 30) keeps every second frame, then
// each. The preview is encoded at the same rate.
//
// ThumbnailArgs takes the frame at 10 % of the length (0 under 1 s), at
// most 720 px on the long side; a seek past the end writes nothing, which
// the caller checks. PreviewArgs makes the first 6 s, at most 480 px on the
// short side, H.264 CRF 23 capped at 1200 kbit/s, AAC stereo with audio,
// +faststart. Neither upscales.
//
// # Lanes
//
// One ffmpeg process encodes every rung in lock-step, at the speed of the
// whole ladder, which for 1080p and above runs below real time on two
// cores, so a viewer starting early would catch the encoder. SplitLadder
// splits a heavy ladder (its rungs' pixels times the rate it is encoded
// at, OutputRate, at least 60 Mpx/s: 1080p25 is 93, 720p60 100, 720p30
// only 50) into two processes
// writing into the same directory: the low lane (the rungs of 360p and
// below, and the audio), which runs far ahead of real time, and the high
// lane (Extras.Lane = SecondLane, the other rungs) run at HighLaneNice, so
// the low lane gets nearly the cores it wants while both run and the high
// lane takes them all once it is done. The high lane writes its own master
// (LaneMaster) and a spare audio rendition (LaneAudio, about 1 % of the
// work), so that its master lists its rungs exactly as one process would;
// MergeMasters makes the master one process would have written (the low
// lane's header, the high lane's variant streams, then the low lane's). The
// cost is a second decode of the source. A fast-path ladder and a one-rung
// ladder are never split (LaneSplit).
//
// # The fast path
//
// ChooseFastPath lets the top rung copy the source's video stream (-c:v:0
// copy, in the same process; the other rungs are still encoded from the
// decoded source) when, from Probe's header JSON and packet scan:
//
//   - the codec is h264, profile Constrained Baseline, Baseline, Main or
//     High, a level from 1b to 4.2, or to the least the rung's size and
//     rate need when that is higher (5.0 for 2560x1080, 5.1 for 2160p30:
//     Apple's players skip a variant over 4.2, as its HLS authoring
//     specification says), pix_fmt exactly yuv420p, progressive, square
//     pixels;
//   - there is no rotation, and the size is exactly the top rung's;
//   - the rate is at most 60 fps on average, as scanned (within 5 % of
//     the headers' average: a copy's FRAME-RATE and last segment follow
//     the headers) and on the nominal grid (a variable rate on a grid over
//     60 is encoded), with no gap over 0.5 s and not far sparser than the
//     nominal rate (no burst is looked for);
//   - the first packet is a keyframe and keyframes are at most 8 s apart
//     (also from the last one to the end): the copied rung's segments are
//     cut at the source's keyframes;
//   - no packet is flagged discard: an MP4 edit list that trims a file's
//     start keeps the frames from the keyframe before the cut, decoded
//     but never shown, and a copy would show them;
//   - the video starts at most 0.5 s into the file (after its audio):
//     a ladder encoded as a whole fills that time with the first frame;
//     on the fast path every rung would start with the gap;
//   - the bitrate is within the top rung's cap: on average at most its
//     -maxrate, and over any 4 whole seconds at most maxrate × 4 s +
//     bufsize (DecideFastPath counts it without filler data, below);
//   - the container gives the video's bit rate, or the audio's (and the
//     audio is copied), or there is audio to encode: ffmpeg's HLS muxer
//     leaves out of the master a variant whose rate it does not know
//     (Matroska gives none, MPEG-TS only the audio's), so from such a
//     source the audio is encoded beside the copied video.
//
// CheckKeyframes then decodes only the keyframes (ffprobe -skip_frame
// nokey): each must have the headers' size, yuv420p and progressive scan.
// And every packet flagged key must be an IDR frame and every IDR frame
// flagged (a framecrc of the stream copied as the ladder copies it against
// a copy through filter_units=pass_types=5, no decode): intra refresh and
// open GOPs flag recovery points as keyframes, where the HLS muxer would
// cut segments no decoder can start from. The ladder's copy drops the
// stream's filler data (filter_units=remove_types=12: the padding of a
// constant-bitrate encoder, no picture in it), and the first framecrc's
// sizes say how many bytes it keeps.
//
// DecideFastPath runs that check beside EstimateRate, which encodes
// samples of the source as the top rung would be (4 s, one segment, on
// whole seconds, one per two minutes begun, at most three and at most
// three 1080p samples' pixels, joined by the concat filter, raw H.264
// counted on stdout) and sets their bytes against the source's own in the
// same seconds (the packet scan's bytes by second): a copy spending more
// than 1.5 times what the encoder would on the same pictures is refused
// and the rung encoded (a screen recording uploaded at 1.4 Mbit/s whose
// 1080p target needs 160 kbit/s). The source's bytes are counted without
// its filler data, by second, as the copy keeps them (the keyframe
// check's copy counts them, with the file's own timestamps: -copyts).
// A source under 8 s is not sampled. A source over the top rung's cap as
// uploaded is read only when its first 8 s carry filler data (hasFiller,
// a framecrc of them with and without it): the keyframe check runs
// first, and the copy must be within the cap on what it keeps (on
// average and at its peak) before the estimate runs; the master's
// BANDWIDTH while processing is then the copy's own peak.
//
// The encoded rungs then take -force_key_frames
// source (and -g 600, so x264 adds none of its own), so every rung cuts at
// the same times, each frame at its own time as in the copy (-fps_mode
// vfr on a 90 kHz clock, -enc_time_base 1/90000: at a constant rate
// ffmpeg would repeat the first frame from the file's start, and in the
// encoder's default time base, a tick per frame of the average rate, a
// wavering rate's frames and keyframes would move), and caps scaled by the uploaded stream's share of the
// top rung's cap (FastPath.Rungs: its rate with the filler data the copy
// drops, never below 32 kbit/s, their VBV buffers never below a quarter
// of their own), so each costs less than the copy:
// under their own caps a detailed picture at a lower rung's CRF cost as
// much as a lean copied top (a 240p rung at 400 kbit/s under a 360p copy
// of 400), and a player stepping down saved nothing. The audio is copied too when
// it is AAC LC, mono or stereo, 44.1 or 48 kHz (through aac_adtstoasc:
// MPEG-TS carries it with ADTS headers, which fMP4 does not take). ffmpeg
// reads an H.264 stream's profile and level only from Annex B headers:
// it names the copied variant's codecs from those filter_units hands on;
// a variant still without CODECS gets them from the transcoder, from the
// rendition's initialization segment (avc1 or avc3, as its sample entry
// says), when the avcC's first SPS agrees.
//
// # Storyboard and download
//
// The storyboard's tiles come from the source in the stills' pass
// (StillsArgs, from an opening of its own), or in a pass of their own
// (StoryboardArgs) when that one fails; never from a branch of the
// ladder's: ffmpeg 5.1 prints no -progress line until every output is
// open, and an output whose one frame the tile filter holds back opens at
// the end, which froze the ladder's progress at 0 and let the stall
// watchdog kill the pass. Each writes one JPEG per tile
// (storyboard_tile_NNN.jpg: fps=1000/<step ms>:start_time=0:round=up:
// eof_action=pass, then scale: tile k is the picture on screen k steps
// into the output, a late video's first picture until it starts), and
// Storyboard.Assemble lays them out ten to a row (each tile's size checked
// from its header before it is decoded, a missing last tile left black).
// PlanStoryboard: a tile every second, or every duration/100 when longer
// (at most 100 tiles), 160 px wide (the lowest rung's width when smaller)
// at the lowest rung's aspect. Storyboard.VTT writes the WebVTT track from
// the plan.
//
// DownloadArgs remuxes the highest rung up to 1080p (DownloadRung) and the
// audio rendition, read back through the HLS demuxer from the work
// directory's own playlists (file protocol only), into an MP4 with -c copy,
// aac_adtstoasc and +faststart: no decode, no encode.
//
// # Running
//
// Run starts ffmpeg with -progress pipe:1 and reports out_time as a
// fraction of RunOptions.Duration. Its watchdog kills the process group
// with ErrStalled when for StallTimeout (2 min) neither a progress line
// arrives nor RunOptions.OutputDir grows (measured every 5 s, or a quarter
// of the timeout when shorter: ffmpeg prints nothing while its filters
// repeat one frame across a gap, yet writes segments), and with ErrTooSlow
// after MaxRuntime (60 s + 20 × Duration). A decoder that refused a picture
// over -max_pixels makes Run return ErrPictureTooLarge even when ffmpeg
// exits 0, since ffmpeg only drops such frames. A non-zero exit is an
// *ExitError with the tail of stderr.
//
// # Confinement
//
// Every ffmpeg and ffprobe runs in a Jail:
//
//   - Dir is its working directory, the attempt's own, holding only its
//     input and its outputs.
//   - User, when kino runs as root, is --ffmpeg-user (SysProcAttr.Credential,
//     no supplementary groups).
//   - Limits (--ffmpeg-max-memory, --ffmpeg-max-cpu, --ffmpeg-max-files;
//     DefaultRLimits 16 GiB of address space and 512 files, CPU time the
//     wall-clock cap × the cores) are applied by util-linux prlimit, which
//     sets them on itself and then execs: ffmpeg never runs a moment
//     without them. MALLOC_ARENA_MAX=2 keeps glibc's per-thread arenas
//     under the address-space limit.
//   - Nice runs it under nice -n.
//   - Its environment is kino's PATH only: kino's may hold secrets.
//   - It runs in its own process group, killed as a whole (SIGKILL) when
//     its context ends. On Linux it also has a parent-death signal
//     (SIGKILL), so it dies with kino, kill -9 included. The kernel sends
//     it when the thread that started the process exits
//     (golang.org/issue/27505), so Run keeps its goroutine locked to its
//     thread from start to wait. Go sets the signal after switching users
//     (a switch clears it), and it survives the exec of prlimit and of
//     ffmpeg. CheckDiesWithParent starts an ffmpeg exactly as every run
//     does from a thread that then ends, and fails unless that ffmpeg is
//     killed; the transcoder refuses to start otherwise.
package ffmpeg
