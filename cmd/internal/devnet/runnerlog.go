package devnet

import (
	"context"
	"log/slog"
	"strings"
)

// runnerLogger is the logger of the devnet's in-process runners. Their
// QUIC client's lines ("quic: …": admissions, refusals, unreachable
// validators, jobs) are per runner, and a validator the devnet kills on
// purpose is unreachable for every runner at once: next to the report
// they are noise, so below Error they are dropped unless the devnet's
// logger is at Debug. The runners' own lines pass unchanged.
func runnerLogger(l *slog.Logger) *slog.Logger {
	if l == nil || l.Enabled(context.Background(), slog.LevelDebug) {
		return l
	}
	return slog.New(quietClient{h: l.Handler()})
}

// quietClient drops "quic: " records below Error and passes the rest to h.
type quietClient struct{ h slog.Handler }

func (q quietClient) Enabled(ctx context.Context, l slog.Level) bool { return q.h.Enabled(ctx, l) }

func (q quietClient) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelError && strings.HasPrefix(r.Message, "quic: ") {
		return nil
	}
	return q.h.Handle(ctx, r)
}

func (q quietClient) WithAttrs(a []slog.Attr) slog.Handler { return quietClient{h: q.h.WithAttrs(a)} }
func (q quietClient) WithGroup(g string) slog.Handler      { return quietClient{h: q.h.WithGroup(g)} }
