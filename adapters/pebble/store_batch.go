package pebble

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"weak"

	pdb "github.com/cockroachdb/pebble/v2"

	"github.com/cip11/cip11/store"
)

// One block's writes: the overlay, the batch that commits them, pruning and
// discard, and the low-level reads and writes under them.

func (s *Store) lock() error {
	if s == nil {
		return store.ErrClosed
	}
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return store.ErrClosed
	}
	return nil
}

// lockBatch is lock for a write: it also requires an open block batch
// (store.ErrNoBatch otherwise, with the lock released).
func (s *Store) lockBatch() error {
	if err := s.lock(); err != nil {
		return err
	}
	if !s.open {
		s.mu.Unlock()
		return store.ErrNoBatch
	}
	return nil
}

// Begin implements [store.Store].
func (s *Store) Begin(h uint64) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := s.health.Err(); err != nil {
		return err
	}
	switch {
	case s.open:
		return fmt.Errorf("%w: block %d", store.ErrBatchOpen, s.batchH)
	case s.hasCommitted && h <= s.committed:
		return fmt.Errorf("%w: %d ≤ %d", store.ErrHeightOrder, h, s.committed)
	}
	s.open, s.batchH = true, h
	return nil
}

// Commit implements [store.Store]: it prunes history outside the window,
// writes the height marker and commits the block's writes in one pebble
// batch.
func (s *Store) Commit() error {
	if err := s.lockBatch(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := s.health.Err(); err != nil {
		s.discard()
		return err
	}
	floor, err := s.prune()
	var b *pdb.Batch
	if err == nil {
		s.w = append(s.w, kvOp{k: []byte(keyHeight), v: encodeHeight(s.batchH, floor)})
		b, err = s.batchOf()
	}
	if err == nil {
		wo := pdb.NoSync
		if s.sync {
			wo = pdb.Sync
		}
		if s.commitHook != nil {
			s.commitHook(0)
		}
		err = b.Commit(wo)
		if s.commitHook != nil {
			s.commitHook(1)
		}
		if err != nil && !pdb.IsCorruptionError(err) {
			err = s.health.fail(err)
		}
	}
	if err != nil {
		if b != nil {
			_ = b.Close() // its writes are dropped
		}
		s.discard()
		return fmt.Errorf("pebble store: commit block: %w", wrapCorrupt(err))
	}
	closeErr := b.Close()
	s.open = false
	clear(s.w)
	s.w = s.w[:0]
	s.committed, s.hasCommitted, s.floor = s.batchH, true, floor
	if len(s.overlay) > 0 {
		s.reg = mergeCur(s.reg, s.freeze().sorted, s.batchH)
	}
	s.idxUndo = s.idxUndo[:0]
	s.applyMirrors()
	if c := s.overlayCfg; c != nil {
		s.cfgs = append(s.cfgs, cfgVersion{s.batchH, *c})
	}
	s.committedN = len(s.order)
	s.clearOverlay()
	s.cur = weak.Pointer[snapRef]{} // views from now on see the new state
	return closeErr
}

// kvOp is one write of the open block: a Set of k to v, or a Delete.
type kvOp struct {
	k, v []byte
	del  bool
}

// batchOf is the block's writes as one pebble batch. Each key family is
// written in key order, so the memtable insert of each key starts from its
// predecessor's position; the generic writes (registry, pending, MRU,
// pruning, the height marker) are stably sorted, a later write of a key
// replacing an earlier one.
func (s *Store) batchOf() (*pdb.Batch, error) {
	slices.SortStableFunc(s.w, func(a, b kvOp) int { return bytes.Compare(a.k, b.k) })
	ops, size := s.w[:0], s.jobBatchSize()
	for i, op := range s.w {
		if i+1 < len(s.w) && bytes.Equal(op.k, s.w[i+1].k) {
			continue // a later write of the key follows
		}
		ops = append(ops, op)
		size += len(op.k) + len(op.v) + 11 // kind, two varint lengths
	}
	clear(s.w[len(ops):])
	s.w = ops
	b := s.db.NewBatchWithSize(size + 12) // + the batch header
	err := s.jobBatch(b)
	for _, op := range ops {
		if err != nil {
			break
		}
		if op.del {
			err = b.Delete(op.k, nil)
		} else {
			err = b.Set(op.k, op.v, nil)
		}
	}
	if err != nil {
		return nil, errors.Join(err, b.Close())
	}
	return b, nil
}

// prune deletes, inside the batch, every registry version that no view at
// or above the new floor can see, and returns the floor.
func (s *Store) prune() (uint64, error) {
	floor := uint64(0)
	if s.batchH > s.keep {
		floor = s.batchH - s.keep
	}
	// Keep the block-S state of every live pending record (§9.2).
	hits, err := s.dueKeys([]byte(pendingDueDomain), prefixEnd([]byte(pendingDueDomain)))
	if err != nil {
		return 0, err
	}
	for _, h := range hits {
		if sub := be8u(h.key[len(pendingDueDomain)+16:]); sub < floor {
			floor = sub
		}
	}
	floor = max(floor, s.floor)
	// The batch's own gc keys are superseded at the batch height, above
	// the floor, so only committed ones can be due; and every gc key at or
	// below the old floor was deleted by the commit that set it.
	var dead [][]byte
	err = scan(s.db, cat([]byte(pfxGC), be8(s.floor)), prefixEnd(cat([]byte(pfxGC), be8(floor))), func(k, _ []byte) (bool, error) {
		dead = append(dead, append([]byte(nil), k...))
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	for _, k := range dead {
		if err := errors.Join(s.del(k[len(pfxGC)+8:]), s.del(k)); err != nil {
			return 0, err
		}
	}
	return floor, nil
}

// Discard implements [store.Store].
func (s *Store) Discard() {
	if s.lock() != nil {
		return
	}
	defer s.mu.Unlock()
	s.discard()
}

func (s *Store) discard() {
	if !s.open {
		return
	}
	s.open = false
	clear(s.w)
	s.w = s.w[:0]
	n := s.committedN
	s.order, s.orderAt = s.order[:n:n], s.orderAt[:n:n]
	s.undoJobIndex()
	s.clearOverlay()
}

func (s *Store) clearOverlay() {
	if s.dupIt != nil {
		_ = s.dupIt.Close() // a read-only iterator: nothing to lose
		s.dupIt = nil
	}
	clear(s.overlay)
	clear(s.jobOv)
	clear(s.jobW)
	s.jobW = s.jobW[:0]
	clear(s.pendOv)
	clear(s.mruOv)
	clear(s.anchorOv)
	s.dueOps = s.dueOps[:0]
	s.overlayCfg, s.frozen = nil, nil
}
