package node

import (
	"sync"
	"sync/atomic"
)

// mailbox is a queue that never blocks its producers (quic-go's hot-path
// enqueue): transport callbacks documented as "must not block" post here
// and the validator's loop drains it. Its lock guards only the slice: it is
// never held across I/O. Past max entries a post is dropped and counted.
type mailbox[T any] struct {
	mu      sync.Mutex
	q       []T
	max     int
	ready   chan struct{} // one pending wake-up
	dropped atomic.Int64
}

// Queue bounds: a full queue drops and counts (cip11_queue_dropped_total).
const (
	// maxInbox bounds the transport's events waiting for the loop.
	maxInbox = 1 << 16
	// maxSendBacklog bounds the committed blocks whose pushes wait for the
	// sender: a backlog that long means the transport is stuck, and a
	// dropped block's runners are re-selected at its deadline (§11.2).
	maxSendBacklog = 1024
)

func newMailbox[T any](max int) *mailbox[T] {
	return &mailbox[T]{max: max, ready: make(chan struct{}, 1)}
}

// post enqueues e; it reports false (and counts) when the queue is full.
func (m *mailbox[T]) post(e T) bool {
	m.mu.Lock()
	if len(m.q) >= m.max {
		m.mu.Unlock()
		m.dropped.Add(1)
		return false
	}
	m.q = append(m.q, e)
	m.mu.Unlock()
	select {
	case m.ready <- struct{}{}:
	default:
	}
	return true
}

// drops is how many posts were dropped.
func (m *mailbox[T]) drops() int64 { return m.dropped.Load() }

// take returns everything queued (nil if empty).
func (m *mailbox[T]) take() []T {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.q
	m.q = nil
	return q
}
