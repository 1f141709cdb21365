package quic

import (
	"log/slog"
	"sync"
	"time"
)

// discardLogger is the logger a nil Logger option stands for.
var discardLogger = slog.New(slog.DiscardHandler)

func loggerOr(l *slog.Logger) *slog.Logger {
	if l == nil {
		return discardLogger
	}
	return l
}

// logLimiter lets one record per key (a peer) through every interval, so
// a peer that is refused in a loop cannot flood the log. The map is
// bounded: when full, entries older than the interval are pruned, and if
// none are, the record is dropped.
type logLimiter struct {
	mu    sync.Mutex
	every time.Duration
	now   func() time.Time
	last  map[string]time.Time
}

// logLimiterEntries bounds a logLimiter's map.
const logLimiterEntries = 4096

// refusalLogInterval is how often one peer's refusals are logged.
const refusalLogInterval = 10 * time.Second

func newLogLimiter(every time.Duration, now func() time.Time) *logLimiter {
	return &logLimiter{every: every, now: now, last: map[string]time.Time{}}
}

func (l *logLimiter) allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if t, ok := l.last[key]; ok && now.Sub(t) < l.every {
		return false
	}
	if len(l.last) >= logLimiterEntries {
		for k, t := range l.last {
			if now.Sub(t) >= l.every {
				delete(l.last, k)
			}
		}
		if len(l.last) >= logLimiterEntries {
			return false
		}
	}
	l.last[key] = now
	return true
}
