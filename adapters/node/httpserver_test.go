package node

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// ShutdownContext drains while ctx lasts, then closes what is left and
// waits for the Serve goroutine: a request that never ends does not hold
// it past ctx.
func TestHTTPServerShutdownContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	s := ServeHTTP(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}), nil)
	go func() { _, _ = http.Get("http://" + ln.Addr().String() + "/") }()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.ShutdownContext(ctx); err != nil {
		t.Logf("closing the request left: %v", err)
	}
	select {
	case <-s.done:
	default:
		t.Fatal("ShutdownContext returned before the Serve goroutine ended")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("ShutdownContext took %v past a 50 ms context", d)
	}
}
