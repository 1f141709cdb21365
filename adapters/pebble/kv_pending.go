package pebble

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/presence/modea"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/store"
)

// The pending-selection store (engine.PendingStore) and the MRU and Mode-A
// anchor records.

type pending struct{ s *Store }

// pendOv is the open batch's write of a job's pending record: the record
// Put stored (live), or the Delete of the stored one.
type pendOv struct {
	rec  engine.PendingSelectionV1
	live bool
}

func (s *Store) pendingGet(id [32]byte) (engine.PendingSelectionV1, bool, error) {
	if o, ok := s.pendOv[id]; ok {
		return o.rec, o.live, nil
	}
	k := engine.PendingByJobKey(id)
	v, ok, err := get(s.db, k[:])
	if err != nil || !ok {
		return engine.PendingSelectionV1{}, false, err
	}
	r, err := engine.DecodePending(v)
	if err == nil && r.JobID != id {
		err = fmt.Errorf("record names job %x", r.JobID)
	}
	if err != nil {
		return engine.PendingSelectionV1{}, false, fmt.Errorf("%w: pending_by_job_key %x: %w", ErrCorrupt, k, err)
	}
	return r, true, nil
}

// Get implements [engine.PendingStore].
func (p pending) Get(id [32]byte) (engine.PendingSelectionV1, bool, error) {
	if err := p.s.lock(); err != nil {
		return engine.PendingSelectionV1{}, false, err
	}
	defer p.s.mu.Unlock()
	return p.s.pendingGet(id)
}

// Put implements [engine.PendingStore]: both §9.2 keys in the block batch.
func (p pending) Put(r engine.PendingSelectionV1) error {
	s := p.s
	if err := s.lockBatch(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := r.Validate(); err != nil {
		return err
	}
	k := engine.PendingByJobKey(r.JobID)
	if o, ok := s.pendOv[r.JobID]; ok {
		if o.live {
			return fmt.Errorf("%w: job %x", engine.ErrPendingExists, r.JobID)
		}
	} else if _, ok, err := get(s.db, k[:]); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%w: job %x", engine.ErrPendingExists, r.JobID)
	}
	enc := r.Encode()
	if enc == nil {
		return fmt.Errorf("pebble store: pending record of job %x does not encode", r.JobID)
	}
	dk := engine.PendingDueRoundKey(r)
	if err := errors.Join(s.set(k[:], enc), s.set(dk, nil)); err != nil {
		return err
	}
	s.pendOv[r.JobID] = pendOv{r, true}
	s.dueOps = append(s.dueOps, dueOp{key: string(dk), add: true})
	return nil
}

// Delete implements [engine.PendingStore]: the consumption marker. The due
// key is derived from the stored record.
func (p pending) Delete(r engine.PendingSelectionV1) error {
	s := p.s
	if err := s.lockBatch(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	stored, ok, err := s.pendingGet(r.JobID)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: job %x", engine.ErrNoLivePending, r.JobID)
	}
	k, dk := engine.PendingByJobKey(r.JobID), engine.PendingDueRoundKey(stored)
	if err := errors.Join(s.del(k[:]), s.del(dk)); err != nil {
		return err
	}
	s.pendOv[r.JobID] = pendOv{}
	s.dueOps = append(s.dueOps, dueOp{key: string(dk)})
	return nil
}

// DueAt implements [engine.PendingStore] by a prefix scan.
func (p pending) DueAt(epoch, view uint64) ([]engine.PendingSelectionV1, error) {
	prefix := engine.DueRoundPrefix(epoch, view)
	return p.due(prefix, prefixEnd(prefix))
}

// DueBefore implements [engine.PendingStore] by a range scan from the
// index domain up to DueRoundPrefix(epoch, view).
func (p pending) DueBefore(epoch, view uint64) ([]engine.PendingSelectionV1, error) {
	return p.due([]byte(pendingDueDomain), engine.DueRoundPrefix(epoch, view))
}

// PendingRecords implements [store.Store]: the whole due-round index in
// key order.
func (s *Store) PendingRecords() ([]engine.PendingSelectionV1, error) {
	return pending{s}.due([]byte(pendingDueDomain), prefixEnd([]byte(pendingDueDomain)))
}

// dueHit is a due-round key in a range; rec is the record if the open
// batch wrote it (nil: a committed key).
type dueHit struct {
	key []byte
	rec *engine.PendingSelectionV1
}

// dueKeys is the due-round index in [lower, upper) with the open batch's
// writes, in key order: the committed keys of jobs the batch did not touch,
// and the keys of the records the batch put.
func (s *Store) dueKeys(lower, upper []byte) ([]dueHit, error) {
	var hits []dueHit
	lo, hi := string(lower), string(upper)
	for i, _ := slices.BinarySearch(s.dueIdx, lo); i < len(s.dueIdx) && (upper == nil || s.dueIdx[i] < hi); i++ {
		k := s.dueIdx[i] // the committed index (mirror); the batch's writes follow
		var id [32]byte
		copy(id[:], k[len(k)-32:])
		if _, ok := s.pendOv[id]; !ok {
			hits = append(hits, dueHit{key: []byte(k)})
		}
	}
	added := false
	for _, o := range s.pendOv {
		if !o.live {
			continue
		}
		if k := engine.PendingDueRoundKey(o.rec); bytes.Compare(k, lower) >= 0 && (upper == nil || bytes.Compare(k, upper) < 0) {
			hits = append(hits, dueHit{key: k, rec: &o.rec})
			added = true
		}
	}
	if added {
		slices.SortFunc(hits, func(a, b dueHit) int { return bytes.Compare(a.key, b.key) })
	}
	return hits, nil
}

func (p pending) due(lower, upper []byte) ([]engine.PendingSelectionV1, error) {
	s := p.s
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	hits, err := s.dueKeys(lower, upper)
	if err != nil {
		return nil, err
	}
	var out []engine.PendingSelectionV1
	for _, h := range hits {
		if h.rec != nil {
			out = append(out, *h.rec)
			continue
		}
		id := [32]byte(h.key[len(h.key)-32:])
		r, ok, err := s.pendingGet(id)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			return nil, fmt.Errorf("%w: %w: due index names job %x", ErrCorrupt, engine.ErrNoLivePending, id)
		case !bytes.Equal(engine.PendingDueRoundKey(r), h.key):
			return nil, fmt.Errorf("%w: due index key of job %x does not match its record", ErrCorrupt, id)
		}
		out = append(out, r)
	}
	return out, nil
}

// MRU (§9.4, D15) -------------------------------------------------------------

type mruStore struct{ s *Store }

// Get implements [mru.Reader].
func (m mruStore) Get(submitter cip11.Address, kind mru.JobKind) (mru.Record, bool, error) {
	s := m.s
	if err := s.lock(); err != nil {
		return mru.Record{}, false, err
	}
	defer s.mu.Unlock()
	k := mru.Key(submitter, kind)
	if r, ok := s.mruOv[k]; ok {
		return r, true, nil
	}
	if i, ok := slices.BinarySearchFunc(s.mruS, store.MRUEntry{Submitter: submitter, Kind: kind}, cmpMRU); ok {
		return s.mruS[i].Record, true, nil
	}
	return mru.Record{}, false, nil
}

// Put implements [mru.Writer].
func (m mruStore) Put(submitter cip11.Address, kind mru.JobKind, r mru.Record) error {
	s := m.s
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if !kind.Valid() {
		return fmt.Errorf("pebble store: mru job_kind %d out of range", kind)
	}
	k, v := mru.Key(submitter, kind), r.Encode()
	if err := s.set(k[:], v[:]); err != nil {
		return err
	}
	s.mruOv[k] = r
	return nil
}

// MRURecords implements [store.Store].
func (s *Store) MRURecords() ([]store.MRUEntry, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if len(s.mruOv) == 0 {
		return slices.Clone(s.mruS), nil
	}
	// The committed records (mirror, in key order) merged with the
	// batch's, which replace them.
	ov := make([]store.MRUEntry, 0, len(s.mruOv))
	for k, r := range s.mruOv {
		ov = append(ov, mruEntry(k, r))
	}
	slices.SortFunc(ov, cmpMRU)
	out := make([]store.MRUEntry, 0, len(s.mruS)+len(ov))
	i := 0
	for _, e := range s.mruS {
		for i < len(ov) && cmpMRU(ov[i], e) < 0 {
			out, i = append(out, ov[i]), i+1
		}
		if i < len(ov) && cmpMRU(ov[i], e) == 0 {
			continue // the batch's record follows
		}
		out = append(out, e)
	}
	return append(out, ov[i:]...), nil
}

func mruEntry(k [mru.KeyLen]byte, r mru.Record) store.MRUEntry {
	return store.MRUEntry{Submitter: cip11.Address(k[len(mru.KeyPrefix):]), Kind: mru.JobKind(k[mru.KeyLen-1]), Record: r}
}

// cmpMRU orders MRU entries as their mru_keys: by submitter, then kind.
func cmpMRU(a, b store.MRUEntry) int {
	if c := bytes.Compare(a.Submitter[:], b.Submitter[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.Kind, b.Kind)
}

// Mode A (§8.3) ---------------------------------------------------------------

var _ store.ModeAState = (*Store)(nil)

func anchorKey(runner cip11.Address) []byte { return cat([]byte(pfxAnchor), runner[:]) }

func decodeAnchor(k, v []byte) (modea.Record, error) {
	if len(v) != anchorValueLen {
		return modea.Record{}, fmt.Errorf("%w: presence anchor %x: value of %d bytes", ErrCorrupt, k, len(v))
	}
	return modea.Record{Anchor: binary.BigEndian.Uint64(v), ProvenUntil: binary.BigEndian.Uint64(v[8:])}, nil
}

// PresenceAnchor implements [modea.Reader] (§8.3), including the open
// batch's writes.
func (s *Store) PresenceAnchor(runner cip11.Address) (modea.Record, bool, error) {
	if err := s.lock(); err != nil {
		return modea.Record{}, false, err
	}
	defer s.mu.Unlock()
	if r, ok := s.anchorOv[runner]; ok {
		return r, true, nil
	}
	k := anchorKey(runner)
	v, ok, err := get(s.db, k)
	if err != nil || !ok {
		return modea.Record{}, false, err
	}
	r, err := decodeAnchor(k, v)
	return r, err == nil, err
}

// PutPresenceAnchor implements [modea.Store] (§8.3): the record is written
// into the open batch.
func (s *Store) PutPresenceAnchor(runner cip11.Address, rec modea.Record) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	v := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, anchorValueLen), rec.Anchor), rec.ProvenUntil)
	if err := s.set(anchorKey(runner), v); err != nil {
		return err
	}
	s.anchorOv[runner] = rec
	return nil
}

// PresenceAnchors implements [store.ModeAState]: every record, ascending
// by runner address, including the open batch's writes.
func (s *Store) PresenceAnchors() ([]store.ModeAEntry, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.ModeAEntry
	err := scan(s.db, []byte(pfxAnchor), prefixEnd([]byte(pfxAnchor)), func(k, v []byte) (bool, error) {
		if len(k) != anchorKeyLen {
			return false, fmt.Errorf("%w: presence anchor key %x", ErrCorrupt, k)
		}
		a := cip11.Address(k[len(pfxAnchor):])
		if _, ok := s.anchorOv[a]; ok {
			return true, nil // the batch's record follows
		}
		r, err := decodeAnchor(k, v)
		if err != nil {
			return false, err
		}
		out = append(out, store.ModeAEntry{Runner: a, Record: r})
		return true, nil
	})
	if err != nil || len(s.anchorOv) == 0 {
		return out, err
	}
	for a, r := range s.anchorOv {
		out = append(out, store.ModeAEntry{Runner: a, Record: r})
	}
	slices.SortFunc(out, func(a, b store.ModeAEntry) int { return bytes.Compare(a.Runner[:], b.Runner[:]) })
	return out, nil
}
