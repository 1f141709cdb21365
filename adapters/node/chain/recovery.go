package chain

import (
	"fmt"
	"time"

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
