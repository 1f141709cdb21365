package node

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/adapters/node/httpapi"
)

// TestBusyLoopAnswers503 (issue 29): while the loop is held (a slow block
// commit, an fsync), an HTTP request the loop cannot take before the
// backend timeout answers 503 with ErrBusy instead of waiting unbounded,
// and the same request is served once the loop is free. GET /status and
// GET /healthz never wait for the loop (the facts it published after its
// last step): they answer 200 at once with the committed height.
func TestBusyLoopAnswers503(t *testing.T) {
	v := newTestValidator(t, testDevnet(t, 1, nil), t.TempDir())
	defer v.Close()
	release, held := make(chan struct{}), make(chan struct{})
	go func() { _ = v.do(func(*chain.Core) { close(held); <-release }) }()
	<-held

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, err := (Backend{v}).Job(ctx, cip11.Hash{1}); !errors.Is(err, ErrBusy) || !errors.Is(err, httpapi.ErrUnavailable) ||
		!errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Job on a held loop: %v, want ErrBusy, httpapi.ErrUnavailable and the deadline", err)
	}
	h, err := httpapi.NewHandler(Backend{v}, httpapi.Options{BackendTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/status", "/healthz"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusOK { // waiting for the loop would answer 503 at the 50 ms backend timeout
			t.Fatalf("GET %s on a held loop: %d, want 200 without waiting for the loop: %s", path, w.Code, w.Body)
		}
	}
	if st := v.Status(); st.Height != v.Height() {
		t.Fatalf("status on a held loop: height %d, committed %d", st.Height, v.Height())
	}
	for _, path := range []string{"/dashboard.json", "/jobs/" + cip11.Hash{1}.String(), "/runner/" + cip11.Address{2}.String()} {
		start := time.Now()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusServiceUnavailable || time.Since(start) > 5*time.Second {
			t.Fatalf("GET %s on a held loop: %d after %v, want 503 at the backend timeout: %s", path, w.Code, time.Since(start), w.Body)
		}
	}
	close(release)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/status", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("GET /status on a free loop: %d %s", w.Code, w.Body)
	}
}
