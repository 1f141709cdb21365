package pebble

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/store"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/selection/engine"
)

// Jobs ------------------------------------------------------------------------

type jobs struct{ s *Store }

func (s *Store) job(id [32]byte) (engine.JobRecord, bool, error) {
	v, ok, err := get(s.reader(), jobKey(id))
	if err != nil || !ok {
		return engine.JobRecord{}, false, err
	}
	r, err := engine.DecodeJobRecord(v)
	if err == nil && r.JobID != id {
		err = fmt.Errorf("%w: record names job %x", engine.ErrJobRecord, r.JobID)
	}
	if err != nil {
		return engine.JobRecord{}, false, fmt.Errorf("%w: job %x: %w", ErrCorrupt, id, err)
	}
	return r, true, nil
}

// Job implements [engine.JobStore].
func (j jobs) Job(id [32]byte) (engine.JobRecord, bool, error) {
	if err := j.s.lock(); err != nil {
		return engine.JobRecord{}, false, err
	}
	defer j.s.mu.Unlock()
	return j.s.job(id)
}

func live(r engine.JobRecord) bool {
	return r.Status == engine.StatusPending || r.Status == engine.StatusAssigned
}

// index adds (add) or removes r's deadline and live entries.
func (s *Store) indexJob(r engine.JobRecord, add bool) error {
	op := func(k []byte) error {
		if add {
			return s.set(k, nil)
		}
		return s.del(k)
	}
	var err error
	if r.Status == engine.StatusAssigned {
		err = op(deadlineKey(r.DeadlineBlock, r.JobID))
		s.dueOv[dueEntry{r.DeadlineBlock, r.JobID}] = add
	}
	if live(r) {
		err = errors.Join(err, op(liveKey(r.JobID)))
		s.liveOv[r.JobID] = add
	}
	return err
}

// Insert implements [engine.JobStore].
func (j jobs) Insert(r engine.JobRecord) error {
	s := j.s
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.batch == nil {
		return store.ErrNoBatch
	}
	// The batch's own job writes are in batchJobs, so the duplicate check
	// reads the committed database directly (a plain point read, cheaper
	// than one merged with the indexed batch).
	if _, dup := s.batchJobs[r.JobID]; dup {
		return fmt.Errorf("%w: %x", engine.ErrDuplicateJob, r.JobID)
	}
	if _, ok, err := get(s.db, jobKey(r.JobID)); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%w: %x", engine.ErrDuplicateJob, r.JobID)
	}
	if err := s.set(jobKey(r.JobID), r.Encode()); err != nil {
		return err
	}
	s.batchJobs[r.JobID] = struct{}{}
	return s.indexJob(r, true)
}

// Update implements [engine.JobStore].
func (j jobs) Update(r engine.JobRecord) error {
	s := j.s
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.batch == nil {
		return store.ErrNoBatch
	}
	old, ok, err := s.job(r.JobID)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %x", engine.ErrUnknownJob, r.JobID)
	}
	if err := s.set(jobKey(r.JobID), r.Encode()); err != nil {
		return err
	}
	// Index keys: delete the old ones the new record drops, write the new
	// ones the old record lacked (a live job that stays live keeps its key).
	var err2 error
	oldDue, newDue := old.Status == engine.StatusAssigned, r.Status == engine.StatusAssigned
	if oldDue && (!newDue || old.DeadlineBlock != r.DeadlineBlock) {
		err2 = errors.Join(err2, s.del(deadlineKey(old.DeadlineBlock, old.JobID)))
		s.dueOv[dueEntry{old.DeadlineBlock, old.JobID}] = false
	}
	if newDue && (!oldDue || old.DeadlineBlock != r.DeadlineBlock) {
		err2 = errors.Join(err2, s.set(deadlineKey(r.DeadlineBlock, r.JobID), nil))
		s.dueOv[dueEntry{r.DeadlineBlock, r.JobID}] = true
	}
	if wasLive, isLive := live(old), live(r); wasLive != isLive {
		if isLive {
			err2 = errors.Join(err2, s.set(liveKey(r.JobID), nil))
		} else {
			err2 = errors.Join(err2, s.del(liveKey(r.JobID)))
		}
		s.liveOv[r.JobID] = isLive
	}
	return err2
}

// DueBefore implements [engine.JobStore].
func (j jobs) DueBefore(h uint64) ([][32]byte, error) {
	s := j.s
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var due []dueEntry
	for d, ids := range s.due { // distinct deadlines: about the timeout window
		if d >= h {
			continue
		}
		for id := range ids {
			if add, ok := s.dueOv[dueEntry{d, id}]; !ok || add {
				due = append(due, dueEntry{d, id})
			}
		}
	}
	for e, add := range s.dueOv {
		if _, ok := s.due[e.deadline][e.id]; add && !ok && e.deadline < h {
			due = append(due, e)
		}
	}
	slices.SortFunc(due, func(a, b dueEntry) int {
		if c := cmp.Compare(a.deadline, b.deadline); c != 0 {
			return c
		}
		return bytes.Compare(a.id[:], b.id[:])
	})
	out := make([][32]byte, len(due))
	for i, e := range due {
		out[i] = e.id
	}
	return out, nil
}

// LiveJobs implements [store.Store].
func (s *Store) LiveJobs() ([][32]byte, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([][32]byte, 0, len(s.live)+len(s.liveOv))
	for id := range s.live {
		if add, ok := s.liveOv[id]; !ok || add {
			out = append(out, id)
		}
	}
	for id, add := range s.liveOv {
		if _, ok := s.live[id]; add && !ok {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	return out, nil
}

// dueEntry is a key of the deadline family.
type dueEntry struct {
	deadline uint64
	id       [32]byte
}

// applyJobIndex moves the batch's live and deadline index writes into the
// committed in-memory sets (after a successful commit).
func (s *Store) applyJobIndex() {
	for id, add := range s.liveOv {
		if add {
			s.live[id] = struct{}{}
		} else {
			delete(s.live, id)
		}
	}
	for e, add := range s.dueOv {
		ids := s.due[e.deadline]
		switch {
		case add && ids == nil:
			s.due[e.deadline] = map[[32]byte]struct{}{e.id: {}}
		case add:
			ids[e.id] = struct{}{}
		default:
			delete(ids, e.id)
			if len(ids) == 0 {
				delete(s.due, e.deadline)
			}
		}
	}
}

// loadJobIndex reads the live and deadline families into memory (Open).
func (s *Store) loadJobIndex() error {
	err := scan(s.db, []byte(pfxLive), prefixEnd([]byte(pfxLive)), func(k, _ []byte) (bool, error) {
		if len(k) != liveKeyLen {
			return false, fmt.Errorf("%w: live-job key length %d", ErrCorrupt, len(k))
		}
		s.live[[32]byte(k[len(pfxLive):])] = struct{}{}
		return true, nil
	})
	if err != nil {
		return err
	}
	return scan(s.db, []byte(pfxDeadline), prefixEnd([]byte(pfxDeadline)), func(k, _ []byte) (bool, error) {
		if len(k) != deadlineKeyLen {
			return false, fmt.Errorf("%w: deadline key length %d", ErrCorrupt, len(k))
		}
		d, id := be8u(k[len(pfxDeadline):]), [32]byte(k[len(pfxDeadline)+8:])
		if s.due[d] == nil {
			s.due[d] = make(map[[32]byte]struct{})
		}
		s.due[d][id] = struct{}{}
		return true, nil
	})
}

// Pending (§9.2) ----------------------------------------------------------------

type pending struct{ s *Store }

func (s *Store) pendingGet(id [32]byte) (engine.PendingSelectionV1, bool, error) {
	k := engine.PendingByJobKey(id)
	v, ok, err := get(s.reader(), k[:])
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
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.batch == nil {
		return store.ErrNoBatch
	}
	if err := r.Validate(); err != nil {
		return err
	}
	k := engine.PendingByJobKey(r.JobID)
	if _, ok, err := get(s.batch, k[:]); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("%w: job %x", engine.ErrPendingExists, r.JobID)
	}
	enc := r.Encode()
	if enc == nil {
		return fmt.Errorf("pebble store: pending record of job %x does not encode", r.JobID)
	}
	return errors.Join(s.set(k[:], enc), s.set(engine.PendingDueRoundKey(r), nil))
}

// Delete implements [engine.PendingStore]: the consumption marker. The due
// key is derived from the stored record.
func (p pending) Delete(r engine.PendingSelectionV1) error {
	s := p.s
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.batch == nil {
		return store.ErrNoBatch
	}
	stored, ok, err := s.pendingGet(r.JobID)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: job %x", engine.ErrNoLivePending, r.JobID)
	}
	k := engine.PendingByJobKey(r.JobID)
	return errors.Join(s.del(k[:]), s.del(engine.PendingDueRoundKey(stored)))
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

func (p pending) due(lower, upper []byte) ([]engine.PendingSelectionV1, error) {
	s := p.s
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var keys [][]byte
	err := scan(s.reader(), lower, upper, func(k, _ []byte) (bool, error) {
		if len(k) != dueKeyLen {
			return false, fmt.Errorf("%w: due-round key length %d", ErrCorrupt, len(k))
		}
		keys = append(keys, append([]byte(nil), k...))
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	var out []engine.PendingSelectionV1
	for _, k := range keys {
		id := [32]byte(k[len(k)-32:])
		r, ok, err := s.pendingGet(id)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			return nil, fmt.Errorf("%w: %w: due index names job %x", ErrCorrupt, engine.ErrNoLivePending, id)
		case !bytes.Equal(engine.PendingDueRoundKey(r), k):
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
	v, ok, err := get(s.reader(), k[:])
	if err != nil || !ok {
		return mru.Record{}, false, err
	}
	r, err := mru.DecodeRecord(v)
	if err != nil {
		return mru.Record{}, false, fmt.Errorf("%w: mru_key %x: %w", ErrCorrupt, k, err)
	}
	return r, true, nil
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
	return s.set(k[:], v[:])
}

// MRURecords implements [store.Store].
func (s *Store) MRURecords() ([]store.MRUEntry, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.MRUEntry
	err := scan(s.reader(), []byte(mru.KeyPrefix), prefixEnd([]byte(mru.KeyPrefix)), func(k, v []byte) (bool, error) {
		if len(k) != mru.KeyLen {
			return true, nil // not a D15 key: a 32-byte pending hash can share the prefix only by chance
		}
		kind := mru.JobKind(k[mru.KeyLen-1])
		if !kind.Valid() {
			return false, fmt.Errorf("%w: mru_key %x: job_kind %d", ErrCorrupt, k, kind)
		}
		r, err := mru.DecodeRecord(v)
		if err != nil {
			return false, fmt.Errorf("%w: mru_key %x: %w", ErrCorrupt, k, err)
		}
		out = append(out, store.MRUEntry{Submitter: cip11.Address(k[len(mru.KeyPrefix):]), Kind: kind, Record: r})
		return true, nil
	})
	return out, err
}
