package quic

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cip11/cip11/presence/validators"
)

// lockedBuffer is a bytes.Buffer safe for the client's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestClientBindsUnspecifiedAndWarnsNoLink (issue 28): a client with no
// Listen binds the unspecified address (a 127.0.0.1 socket cannot send to
// a validator on another host), and a validator it cannot reach is logged
// at Warn with its address and the error once per interval, not silently
// retried.
func TestClientBindsUnspecifiedAndWarnsNoLink(t *testing.T) {
	r := runnerKey(t, 1)
	f := newFixture(t, 1, r)
	dead, err := net.ListenPacket("udp", "127.0.0.1:0") // a UDP port nobody answers QUIC on
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	f.dir.Put(validators.PeerKey(f.vkeys[0].PubKey().Raw()), dead.LocalAddr())
	logs := &lockedBuffer{}
	c := f.startClient(r, nil, func(cfg *ClientConfig) {
		cfg.HandshakeTimeout = 200 * time.Millisecond
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	if ip := c.udp.LocalAddr().(*net.UDPAddr).IP; !ip.IsUnspecified() {
		t.Fatalf("the client's socket is bound to %v, want the unspecified address", ip)
	}
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(logs.String(), "quic: no link to validator") < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	out := logs.String()
	if n := strings.Count(out, "quic: no link to validator"); n < 3 {
		t.Fatalf("%d failed dials logged in 20 s:\n%s", n, out)
	}
	if n := strings.Count(out, "level=WARN msg=\"quic: no link to validator"); n != 1 {
		t.Fatalf("%d Warn lines for one validator within %v, want 1:\n%s", n, refusalLogInterval, out)
	}
	if !strings.Contains(out, "addr="+dead.LocalAddr().String()) {
		t.Fatalf("the log does not name the validator's address %s:\n%s", dead.LocalAddr(), out)
	}
}
