package node

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// HTTPServer is an http.Server whose Serve goroutine is tracked: Serve
// errors other than http.ErrServerClosed are logged, and Shutdown drains
// requests within a deadline, then closes what is left and waits for the
// goroutine.
type HTTPServer struct {
	srv  *http.Server
	log  *slog.Logger
	done chan struct{}
}

// ServeHTTP serves h on ln until Shutdown.
func ServeHTTP(ln net.Listener, h http.Handler, log *slog.Logger) *HTTPServer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &HTTPServer{srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
		log: log, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("HTTP server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return s
}

// DefaultHTTPShutdown bounds how long Shutdown waits for requests in flight.
const DefaultHTTPShutdown = 5 * time.Second

// Shutdown stops accepting, waits up to timeout for requests in flight,
// closes the rest and waits for the Serve goroutine.
func (s *HTTPServer) Shutdown(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return s.ShutdownContext(ctx)
}

// ShutdownContext is Shutdown until ctx ends: it stops accepting, waits
// for requests in flight while ctx lasts, closes the rest and waits for
// the Serve goroutine (which ends once its connections are closed).
func (s *HTTPServer) ShutdownContext(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.log.Warn("HTTP shutdown deadline passed; closing open connections", "err", err)
		err = s.srv.Close()
	}
	<-s.done
	return err
}
