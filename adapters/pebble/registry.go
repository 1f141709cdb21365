package pebble

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"sync"

	pdb "github.com/cockroachdb/pebble/v2"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
)

// Registry write side -------------------------------------------------------

type registrar struct{ s *Store }

// latest is the newest version of addr, the batch's write included: the
// record and the height it was written at.
func (s *Store) latest(addr cip11.Address) (state.Runner, uint64, bool, error) {
	if r, ok := s.overlay[addr]; ok {
		return r, s.batchH, true, nil
	}
	if i, ok := findCur(s.reg, addr); ok {
		return s.reg[i].r, s.reg[i].at, true, nil
	}
	return state.Runner{}, 0, false, nil
}

func checkRunner(r state.Runner) error {
	if r.Health > state.Deregistered {
		return fmt.Errorf("pebble store: runner %s: health %d out of range", r.Address, r.Health)
	}
	return nil
}

// Register implements [store.Registrar].
func (g registrar) Register(r state.Runner) error {
	s := g.s
	if err := s.lockBatch(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := checkRunner(r); err != nil {
		return err
	}
	if _, _, ok, err := s.latest(r.Address); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%w: %s", state.ErrAlreadyRegistered, r.Address)
	}
	i := uint64(len(s.order))
	if err := errors.Join(
		s.set(runnerKey(r.Address, s.batchH), encodeRunner(r)),
		s.set(curKey(r.Address), encodeCur(s.batchH, r)),
		s.set(activeKey(i), cat(r.Address[:], be8(s.batchH))),
	); err != nil {
		return err
	}
	s.order = append(s.order, r.Address)
	s.orderAt = append(s.orderAt, s.batchH)
	s.overlay[r.Address], s.frozen = r, nil
	return nil
}

// Update implements [store.Registrar].
func (g registrar) Update(r state.Runner) error {
	s := g.s
	if err := s.lockBatch(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := checkRunner(r); err != nil {
		return err
	}
	_, at, ok, err := s.latest(r.Address)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s", state.ErrNotRegistered, r.Address)
	}
	if err := errors.Join(
		s.set(runnerKey(r.Address, s.batchH), encodeRunner(r)),
		s.set(curKey(r.Address), encodeCur(s.batchH, r)),
	); err != nil {
		return err
	}
	if at < s.batchH { // the old version is invisible from batchH on
		if err := s.set(gcKey(s.batchH, runnerKey(r.Address, at)), nil); err != nil {
			return err
		}
	}
	s.overlay[r.Address], s.frozen = r, nil
	return nil
}

// Latest implements [store.Registrar].
func (g registrar) Latest(addr cip11.Address) (state.Runner, bool, error) {
	s := g.s
	if err := s.lock(); err != nil {
		return state.Runner{}, false, err
	}
	defer s.mu.Unlock()
	r, _, ok, err := s.latest(addr)
	return r, ok, err
}

// SetReputationConfig changes ReputationConfig_at(h) from the batch height
// on (it is not part of store.Registrar; the node calls it when CIP-2
// governance changes the configuration).
func (s *Store) SetReputationConfig(cfg state.ReputationConfig) error {
	if err := s.lockBatch(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	// The newest version: this batch's, else the newest committed one
	// (s.cfgs mirrors the repcfg family; pruning never drops the newest).
	at, ok := uint64(0), false
	if s.overlayCfg != nil {
		at, ok = s.batchH, true
	} else if n := len(s.cfgs); n > 0 {
		at, ok = s.cfgs[n-1].at, true
	}
	if err := s.set(repCfgKey(s.batchH), encodeRepCfg(cfg)); err != nil {
		return err
	}
	if ok && at < s.batchH {
		if err := s.set(gcKey(s.batchH, repCfgKey(at)), nil); err != nil {
			return err
		}
	}
	s.overlayCfg, s.frozen = &cfg, nil
	return nil
}

// Registry views ------------------------------------------------------------

type registry struct{ s *Store }

// frozenOverlay is an immutable copy of the batch's registry writes.
type frozenOverlay struct {
	byAddr map[cip11.Address]state.Runner
	sorted []state.Runner
	cfg    *state.ReputationConfig
}

func (s *Store) freeze() *frozenOverlay {
	if s.frozen == nil {
		f := &frozenOverlay{byAddr: maps.Clone(s.overlay), cfg: s.overlayCfg}
		f.sorted = slices.SortedFunc(maps.Values(s.overlay), func(a, b state.Runner) int {
			return bytes.Compare(a.Address[:], b.Address[:])
		})
		s.frozen = f
	}
	return s.frozen
}

// At implements [state.Registry]. The view is a [*View].
func (g registry) At(h uint64) (state.RegistryView, error) {
	v, err := g.s.At(h)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// At returns the registry as stored at the end of block h: a committed
// height inside the window, or the open batch's height (showing its writes
// as of this call). Other heights wrap state.ErrUnknownHeight.
func (s *Store) At(h uint64) (*View, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	top, ok := s.committed, s.hasCommitted
	if s.open {
		top, ok = s.batchH, true
	}
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %d: nothing committed", state.ErrUnknownHeight, h)
	case h > top:
		return nil, fmt.Errorf("%w: %d is above %d", state.ErrUnknownHeight, h, top)
	case h < s.floor:
		return nil, fmt.Errorf("%w: %d is below the retention floor %d", state.ErrUnknownHeight, h, s.floor)
	}
	v := &View{s: s, snap: s.snapshot(), h: h}
	if h >= s.committed {
		v.cur, v.isCur = s.reg, true
	}
	if s.open && h == s.batchH {
		v.ov = s.freeze()
	}
	n := sort.Search(len(s.orderAt), func(i int) bool { return s.orderAt[i] > h })
	v.order = s.order[:n:n]
	if v.ov != nil && v.ov.cfg != nil {
		v.cfg = *v.ov.cfg
		return v, nil
	}
	cfg, err := s.cfgAt(h)
	if err != nil {
		return nil, err
	}
	v.cfg = cfg
	return v, nil
}

// View is an immutable registry view of one height; it implements
// [state.SortedView]. RegistryView has no error results, so a read failure
// (corruption, a closed store) makes Runner report false and ByAddress stop,
// and is reported by Err.
type View struct {
	s     *Store
	snap  *snapRef
	h     uint64
	order []cip11.Address
	cfg   state.ReputationConfig
	ov    *frozenOverlay // the batch's writes, for a view at the batch height
	cur   []curRec       // the committed registry, for a view at or above the committed height
	isCur bool

	errMu sync.Mutex
	err   error
}

var _ state.SortedView = (*View)(nil)

// Height implements [state.RegistryView].
func (v *View) Height() uint64 { return v.h }

// ActiveRunners implements [state.RegistryView]; the slice is shared.
func (v *View) ActiveRunners() []cip11.Address { return v.order }

// ReputationConfig implements [state.RegistryView].
func (v *View) ReputationConfig() state.ReputationConfig { return v.cfg }

// Err returns the first read error of the view, or nil.
func (v *View) Err() error {
	v.errMu.Lock()
	defer v.errMu.Unlock()
	return v.err
}

func (v *View) fail(err error) {
	v.errMu.Lock()
	defer v.errMu.Unlock()
	if v.err == nil {
		v.err = err
	}
}

func (v *View) open() bool {
	if v.s.closed.Load() {
		v.fail(store.ErrClosed)
		return false
	}
	return true
}

// Runner implements [state.RegistryView].
func (v *View) Runner(addr cip11.Address) (state.Runner, bool) {
	if v.ov != nil {
		if r, ok := v.ov.byAddr[addr]; ok {
			return r, true
		}
	}
	if !v.open() {
		return state.Runner{}, false
	}
	if v.isCur {
		if i, ok := findCur(v.cur, addr); ok {
			return v.cur[i].r, true
		}
		return state.Runner{}, false
	}
	var (
		r     state.Runner
		found bool
	)
	err := scan(v.snap.snap, runnerKey(addr, v.h), prefixEnd(runnerPrefix(addr)), func(k, val []byte) (bool, error) {
		if len(k) != runnerKeyLen {
			return false, fmt.Errorf("%w: runner key length %d", ErrCorrupt, len(k))
		}
		var err error
		r, err = decodeRunner(addr, val)
		found = err == nil
		return false, err
	})
	if err != nil {
		v.fail(err)
		return state.Runner{}, false
	}
	return r, found
}

// skipSteps is how many Next calls ByAddress spends skipping versions of
// one runner before it seeks past them instead.
const skipSteps = 100000

// ByAddress implements [state.SortedView]: one forward pass over the
// versioned runner keys of the view's snapshot, merged with the batch's
// writes for a view at the batch height.
func (v *View) ByAddress() iter.Seq[state.Runner] {
	return func(yield func(state.Runner) bool) {
		if !v.open() {
			return
		}
		var ov []state.Runner
		if v.ov != nil {
			ov = v.ov.sorted
		}
		// flush yields overlay records with addresses below a (all if a is nil).
		flush := func(a []byte) bool {
			for len(ov) > 0 && (a == nil || bytes.Compare(ov[0].Address[:], a) < 0) {
				if !yield(ov[0]) {
					return false
				}
				ov = ov[1:]
			}
			return true
		}
		if v.isCur {
			for _, c := range v.cur {
				if !flush(c.r.Address[:]) {
					return
				}
				r := c.r
				if len(ov) > 0 && ov[0].Address == r.Address {
					r, ov = ov[0], ov[1:]
				}
				if !yield(r) {
					return
				}
			}
			flush(nil)
			return
		}
		it, err := v.snap.snap.NewIter(&pdb.IterOptions{LowerBound: []byte(pfxRunner), UpperBound: prefixEnd([]byte(pfxRunner))})
		if err != nil {
			v.fail(wrapCorrupt(err))
			return
		}
		defer func() {
			if err := errors.Join(wrapCorrupt(it.Error()), wrapCorrupt(it.Close())); err != nil {
				v.fail(err)
			}
		}()
		var (
			done  cip11.Address // last address yielded or skipped
			have  bool
			steps int
		)
		seekKey := make([]byte, runnerKeyLen)
		copy(seekKey, pfxRunner)
		for ok := it.First(); ok; {
			k := it.Key()
			if len(k) != runnerKeyLen {
				v.fail(fmt.Errorf("%w: runner key length %d", ErrCorrupt, len(k)))
				return
			}
			a := k[len(pfxRunner) : len(pfxRunner)+20]
			if have && bytes.Equal(a, done[:]) { // an older version of a finished runner
				if steps++; steps <= skipSteps {
					ok = it.Next()
					continue
				}
				copy(seekKey[len(pfxRunner):], a)
				ok = it.SeekGE(prefixEnd(seekKey[:len(pfxRunner)+20]))
				steps = 0
				continue
			}
			if ^be8u(k[len(pfxRunner)+20:]) > v.h { // a version newer than the view
				if steps++; steps <= skipSteps {
					ok = it.Next()
					continue
				}
				copy(seekKey[len(pfxRunner):], a)
				copy(seekKey[len(pfxRunner)+20:], be8(^v.h))
				ok = it.SeekGE(seekKey)
				steps = 0
				continue
			}
			steps = 0
			copy(done[:], a)
			have = true
			if !flush(a) {
				return
			}
			if len(ov) > 0 && ov[0].Address == done {
				if !yield(ov[0]) {
					return
				}
				ov = ov[1:]
			} else {
				val, err := it.ValueAndErr()
				if err != nil {
					v.fail(wrapCorrupt(err))
					return
				}
				r, err := decodeRunner(done, val)
				if err != nil {
					v.fail(err)
					return
				}
				if !yield(r) {
					return
				}
			}
			ok = it.Next()
		}
		flush(nil)
	}
}
