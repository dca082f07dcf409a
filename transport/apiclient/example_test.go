package apiclient_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/kino-video/kino/transport/apiclient"
)

// Upload a file with tus, wait for it to be processed and print where it
// plays.
func Example() {
	ctx := context.Background()
	c := &apiclient.Client{BaseURL: "http://localhost:8080/v1", Key: os.Getenv("KINO_API_KEY")}

	f, err := os.Open("holiday.mp4")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		log.Fatal(err)
	}
	up, err := c.UploadResumable(ctx, f, fi.Size(), "holiday.mp4", "default", apiclient.TusOptions{
		Progress: func(sent, total int64) { fmt.Printf("\r%d / %d bytes", sent, total) },
	})
	if err != nil {
		// up.URL (when up is not nil) resumes it later: c.Resume(up.URL).Send(ctx, f, ...)
		log.Fatal(err)
	}

	wait, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	v, err := c.Wait(wait, up.VideoID(), apiclient.WaitOptions{})
	if errors.Is(err, apiclient.ErrFailed) {
		log.Fatal(err) // video 01... FAILED: The file is truncated or corrupt.
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("\nplaylist:", *v.PlaylistURL)
}

func ExampleClient_Upload() {
	c := &apiclient.Client{BaseURL: "http://localhost:8080/v1", Key: os.Getenv("KINO_API_KEY")}
	f, err := os.Open("clip.mp4")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	// A file is an io.Seeker: refused with 429 or 503, it is sent again.
	up, err := c.Upload(context.Background(), f, fi.Size(), "clip.mp4", "default", nil)
	var apiErr *apiclient.Error
	switch {
	case errors.Is(err, apiclient.ErrTooLarge):
		log.Fatal("over the plan's size limit")
	case errors.As(err, &apiErr):
		log.Fatalf("%s: %s", apiErr.Label, apiErr.Message)
	case err != nil:
		log.Fatal(err)
	}
	fmt.Println(up.Video.ID, up.Video.Status) // 01... PENDING
}

func ExampleClient_Resume() {
	// Another process, after a crash: the URL persisted from
	// CreateResumable (or UploadResumable) and the same file.
	c := &apiclient.Client{BaseURL: "http://localhost:8080/v1", Key: os.Getenv("KINO_API_KEY")}
	f, err := os.Open("holiday.mp4")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	u := c.Resume("http://localhost:8080/v1/uploads/tus/01M80FQJ9RFVF1NNH3W385FH85")
	if err := u.Send(context.Background(), f, apiclient.TusOptions{Checksum: true}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("video", u.VideoID())
}

func ExampleClient_CreateDirectUpload() {
	c := &apiclient.Client{BaseURL: "http://localhost:8080/v1", Key: os.Getenv("KINO_API_KEY")}
	du, err := c.CreateDirectUpload(context.Background(), "default", 15*time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	// Hand du.URL to the browser (tus-js-client's endpoint): it needs no
	// key, works once and expires at du.ExpiresAt (15 minutes from now).
	// du.ID is the video's.
	fmt.Println(du.ID, du.URL, du.ExpiresAt)
}

func ExampleClient_AllVideos() {
	c := &apiclient.Client{BaseURL: "http://localhost:8080/v1", Key: os.Getenv("KINO_API_KEY")}
	for v, err := range c.AllVideos(context.Background(), apiclient.ListOptions{Status: apiclient.StatusFailed}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(v.ID, v.Filename, *v.ErrorMessage)
	}
}

func ExampleClient_CreateWebhook() {
	c := &apiclient.Client{BaseURL: "http://localhost:8080/v1", Key: os.Getenv("KINO_API_KEY")}
	ctx := context.Background()
	hook, err := c.CreateWebhook(ctx, "https://example.com/hooks/kino", apiclient.EventVideoCompleted, apiclient.EventVideoFailed)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("store this secret now, it is not shown again:", hook.Secret)
	if _, err := c.TestWebhook(ctx, hook.ID); err != nil {
		log.Fatal(err)
	}
	for d, err := range c.AllDeliveries(ctx, hook.ID, apiclient.PageOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(d.DeliveryID, d.Attempt, d.Succeeded, d.StatusCode, d.Error)
		if d.GaveUp {
			if _, err := c.Redeliver(ctx, hook.ID, d.DeliveryID); err != nil {
				log.Fatal(err)
			}
		}
	}
}

// A webhook receiver: verified deliveries only, each handled once.
func ExampleWebhookHandler() {
	secret := os.Getenv("KINO_WEBHOOK_SECRET") // whsec_..., from CreateWebhook
	seen := map[string]bool{}                  // use a store shared by your receivers
	http.Handle("POST /hooks/kino", apiclient.WebhookHandler(secret, func(_ *http.Request, e apiclient.WebhookEvent) error {
		if seen[e.DeliveryID] {
			return nil // a retry of a delivery already handled
		}
		seen[e.DeliveryID] = true
		switch e.Type {
		case apiclient.EventVideoCompleted:
			log.Printf("video %s ready: %s", e.Video.ID, *e.Video.PlaylistURL)
		case apiclient.EventVideoFailed:
			log.Printf("video %s failed: %s", e.Video.ID, *e.Video.ErrorMessage)
		}
		return nil
	}))
	log.Fatal(http.ListenAndServe("127.0.0.1:3000", nil))
}

// The same check inside a handler of your own.
func ExampleReadWebhook() {
	secret := os.Getenv("KINO_WEBHOOK_SECRET")
	http.HandleFunc("POST /hooks/kino", func(w http.ResponseWriter, r *http.Request) {
		e, err := apiclient.ReadWebhook(r, secret)
		if errors.Is(err, apiclient.ErrSignature) {
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		if err != nil {
			http.Error(w, "malformed", http.StatusBadRequest)
			return
		}
		log.Printf("%s %s (delivery %s)", e.Type, e.ID, e.DeliveryID)
		w.WriteHeader(http.StatusNoContent)
	})
}

func ExampleClient_Account() {
	c := &apiclient.Client{BaseURL: "http://localhost:8080/v1", Key: os.Getenv("KINO_API_KEY")}
	a, err := c.Account(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s on %s: %d of %d requests left, %d bytes stored, %d videos processing\n",
		a.Slug, a.Plan, a.RateLimit.Remaining, a.RateLimit.Limit, a.StorageBytes, a.Videos[apiclient.StatusProcessing])
}

func ExampleIsNotFound() {
	c := &apiclient.Client{BaseURL: "http://localhost:8080/v1", Key: os.Getenv("KINO_API_KEY")}
	_, err := c.Video(context.Background(), "01M80FQJ9RFVF1NNH3W385FH85")
	if apiclient.IsNotFound(err) {
		fmt.Println("no such video (or another account's)")
	}
}
