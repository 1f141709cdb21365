package quic

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// helloLimiter is the §6.2 per-peer rate limit on unauthenticated Hello: a
// token bucket per source IP. It is wall-clock driven (pre-auth DoS is not
// a block-height matter) with the clock injected.
type helloLimiter struct {
	mu     sync.Mutex
	rate   float64 // tokens per second; < 0 disables
	burst  float64
	now    func() time.Time
	bucket map[string]*tokens
}

type tokens struct {
	n    float64
	last time.Time
}

// maxLimiterEntries bounds the map; beyond it, idle entries are pruned.
const maxLimiterEntries = 1 << 16

func newHelloLimiter(rate float64, burst int, now func() time.Time) *helloLimiter {
	return &helloLimiter{rate: rate, burst: float64(burst), now: now, bucket: map[string]*tokens{}}
}

func sourceIP(a net.Addr) string {
	if u, ok := a.(*net.UDPAddr); ok {
		return u.IP.String()
	}
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// allow spends one token of src's bucket.
func (l *helloLimiter) allow(src string) bool {
	if l.rate < 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.bucket[src]
	if b == nil {
		if len(l.bucket) >= maxLimiterEntries {
			l.prune(now)
		}
		b = &tokens{n: l.burst, last: now}
		l.bucket[src] = b
	}
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.n = min(l.burst, b.n+dt*l.rate)
	}
	b.last = now
	if b.n < 1 {
		return false
	}
	b.n--
	return true
}

// prune drops buckets that have refilled completely (they carry no state).
func (l *helloLimiter) prune(now time.Time) {
	for k, b := range l.bucket {
		if b.n+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.bucket, k)
		}
	}
}

// halfOpen counts connections from their first QUIC Initial until CIP-11
// admission or failure (§6.6: cap concurrent half-open handshakes), in
// total and per source IP (§15.1: one source's storm must not take every
// slot). Each connection holds one token, released exactly once.
type halfOpen struct {
	n     atomic.Int64
	mu    sync.Mutex
	bySrc map[string]int
}

type halfOpenToken struct {
	once sync.Once
	h    *halfOpen
	src  string
	// served is set by whichever comes first: the server taking the
	// connection (claim) or the connection ending before it did; the
	// latter calls the unserved hook, so a connection closed before the
	// server's Accept saw it is still counted once (§6.6 pre-Hello close).
	served   atomic.Bool
	unserved func()
}

// claim marks the connection taken by the server; it reports false if the
// connection had already ended (and was counted) before.
func (t *halfOpenToken) claim() bool { return t == nil || !t.served.Swap(true) }

func (t *halfOpenToken) release() {
	if t != nil {
		t.once.Do(func() { t.h.leave(t.src) })
	}
}

func (h *halfOpen) leave(src string) {
	h.mu.Lock()
	if h.bySrc[src]--; h.bySrc[src] <= 0 {
		delete(h.bySrc, src)
	}
	h.mu.Unlock()
	h.n.Add(-1)
}

type halfOpenKey struct{}

// enter takes a token for a connection from src unless max are taken in
// total or perSrc by src already. The token is released when ctx (the
// connection's context) ends, whatever happens.
func (h *halfOpen) enter(ctx context.Context, src string, max, perSrc int64, unserved func()) (context.Context, bool) {
	h.mu.Lock()
	if h.bySrc == nil {
		h.bySrc = map[string]int{}
	}
	if int64(h.bySrc[src]) >= perSrc || h.n.Load() >= max {
		h.mu.Unlock()
		return ctx, false
	}
	h.bySrc[src]++
	h.n.Add(1)
	h.mu.Unlock()
	t := &halfOpenToken{h: h, src: src, unserved: unserved}
	context.AfterFunc(ctx, func() {
		if !t.served.Swap(true) && t.unserved != nil {
			t.unserved()
		}
		t.release()
	})
	return context.WithValue(ctx, halfOpenKey{}, t), true
}

func tokenOf(ctx context.Context) *halfOpenToken {
	t, _ := ctx.Value(halfOpenKey{}).(*halfOpenToken)
	return t
}
