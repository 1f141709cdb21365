package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// slowBackend's Status waits for its context: a node whose loop never
// takes the read.
type slowBackend struct {
	fakeBackend
	deadline chan bool // whether the context had a deadline
}

func (s *slowBackend) Status(ctx context.Context) (Status, error) {
	_, ok := ctx.Deadline()
	s.deadline <- ok
	<-ctx.Done()
	return Status{}, ctx.Err()
}

// Options.BackendTimeout bounds every Backend call (issue 29: no HTTP
// handler waits unbounded on the node): the request answers 503 at the
// deadline. Negative leaves the request's own context.
func TestBackendTimeout(t *testing.T) {
	b := &slowBackend{deadline: make(chan bool, 4)}
	h, _ := newTestHandler(t, b, Options{BackendTimeout: 30 * time.Millisecond})
	for _, path := range []string{"/status", "/healthz"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusServiceUnavailable || !<-b.deadline {
			t.Fatalf("GET %s: %d, want 503 with a deadline", path, w.Code)
		}
	}
	h, _ = newTestHandler(t, b, Options{BackendTimeout: -1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/status", nil).WithContext(ctx))
	if w.Code != http.StatusServiceUnavailable || <-b.deadline {
		t.Fatalf("GET /status, no timeout, cancelled request: %d, want 503 without a deadline", w.Code)
	}
	if DefaultBackendTimeout <= 0 {
		t.Fatal("DefaultBackendTimeout must bound calls")
	}
}
