package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kino-video/kino/cmd/kino/bench"
	"github.com/kino-video/kino/domain"
)

// benchPlans lifts the request rate so the limiter never answers 429.
func benchPlans(c *Config) {
	c.Plans = testPlans()
	for name, l := range c.Plans {
		l.RequestsPerMinute = 1 << 30
		c.Plans[name] = l
	}
}

func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}}
}

func getLoop(b *testing.B, client *http.Client, url, key string) {
	loop(b, client, func() *http.Request {
		req, _ := http.NewRequest("GET", url, nil) // one each: a Request is not shared between clients
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		return req
	}, 200, "req/s")
}

// loop sends the requests next makes from b's parallel clients, each to
// be answered with status want, and reports their rate in unit.
func loop(b *testing.B, client *http.Client, next func() *http.Request, want int, unit string) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Do(next())
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				b.Errorf("status %d, want %d", resp.StatusCode, want)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}

// BenchmarkReads measures GET /v1/videos/{id} and GET /v1/videos?limit=50
// through the real serve wiring, beside a bare net/http handler that
// writes a body of the same size (the ceiling for this machine).
func BenchmarkReads(b *testing.B) {
	h := start(b, b.TempDir(), benchPlans)
	key := h.account("bench", domain.PlanBusiness)
	if r := h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}); r.status != 201 {
		b.Fatal(r.status)
	}
	data := clip(b)
	var id string
	for i := 0; i < 60; i++ {
		r := h.upload(key, "main", "clip.mp4", data)
		if r.status != 202 {
			b.Fatalf("upload: %d %s", r.status, r.body)
		}
		id = r.json(b)["video"].(map[string]any)["id"].(string)
	}
	one := h.do("GET", "/v1/videos/"+id, key, nil).body
	page := h.do("GET", "/v1/videos?limit=50", key, nil).body
	client := benchClient()

	b.Run("get-video", func(b *testing.B) { getLoop(b, client, h.url+"/v1/videos/"+id, key) })
	b.Run("list-50", func(b *testing.B) { getLoop(b, client, h.url+"/v1/videos?limit=50", key) })
	b.Run("baseline-bare-get-video", func(b *testing.B) { getLoop(b, client, bare(b, one), "") })
	b.Run("baseline-bare-list-50", func(b *testing.B) { getLoop(b, client, bare(b, page), "") })
}

// bare serves body as JSON from a plain net/http server (kino bench's
// baseline), stopped when the benchmark ends.
func bare(b *testing.B, body []byte) string {
	b.Helper()
	url, stop, err := bench.BareJSON(body)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)
	return url
}

// BenchmarkUpload measures a 64 MiB upload through the API (multipart
// parsing, streaming to disk, the event and the wait for the read model),
// beside a bare handler that copies the same request body to a file.
func BenchmarkUpload(b *testing.B) {
	const size = 64 << 20
	// On tmpfs when there is one: on this machine's disk, write-back
	// stalls swing both figures 3x from run to run, hiding what kino adds.
	tmp := func() string {
		dir, err := os.MkdirTemp("/dev/shm", "kino-bench-")
		if err != nil {
			return b.TempDir()
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	h := start(b, tmp(), benchPlans)
	key := h.account("bench", domain.PlanBusiness)
	if r := h.do("POST", "/v1/collections", key, map[string]string{"slug": "main", "name": "Main"}); r.status != 201 {
		b.Fatal(r.status)
	}
	b.Run("kino", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			body, ct := streamingUpload("main", "big.mp4", size)
			r := h.request("POST", "/v1/videos", key, ct, body)
			if r.status != 202 {
				b.Fatalf("upload: %d %s", r.status, r.body)
			}
			b.StopTimer() // keep tmpfs small
			h.do("DELETE", "/v1/videos/"+r.json(b)["video"].(map[string]any)["id"].(string), key, nil)
			b.StartTimer()
		}
	})
	b.Run("baseline-bare-copy", func(b *testing.B) {
		url, stop, err := bench.BareCopy(tmp()) // the floor kino bench uses too
		if err != nil {
			b.Fatal(err)
		}
		defer stop()
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			body, ct := streamingUpload("main", "big.mp4", size)
			resp, err := http.Post(url, ct, body)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}

// BenchmarkWrites measures POST /v1/collections from 8 clients through the
// real serve wiring (authentication, the decision, the append), beside
// the bare append handler kino bench compares it with.
func BenchmarkWrites(b *testing.B) {
	h := start(b, b.TempDir(), benchPlans)
	key := h.account("bench", domain.PlanBusiness)
	client := benchClient()
	var n atomic.Int64 // slugs stay unique across the benchmark's rounds
	post := func(b *testing.B, url, key string) {
		b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0))) // 8 clients (on 2 cores, or more), as kino bench's writes
		loop(b, client, func() *http.Request {
			req, _ := http.NewRequest("POST", url, strings.NewReader(fmt.Sprintf(`{"slug":"c%d","name":"Collection"}`, n.Add(1))))
			req.Header.Set("Content-Type", "application/json")
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			return req
		}, 201, "cmd/s")
	}
	b.Run("kino", func(b *testing.B) { post(b, h.url+"/v1/collections", key) })
	b.Run("baseline-bare-append", func(b *testing.B) {
		url, stop, err := bench.BareAppend(context.Background(), h.m.store)
		if err != nil {
			b.Fatal(err)
		}
		defer stop()
		post(b, url, "")
	})
}
