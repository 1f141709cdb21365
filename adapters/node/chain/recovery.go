package chain

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
)

// Recovery (§8.1): the block log streamed back through the core, and its
// last block re-executed when the store did not commit it.

// Restore feeds block b, read from the block log and already committed to
// the store, to the job tracker (recovery, §8.1). Its events are stamped
// at, the time the driver recorded for the block (the zero time when it
// has none).
func (c *Core) Restore(b *chainlog.Block, at time.Time) error {
	if h := uint64(b.Height); h != c.Height()+1 {
		return fmt.Errorf("%w: block log block %d after %d", ErrBlockLog, h, c.Height())
	}
	for _, tx := range b.Txs {
		if r := tx.Reconfigure; r != nil {
			if err := c.x.RestoreReconfiguration(r); err != nil {
				return fmt.Errorf("%w: block %d: %w", ErrBlockLog, b.Height, err)
			}
		}
	}
	c.advance(b, at, nil)
	return nil
}

// RecoverTail re-executes b, the block log's last block, which the store
// has not committed (a crash between append and commit, §8.1); it must
// reproduce the logged outputs. Then it is restored like any other, its
// events stamped at.
func (c *Core) RecoverTail(b *chainlog.Block, at time.Time) error {
	out, err := c.x.Execute(b)
	if err != nil {
		c.x.Discard()
		return fmt.Errorf("%w: re-executing block %d: %w", ErrBlockLog, b.Height, err)
	}
	if d := blockexec.DiffOutput(uint64(b.Height), &b.Out, &out); d != nil {
		c.x.Discard()
		return fmt.Errorf("%w: block %d re-executes differently: %w", ErrBlockLog, b.Height, d)
	}
	if err := c.x.Commit(); err != nil {
		return err
	}
	c.advance(b, at, nil) // Commit applied its reconfiguration, if any
	return nil
}

// Resume starts an empty core at height base without blocks 1 … base: the
// block log was pruned below base+1, or the store came from a snapshot
// (docs/storage.md "Snapshots (node)"). The registry index is the store's
// ACTIVE_RUNNERS list (append-only, so the later blocks Restore feeds
// re-register nothing); the blocks from base+1 on follow through Restore.
// It must come before any other step.
func (c *Core) Resume(base uint64) error {
	if c.last != nil {
		return fmt.Errorf("%w: resume at %d after block %d", ErrOutOfOrder, base, c.Height())
	}
	if base == 0 {
		return nil
	}
	sh, ok := c.x.LastCommitted()
	if !ok || sh < base {
		return fmt.Errorf("%w: resume at %d over a store at %d", ErrBlockLog, base, sh)
	}
	view, err := c.x.Store().Registry().At(sh)
	if err != nil {
		return fmt.Errorf("%w: resume at %d: %w", ErrBlockLog, base, err)
	}
	for _, a := range view.ActiveRunners() {
		if _, ok := c.runnerIdx[a]; !ok {
			c.runnerIdx[a] = len(c.runnerIdx)
			c.runnerAt = append(c.runnerAt, a)
		}
	}
	c.last = &chainlog.Block{Height: chainlog.U64(base)}
	return nil
}

// SnapshotWindow is what a snapshot of the committed state needs beyond
// the store (docs/storage.md "Snapshots (node)"): start, the first height whose
// block it carries — at most recent blocks back, lowered to the inclusion
// height of every job still live, so that a core resumed at start−1
// rebuilds each one's tracking from its submission on — and the encoded
// specs of those jobs (the journal a restored validator starts from),
// ordered by job id.
// floor is the lowest height the caller still has a block of.
func (c *Core) SnapshotWindow(recent, floor uint64) (start uint64, specs [][]byte) {
	h := c.Height()
	start = 1
	if h > recent {
		start = h - recent + 1
	}
	ids := make([]cip11.Hash, 0, len(c.live))
	for _, id := range c.live {
		t := c.jobs[id]
		if t == nil || t.submitted == 0 {
			continue
		}
		start = min(start, t.submitted)
		if t.p != nil {
			ids = append(ids, id)
		}
	}
	// by job id: every validator writes the same bytes (the order of c.live
	// is this validator's admission order), so that peers serve one
	// snapshot, not one each
	slices.SortFunc(ids, func(a, b cip11.Hash) int { return bytes.Compare(a[:], b[:]) })
	for _, id := range ids {
		specs = append(specs, c.jobs[id].p)
	}
	return max(start, floor, 1), specs
}
