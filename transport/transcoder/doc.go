// Package transcoder turns uploaded videos into an HLS ladder, a thumbnail,
// a preview and, when asked, a storyboard and a download rendition. It is
// a consumer of the event stream: any number of processes (kino serve,
// kino worker) share the work, and a job whose worker dies is redelivered
// to another. It writes nothing but Transcode* events, the progress
// bucket and the video's media.
//
// # Jobs
//
// The intake durable "transcoder" (Durable) on KINO_EVENTS, filtered to
// video.*.UploadAccepted and video.*.TranscodeRetried (and the jobs of
// captions.go and thumbnail.go: video.*.CaptionTrackRequested and
// video.*.ThumbnailRequested), copies each event
// into its account's queue in KINO_JOBS; Run hands every job to handle
// through queue.FairWork, which keeps the queues and picks whose job
// a free slot runs. The
// transcoder's side of that scheduling is:
//
//   - Config.Workers slots per process (--workers, default 1), each
//     fetching one job at a time.
//   - The account of a job is the one its event names (jobAccount).
//   - An account's limit is its plan's TranscodeConcurrency
//     (--transcode-concurrency-free 1, -pro 2, -business 4), enforced by
//     the server across the cluster. The plan is read from the account's
//     events (eventstore.Current) and trusted for 30 s (planTTL); an
//     account that does not exist, or whose plan this kino has no limits
//     for, gets the free plan's, and one that cannot be read keeps what
//     was known.
//   - A job is kept alive with InProgress every third of Config.AckWait
//     (--transcode-ack-wait, default 60 s); a worker silent that long
//     loses it to another.
//
// # An attempt
//
// For each job (handle, then transcode):
//
//  1. Watch: before anything else the job subscribes to its video's
//     Deleted event (Config.Store's Watch), so a delete from then on
//     cancels the job's context, killing ffmpeg's process group at once.
//     Should the message be lost (a reconnect), every heartbeat also
//     reloads the video and cancels the job when it is deleted.
//  2. Start: StartTranscode appends TranscodeStarted{attempt: n+1, worker}
//     (the worker is host:pid) and the video is PROCESSING. An attempt
//     started earlier with no end in the events (its worker died) is
//     closed first by TranscodeInterrupted{reason: crash}, in the same
//     append. A deleted video's files are removed and the job acked; a
//     video already COMPLETED or FAILED (a redelivery) is acked. After
//     Config.MaxAttempts failed attempts (--transcode-attempts, 3) or
//     Config.MaxCrashes crashed ones (5), the command appends a final
//     TranscodeFailed instead ("Processing failed 3 times; giving up.",
//     "Processing was interrupted 5 times; giving up."); what earlier
//     attempts published is removed and the job acked.
//  3. Clean slate: from the second attempt on, the outputs an earlier
//     attempt published are removed before this one publishes (see
//     Progressive publishing).
//  4. Limits: the account's plan gives the duration limit (see Limits).
//  5. Work directory (scratch.go): a lock file, then a directory of its
//     own holding only input<ext>, the original put there by Config.Fetch
//     (the media backend's Fetch: a hard link or a copy with --media dir,
//     a copy from the object store with --media nats). A missing original
//     is a transient failure unless the video was deleted.
//  6. Sniff: ffmpeg.OpenInput picks the demuxer from the input's first KiB,
//     from a closed list. Anything else is final at once: "Not a video
//     file kino can read." The file's name plays no part.
//  7. Probe: ffmpeg.Probe reads the displayed size, rate, duration and
//     streams, scans the video packets (timestamps only) and checks the
//     limits. Its Info.Length, the smaller of the claimed duration and
//     where the scanned video ends, is the length every later cap and
//     progress goes by.
//  8. Plan: the ladder (ffmpeg.Ladder), the fast path
//     (ffmpeg.DecideFastPath: ChooseFastPath, then CheckKeyframes beside
//     EstimateRate, which refuses a copy that spends over 1.5 times what
//     encoding the rung would; FastPath.Rungs caps the encoded rungs in
//     proportion to the uploaded stream's rate), the storyboard (ffmpeg.PlanStoryboard)
//     and whether the ladder runs in two lanes (Config.Lanes,
//     --ladder-lanes: auto splits the heavy ladders, one none, two every
//     ladder of two rungs or more).
//  9. Encode: the ladder's ffmpeg processes (one, or two lanes writing to
//     the same hls/ directory: the high lane niced, see ffmpeg's package
//     doc), an early publisher beside them, and the stills: the thumbnail,
//     the preview, the animated preview and the storyboard's tiles (one
//     ffmpeg pass, ffmpeg.StillsArgs: each ffmpeg start costs a short clip
//     more than its work); they start only once the video is playable or
//     the ladder is over, because beside the ladder's first segments they
//     halved its speed on two cores. When the one pass leaves an output
//     out, the stills are made one by one and the tiles by their own pass,
//     and a thumbnail seek that yields no frame takes the first frame. When the lanes are done
//     their masters are merged (mergeLanes), and checkWhole compares what
//     the ladder holds with what the file claims.
//  10. Verify (verify.go): the outputs are checked before anything is
//     published, because ffmpeg's HLS muxer exits 0 when its writes fail
//     (a full disk leaves empty playlists). master.m3u8 lists the
//     playlist of every rung and, with audio, of audio/; each parses,
//     ends with #EXT-X-ENDLIST and lists at least one segment, every one
//     a non-empty file; thumbnail.jpg decodes as a JPEG; preview.mp4's
//     boxes span the file, its moov (with a video track) before a
//     non-empty mdat (checkPreview, in Go: an ffprobe start would cost a
//     short clip a tenth of a second). A failed check is transient: "its
//     outputs could not be written in full". Then the master gets each
//     variant's measured BANDWIDTH and AVERAGE-BANDWIDTH, and any CODECS
//     ffmpeg leaves out, read from the rendition's initialization
//     segment's avcC (bandwidth.go, codecs.go; the master published while
//     processing gets those CODECS too).
//  11. Extras (outputs.go): the storyboard's WebVTT track is written by Go
//     from the plan, never from ffmpeg's output, and every cue's region is
//     checked against the sprite's real size; the download rendition is a
//     remux of the highest rung up to 1080p and the audio, checked in Go
//     from its boxes like the preview (checkDownload: moov before mdat, a
//     video track at most 1080p by its tkhd). Either one failing is
//     logged and left out; the video completes without it. Only a
//     cancelled job stops there.
//  12. Publish: the input is removed, processedSize is the size of what is
//     left, the video's events are read once more (a Deleted means no
//     publish), and Media.Publish checks the outputs (no links, no special
//     files) and moves them into the video's media, replacing an earlier
//     attempt's. It fails when the video's media or original is gone.
//  13. Record: CompleteTranscode appends TranscodeSucceeded (with the
//     storyboard and download flags of what was published); the job is
//     acked and its progress cleared. The duration recorded is the
//     claimed one, unless the ladder holds more than half a second less
//     (heldDuration).
//
// The work directory and its lock are removed however the attempt ends.
//
// # Limits
//
// The server's limits are never taken from the file, and a file over one
// is final at probe time (TranscodeFailed{final: true} on the first
// attempt) with a message naming it:
//
//	limit               default                       flag
//	picture             7680×4320, either way round   --max-resolution
//	frame rate          120                           --max-frame-rate
//	duration            free 1 h, pro 6 h,            --max-duration-free, -pro, -business
//	                    business 12 h
//	gap between frames  1 min                         --max-frame-gap
//
// Config.Bounds holds the picture, rate and gap limits (ffmpeg.Bounds); the
// duration is the plan's, read fresh when the attempt starts, so a plan
// raised a moment ago counts. The picture limit also caps every decoded
// picture (-max_pixels), cover pictures included: a stream that grows past
// it after the headers probe read ends FAILED naming the limit
// (ffmpeg.ErrPictureTooLarge). A ladder that holds more than 1 s and 10 %
// less than the file claims fails it as truncated: "The file is truncated
// or corrupt: it holds 2.0 s of the 3600.0 s it announces." What it holds
// is the longest rendition by the durations its playlist lists, not
// ffmpeg's out_time, which is the furthest end of any output of the pass.
// When the video stream claims no duration (Matroska, WebM, MPEG-TS) the
// claim is the container's, which covers the audio too: Probe scans the
// audio's end when the claim runs that far past the video, and a whole
// file whose audio runs on announces its video's end instead (judging by
// the video's own span alone would let a cut index-first MP4 through).
//
// # Failures, attempts and backoff
//
//   - Final at once (Unsupported: not a container kino reads, ffprobe
//     cannot read it, no video stream, over a limit, truncated): a final
//     TranscodeFailed, FAILED.
//   - Transient (ffmpeg exits non-zero, stalls or runs out of time, the
//     outputs are incomplete, any other error): TranscodeFailed{final:
//     false} with "Processing failed: <reason>." (transientReason; never
//     ffmpeg's output, which goes to the log); the video stays PROCESSING
//     and the job comes back after the backoff. The Config.MaxAttempts-th
//     failure is final: "Processing failed after 3 attempts: <reason>."
//   - NATS out of reach (the event store, or the media bucket: an outage):
//     TranscodeInterrupted{reason: outage}, retried after the first
//     backoff; no attempt is used up.
//   - A final failure removes whatever was published (Media.RemoveOutputs).
//
// Only failed attempts use up Config.MaxAttempts, counted from the video's
// events, never from JetStream's delivery count. Crashes have their own cap
// (Config.MaxCrashes), so a file that kills its worker every time still
// ends FAILED; shutdowns have none, since only an operator sends them.
//
// After failed attempt n the job waits Config.Backoff[n-1] (the last value
// repeats; --transcode-backoff, default 10s,1m,5m): Job.Retry puts it aside
// in the jobs stream's backoff queue, where it is not one of its account's
// running jobs, and then at the end of its account's queue. A job that
// cannot even start (NATS unavailable) is retried after the first value.
//
// Each ffmpeg run is killed when for --ffmpeg-stall-timeout (Config.Stall,
// 2 min) it neither prints a progress line nor grows the files of its own
// output, or when it runs longer than 60 s + 20 × the length (the preview:
// 20 × at most 6 s). Each ffprobe run is killed after 10 minutes.
//
// # Shutdown and crashes
//
// On shutdown the job's context ends: ffmpeg is killed, the work directory
// removed, TranscodeInterrupted{reason: shutdown} recorded and the job
// released (Job.Release: a copy at the end of its account's queue, so a
// running worker takes it at its next pick and a restarted one at its
// first). No attempt is used up.
//
// When the process dies (kill -9 included) ffmpeg dies with it (see
// ffmpeg.CheckDiesWithParent, which New runs: kino does not start unless an
// ffmpeg started as every run starts it dies with its parent), heartbeats
// stop and the server redelivers the job after AckWait. The next worker
// finds the attempt with no end and records TranscodeInterrupted{reason:
// crash} before its own TranscodeStarted.
//
// # Work directories
//
// Config.Scratch (the media backend's WorkRoot, <data>/media/.work, 0711:
// ffmpeg's user passes through and lists nothing) holds one directory per
// running attempt, <id>-<random>/ (0700, given to --ffmpeg-user when kino
// runs as root; its input then 0644), beside a lock file <id>-<random>.lock
// (0600, kino's). The lock file is created and flock'ed before its
// directory exists, and held for the whole attempt; the kernel drops it
// when the process dies, however it dies. Its descriptor is close-on-exec,
// so no ffmpeg holds it, and it lies outside the work directory, out of
// ffmpeg's reach. At Run's start and every minute every transcoding process
// removes each work directory (and staging directory, <attempt>.playlists)
// whose lock it can take: its attempt runs nowhere any more. A directory
// without a lock file goes once untouched for an hour; a lock file without
// its directory once a minute old. New checks, when ffmpeg runs as another
// user, that this user can pass through every directory down to the
// scratch directory.
//
// Every ffmpeg and ffprobe of the attempt runs in that directory
// (ffmpeg.Jail), reads file:input<ext> with the sniffed demuxer forced, and
// writes its outputs there by relative names.
//
// # Delete during processing
//
// A delete is never blocked by a running job. Besides the watch that
// cancels the job, the worker finds out when it records its result at the
// latest: it reloads the video's events before publishing, Publish fails
// when the video's media is gone, and CompleteTranscode (or
// FailTranscode) is refused after Deleted. In each case the worker removes
// the video's files, clears the progress and acks the job: no
// TranscodeSucceeded follows a Deleted.
//
// # Progress
//
// Progress is not an event: it changes every second and means nothing once
// the job ends. The transcoder reports it (progressReporter) at most once a
// second to the KV bucket KINO_PROGRESS (kv.Progress): the
// fraction of the ladder done, the least advanced lane's when it runs in
// two; and, once known, the speed (seconds of video a second: an
// exponential moving average, weight 0.3, of samples at least a second
// apart) and the seconds left (length × (1 − p) / speed, left out below
// 0.01× or above a week). The key is cleared when the video ends COMPLETED
// or FAILED, is found deleted, or the attempt fails; otherwise the bucket's
// TTL removes it.
//
// # Progressive publishing
//
// A video plays before its encode ends (progressive.go, through
// Media.PublishFiles, which both media backends implement).
//
//   - ffmpeg writes EVENT playlists with -hls_flags
//     independent_segments+temp_file: every segment and playlist is
//     written under a temporary name and renamed when complete.
//   - The early publisher looks at the work directory once a second while
//     the ladder runs. For each rendition (the rungs, then audio) it reads
//     ffmpeg's playlist through an os.Root of the work directory (plain
//     files of at most 4 MiB, nothing outside it), publishes the segments
//     it lists that are not published yet (only names like seg_NNNNN.m4s,
//     and before the first its initialization segment, init.mp4 or
//     init_N.mp4, named by #EXT-X-MAP),
//     then that rendition's playlist listing exactly the published
//     segments, rewritten by kino in its staging directory
//     (<attempt>.playlists, 0700): ffmpeg's header tags, then
//     #EXT-X-PLAYLIST-TYPE:EVENT and #EXT-X-START:TIME-OFFSET=0 (hls.js
//     would otherwise start an EVENT playlist near its live edge), then
//     the segments, never #EXT-X-ENDLIST. Once every rendition of the
//     first master has a segment, the master ffmpeg wrote is published,
//     once, after a check that it lists exactly those renditions.
//   - Playable: when the master is out, the publisher records MarkPlayable
//     (TranscodePlayable, once per attempt) if a viewer starting now would
//     not catch the encoder: with E seconds published in every rung, D
//     the length and s the speed so far (E over the time since the ladder
//     started) discounted by 10 %, when E ≥ D, s ≥ 1 or E ≥ D·(1−s) + 4 s
//     (playable). Playing at 1× from 0 while the encoder adds s seconds a
//     second, the viewer is closest to the encoder when it finishes; the
//     whole segment and the 10 % are the margin for scenes that encode
//     slower. The read models then give the video its playlistUrl while
//     PROCESSING, and the fan-out sends video.playable.
//   - Lanes: with the ladder in two lanes the first master is the low
//     lane's (its rungs and the audio), and TranscodePlayable names those
//     rungs. Once the high lane is safe to start from too, by the same
//     rule on its own seconds, the merged master (ffmpeg.MergeMasters) is
//     published: viewers who start from then on get every rung; one who
//     started on the first master keeps its rungs, since players read the
//     master once.
//   - The end: when ffmpeg ended well, a last pass publishes what the
//     ticker missed (still EVENT), each media playlist of the work
//     directory is rewritten VOD through the os.Root, and the outputs are
//     checked and published as above. Publish then replaces what was
//     published early.
//   - Delete, failure, crash: the publisher is stopped (and waited for)
//     before the attempt returns; a PublishFiles racing a removal fails
//     NotFound and leaves nothing. An attempt that fails or is interrupted
//     ends the video's playability at once (the read models clear
//     playlistUrl on TranscodeFailed and TranscodeInterrupted). A new
//     attempt removes the earlier attempt's outputs before publishing its
//     own: an EVENT playlist only ever grows, and a shorter one published
//     under a player makes hls.js start the viewer again at 0:00, where a
//     404 stops it. The fan-out announces video.playable once per
//     processing run.
//
// # Storyboard and download
//
// The storyboard is its own ffmpeg pass from the source (ffmpeg's package
// doc says why not a branch of the ladder's), run in the stills' goroutine
// after the thumbnail and preview; ffmpeg.Storyboard.Assemble lays the
// tiles out into storyboard.jpg. A pass that fails is logged and left
// out. The download rendition is made after the ladder, only when the
// video's state asks for it (the collection's downloads or the upload's
// download). CompleteTranscode says which were published; a name a work
// directory lacks is not published, and an earlier attempt's file of that
// name is removed.
package transcoder
