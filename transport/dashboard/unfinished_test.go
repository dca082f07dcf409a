package dashboard_test

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/kino-video/kino/domain"
	"github.com/kino-video/kino/transport/httpapi/httpapitest"
)

// tusStart creates an unfinished tus upload of 4000 bytes named filename
// into key's collection main, with its first 1000 bytes (under the KiB
// that is sniffed), and returns its id.
func tusStart(t *testing.T, k kino, key, filename string) string {
	t.Helper()
	meta := "filename " + base64.StdEncoding.EncodeToString([]byte(filename)) + ",collection " + base64.StdEncoding.EncodeToString([]byte("main"))
	req, _ := http.NewRequest("POST", k.URL+"/v1/uploads/tus", bytes.NewReader(make([]byte, 1000)))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", "4000")
	req.Header.Set("Upload-Metadata", meta)
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 201 || resp.Header.Get("Upload-Offset") != "1000" {
		t.Fatalf("tus creation: %d %v", resp.StatusCode, resp.Header)
	}
	return loc[strings.LastIndex(loc, "/")+1:]
}

// The upload page lists the account's unfinished uploads (escaped), with
// a Discard button for each; never another account's. Once discarded
// (DELETE with the session, as the page's button does) it is gone.
func TestUploadPageListsUnfinishedUploads(t *testing.T) {
	k := startKino(t, httpapitest.Options{})
	keyA, keyB := k.Account("acme", domain.PlanPro), k.Account("beta", domain.PlanPro)
	call(t, k, "POST", "/v1/collections", keyA, "application/json", strings.NewReader(`{"slug":"main","name":"Main"}`))
	call(t, k, "POST", "/v1/collections", keyB, "application/json", strings.NewReader(`{"slug":"main","name":"Main"}`))
	mine := tusStart(t, k, keyA, "acme-<img src=x onerror=alert(1)>.mp4")
	theirs := tusStart(t, k, keyB, "beta-secret.mp4")
	ana := login(t, k, "ana@acme.example", "acme")

	r := get(t, ana, k.URL+"/upload")
	if r.status != 200 {
		t.Fatalf("GET /upload: %d", r.status)
	}
	for _, want := range []string{"Unfinished uploads", "acme-&lt;img src=x onerror=alert(1)&gt;.mp4", `data-discard="` + mine + `"`,
		`value="25"`, "25% · 1000 B of 3.9 KiB", "pick the same file again"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("GET /upload: want %q in\n%.4000s", want, r.body)
		}
	}
	for _, bad := range []string{"<img src=x", "beta-secret", theirs} {
		if strings.Contains(r.body, bad) {
			t.Errorf("GET /upload shows %q", bad)
		}
	}

	// Discard, as the page's button does: the session, Tus-Resumable.
	req, _ := http.NewRequest("DELETE", k.URL+"/v1/uploads/tus/"+mine, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	resp, err := ana.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Fatalf("DELETE with the session: %d", resp.StatusCode)
	}
	// Nor can the session reach another account's upload.
	req, _ = http.NewRequest("DELETE", k.URL+"/v1/uploads/tus/"+theirs, nil)
	req.Header.Set("Tus-Resumable", "1.0.0")
	if resp, err = ana.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("DELETE of beta's upload: %d, want 404", resp.StatusCode)
	}
	if r := get(t, ana, k.URL+"/upload"); r.status != 200 || strings.Contains(r.body, "Unfinished uploads") || strings.Contains(r.body, mine) {
		t.Errorf("after DELETE, GET /upload: %d\n%.4000s", r.status, r.body)
	}
}
