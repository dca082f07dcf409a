package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

// TusChunk is the chunk size of the tus measure: tus-js-client users
// commonly pick 5-10 MiB chunks so that a lost connection costs little.
const TusChunk = 8 << 20

// benchTus uploads the same file with tus in TusChunk chunks, as one
// multipart upload and to a bare handler copying the body to disk, and
// compares tus with both (goals >= 0.90 of multipart, >= 0.70 of the bare
// copy).
func benchTus(ctx context.Context, m Kino, key string, o Options, dir string) ([]Result, error) {
	api := apiOf(m, key)
	if code, _, err := api.call(ctx, "POST", "/v1/collections", `{"slug":"tus","name":"tus"}`); err != nil || code != 201 {
		return nil, fmt.Errorf("create collection: %d %v", code, err)
	}
	bareURL, stop, err := BareCopy(filepath.Join(dir, "bare-tus"))
	if err != nil {
		return nil, err
	}
	defer stop()
	size := int64(o.UploadMB) << 20
	r := Result{Measure: fmt.Sprintf("tus upload of %d MiB in %d MiB chunks vs one multipart upload", o.UploadMB, TusChunk>>20),
		Unit: "MB/s", Goal: ">= 0.90", HigherWin: true}
	bare := Result{Measure: fmt.Sprintf("tus upload of %d MiB in %d MiB chunks vs a bare handler copying the body to disk", o.UploadMB, TusChunk>>20),
		Unit: "MB/s", Goal: ">= 0.70", HigherWin: true}
	for i := 0; i < o.Runs; i++ {
		t0 := time.Now()
		id, err := api.upload(ctx, "tus", "big.mp4", &noise{}, size)
		if err != nil {
			return nil, err
		}
		r.BaseRuns = append(r.BaseRuns, float64(size)/1e6/time.Since(t0).Seconds())
		if code, _, err := api.call(ctx, "DELETE", "/v1/videos/"+id, ""); err != nil || code != 200 {
			return nil, fmt.Errorf("delete: %d %v", code, err)
		}
		t0 = time.Now()
		if id, err = api.tusUpload(ctx, "tus", "big.mp4", size, TusChunk); err != nil {
			return nil, err
		}
		r.KinoRuns = append(r.KinoRuns, float64(size)/1e6/time.Since(t0).Seconds())
		if code, _, err := api.call(ctx, "DELETE", "/v1/videos/"+id, ""); err != nil || code != 200 {
			return nil, fmt.Errorf("delete: %d %v", code, err)
		}
		mbps, err := api.bareUpload(ctx, bareURL, size)
		if err != nil {
			return nil, err
		}
		bare.BaseRuns = append(bare.BaseRuns, mbps)
	}
	r.finish(0.90)
	r.Notes = "kino: tus creation + one PATCH per chunk on a kept-alive connection; baseline: the same bytes as one multipart POST /v1/videos to the same kino"
	bare.KinoRuns = r.KinoRuns
	bare.finish(0.70)
	return []Result{r, bare}, nil
}

// tusUpload uploads size bytes (an mp4 box, then zeros) with tus in
// chunks and returns the video's id.
func (a benchAPI) tusUpload(ctx context.Context, coll, name string, size, chunk int64) (string, error) {
	meta := "filename " + base64.StdEncoding.EncodeToString([]byte(name)) + ",collection " + base64.StdEncoding.EncodeToString([]byte(coll))
	req, err := http.NewRequestWithContext(ctx, "POST", a.base+"/v1/uploads/tus", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", strconv.FormatInt(size, 10))
	req.Header.Set("Upload-Metadata", meta)
	resp, err := a.client.Do(req)
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 201 || loc == "" {
		return "", fmt.Errorf("tus create: HTTP %d", resp.StatusCode)
	}
	src := io.MultiReader(bytes.NewReader(MP4Box), &noise{})
	for off := int64(0); off < size; {
		n := min(chunk, size-off)
		req, err := http.NewRequestWithContext(ctx, "PATCH", a.base+loc, io.LimitReader(src, n))
		if err != nil {
			return "", err
		}
		req.ContentLength = n
		req.Header.Set("Authorization", "Bearer "+a.key)
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("Content-Type", "application/offset+octet-stream")
		req.Header.Set("Upload-Offset", strconv.FormatInt(off, 10))
		resp, err := a.client.Do(req)
		if err != nil {
			return "", err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 204 {
			return "", fmt.Errorf("tus PATCH at %d: HTTP %d: %s", off, resp.StatusCode, b)
		}
		off += n
	}
	return loc[len(loc)-26:], nil
}
