package httpapitest

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// MediaDir is the media directory the API stores uploads in:
// <MediaDir>/<id>/original.<ext>, and .incoming for uploads in flight.
func (k *Kino) MediaDir() string { return k.mediaDir }

var (
	clipOnce sync.Once
	clipData []byte
	clipErr  error
)

// Clip is a real 1 s 320x180 MP4 made by ffmpeg, once per test binary.
func Clip(t testing.TB) []byte {
	t.Helper()
	clipOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kino-clip")
		if err != nil {
			clipErr = err
			return
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "clip.mp4")
		out, err := exec.Command("ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25",
			"-t", "1", "-pix_fmt", "yuv420p", path).CombinedOutput()
		if err != nil {
			clipErr = fmt.Errorf("ffmpeg: %v: %s", err, out)
			return
		}
		clipData, clipErr = os.ReadFile(path)
	})
	if clipErr != nil {
		t.Fatal(clipErr)
	}
	return clipData
}

// StreamingUpload is a multipart body (and its Content-Type) of a file of
// size bytes into collection, generated on the fly so that the test holds
// no copy of the file; it starts with MP4Box, passing the container check.
func StreamingUpload(collection, filename string, size int64) (io.Reader, string) {
	head := MP4Box
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		_ = mw.WriteField("collection", collection)
		fw, err := mw.CreateFormFile("file", filename)
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		chunk := bytes.Repeat([]byte{0x42}, 64<<10)
		if _, err := fw.Write(head); err != nil {
			pw.CloseWithError(err)
			return
		}
		for left := size - int64(len(head)); left > 0; left -= int64(len(chunk)) {
			n := min(left, int64(len(chunk)))
			if _, err := fw.Write(chunk[:n]); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	return pr, mw.FormDataContentType()
}
