package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cip11/cip11/job"
)

// TestOverRealServer runs the handler behind a real net/http server: the
// client's transparent gzip for /metrics, HEAD, 405 and 413 over a socket.
func TestOverRealServer(t *testing.T) {
	reg, m := newRegistry(t)
	m.PollServed()
	h, _ := newTestHandler(t, &fakeBackend{}, Options{Gatherer: reg, Metrics: m, MaxBodyBytes: 512})
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := srv.Client()

	resp, err := c.Post(srv.URL+"/jobs", "application/json", strings.NewReader(validJob()))
	if err != nil {
		t.Fatal(err)
	}
	var v job.View
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /jobs: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()

	resp, err = c.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "cip11_poll_requests_total 1") {
		t.Fatalf("GET /metrics: %d\n%s", resp.StatusCode, body)
	}

	resp, err = c.Head(srv.URL + "/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != contentJSON {
		t.Fatalf("HEAD /status: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}

	req, _ := http.NewRequest(http.MethodPatch, srv.URL+"/submit", nil)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" || string(body) != `{"error":"method not allowed"}`+"\n" {
		t.Fatalf("PATCH /submit: %d Allow %q body %q", resp.StatusCode, resp.Header.Get("Allow"), body)
	}

	resp, err = c.Post(srv.URL+"/submit", "application/octet-stream", strings.NewReader(strings.Repeat("x", 4096)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !json.Valid(body) {
		t.Fatalf("oversized /submit: %d %q", resp.StatusCode, body)
	}
}
