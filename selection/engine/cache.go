package engine

import (
	"github.com/cip11/cip11/selection"
)

// snapshotCache is the non-consensus cache of expanded block-T candidates
// that §9.2 allows: filter-free snapshots by their height T, kept between
// blocks so the pending pass and timeout re-selections need not re-derive
// them from history. A snapshot of T reads the registry as committed at
// the end of T−1, which changes only if the chain is reorganised, and a
// reorganisation re-executes some height already executed; so the cache is
// emptied whenever a block's height does not exceed the last one executed.
// Results never depend on it: a miss re-derives. A nil cache is a no-op.
type snapshotCache struct {
	limit   int
	last    uint64
	entries map[uint64]*selection.Snapshot
	oldest  uint64 // no cached height is below it
}

func newSnapshotCache(limit int) *snapshotCache {
	return &snapshotCache{limit: limit, entries: make(map[uint64]*selection.Snapshot)}
}

// begin is called at the start of every block.
func (c *snapshotCache) begin(h uint64) {
	if c == nil {
		return
	}
	if h <= c.last {
		clear(c.entries)
	}
	c.last = h
}

func (c *snapshotCache) get(t uint64) *selection.Snapshot {
	if c == nil {
		return nil
	}
	return c.entries[t]
}

// put caches s, evicting the lowest heights beyond the limit.
func (c *snapshotCache) put(s *selection.Snapshot) {
	if c == nil {
		return
	}
	if len(c.entries) == 0 || s.T < c.oldest {
		c.oldest = s.T
	}
	c.entries[s.T] = s
	for len(c.entries) > c.limit {
		for ; c.entries[c.oldest] == nil; c.oldest++ {
		}
		delete(c.entries, c.oldest)
	}
}
