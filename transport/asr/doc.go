// Package asr generates captions: an Engine recognizes the speech of a
// media file and returns it as timed, readable cues (Segment), offline.
// Pocketsphinx is the engine kino ships: CMU PocketSphinx through the asr
// filter of Debian's ffmpeg, with Debian's US English model
// (pocketsphinx-en-us).
//
// # How Pocketsphinx works
//
// Transcribe opens the input as every ffmpeg run of kino does
// (ffmpeg.OpenInput: only the containers kino hosts, the demuxer forced,
// the file protocol only) and probes it (ffmpeg.Probe, under
// PocketsphinxConfig.Bounds): a file without an audio stream is ErrNoAudio
// at once, without decoding anything. Then one ffmpeg (ffmpeg.Run: its own
// process group killed when ctx ends or the run overstays ten times 30 s
// plus MaxRealtime times the media's length, which bounds its CPU time
// where limits apply, stalled-progress watchdog, bounded
// stderr, Jail's user and resource limits) decodes the first audio stream,
// up to a second past the video's end as the transcoder does (audio that
// runs on costs nothing), through one filter graph:
//
//	16 kHz mono s16 from 0 → silencedetect → apad 1 s → asr → ametadata file=asr.meta
//
// Times are the file's (from its start, as the transcoder's outputs
// start), not the audio stream's: an audio stream that starts later than
// the video, or has gaps, is padded with silence.
// The asr filter reports an utterance (lavfi.asr.text) once per pause the
// recognizer detects, on the frame where it detects it, with no word
// times, and only once silence follows: hence the second of padding.
// silencedetect (PauseLevel, Pause) marks where sound starts and stops.
// ametadata writes both to a file in the run's scratch directory, read
// after the run with bounds (16 MiB, 64 KiB a line); the directory is
// removed whatever happens.
//
// Loading the model costs about 0.4 s of CPU, so one pass does all the
// work: starting an ffmpeg per utterance would pay it each time and decode
// the file again. Recognition runs at 3 to 5 times real time on one core
// of the machine the tests were measured on.
//
// # Cues
//
// An utterance is placed from the first sound after the end of the one
// before to the last sound before its own end (so from a pause to a
// pause). When no pause separates it from the one before (constant
// background noise or music), it starts at most 0.6 s a word plus a second
// before its end. An utterance is cut into the fewest cues of at most two
// lines of 42 characters and at most 7 s, balanced by characters, each
// timed in proportion to its characters: without word times, characters
// are a fair guess of speaking time. A run where nothing is recognized
// (silence, music, noise) is ErrNoSpeech.
//
// # Quality
//
// PocketSphinx is a 2010s HMM recognizer with a small trigram language
// model: far below Whisper or any current neural model. On clear,
// synthetic speech (Festival's voice, asrtest's corpus) it gets most words
// right; on the Harvard sentences about a third of the words are wrong
// (go test ./transport/asr -run '^$' -bench Pocketsphinx). On real
// recordings (accents, noise, music, several speakers, words outside its
// vocabulary) expect worse: captions to search by and to follow a talk
// with, not captions to publish without review. It knows one language,
// the one of its model (PocketsphinxConfig points at another model).
//
// # A better engine
//
// Engine is the whole contract: a type with Transcribe and Languages that
// passes asrtest.Run (speech comes back as readable cues holding at least
// half the words at the right time, ErrNoAudio, ErrNoSpeech, ErrLanguage
// as domain Unsupported, context cancellation) can replace Pocketsphinx
// where cmd wires it. For whisper.cpp, for example: extract the audio as
// 16 kHz mono WAV with ffmpeg.AudioFilterArgs-style arguments and
// ffmpeg.Run, run whisper-cli on it with its model (-m ggml-base.en.bin,
// -l for the language, -oj or -osrt for timed segments) under the same
// kind of context, time budget and process group, parse its segments and
// cut them into readable cues as cues.go does. Whisper gives segment times
// itself, so no pause detection is needed.
package asr
