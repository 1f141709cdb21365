package devnet

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// The devnet's runners drop their QUIC client's lines below Error (unless
// the devnet logs at Debug) and keep their own.
func TestRunnerLoggerQuietsTheClient(t *testing.T) {
	var buf bytes.Buffer
	l := runnerLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	l.Warn("quic: no link to validator; retrying with backoff")
	l.Warn("emergency heartbeat refresh (§6.6)")
	l.Error("quic: something fatal")
	out := buf.String()
	if strings.Contains(out, "no link") || !strings.Contains(out, "emergency heartbeat") || !strings.Contains(out, "something fatal") {
		t.Fatalf("warn level:\n%s", out)
	}
	buf.Reset()
	l = runnerLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Warn("quic: no link to validator; retrying with backoff")
	if !strings.Contains(buf.String(), "no link") {
		t.Fatalf("debug level drops the client's line:\n%s", buf.String())
	}
}
