package pebble

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"

	pdb "github.com/cockroachdb/pebble/v2"

	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/store"
)

// Jobs ------------------------------------------------------------------------

type jobs struct{ s *Store }

func (s *Store) job(id [32]byte) (engine.JobRecord, bool, error) {
	var v []byte
	i, ok := s.jobOv[id]
	if ok {
		v = s.jobW[i].enc
	} else {
		var err error
		if v, ok, err = get(s.db, jobKey(id)); err != nil || !ok {
			return engine.JobRecord{}, false, err
		}
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

// idxUndo is one change of the in-memory live (due false) or deadline
// (due true) set by the open batch: the entry, whether it was present
// before, and the change's position in the block.
type idxUndo struct {
	due      bool
	had      bool
	seq      uint32
	deadline uint64
	id       [32]byte
}

func (s *Store) logIdx(u idxUndo) {
	u.seq = uint32(len(s.idxUndo))
	s.idxUndo = append(s.idxUndo, u)
}

// setLive makes id's live key present (add) or absent in the open block:
// the in-memory set changes now (one map operation: the size tells whether
// it changed), the key is written by Commit.
func (s *Store) setLive(id [32]byte, add bool) error {
	if !s.open {
		return store.ErrNoBatch
	}
	n := len(s.live)
	if add {
		s.live[id] = struct{}{}
	} else {
		delete(s.live, id)
	}
	if len(s.live) != n {
		s.logIdx(idxUndo{had: !add, id: id})
	}
	return nil
}

// setDue makes the deadline key (d, id) present (add) or absent, like
// setLive.
func (s *Store) setDue(d uint64, id [32]byte, add bool) error {
	if !s.open {
		return store.ErrNoBatch
	}
	ids := s.due[d]
	n := len(ids)
	if add {
		if ids == nil {
			ids = make(map[[32]byte]struct{})
			s.due[d] = ids
		}
		ids[id] = struct{}{}
	} else {
		delete(ids, id)
		if len(ids) == 0 {
			delete(s.due, d)
		}
	}
	if len(ids) != n {
		s.logIdx(idxUndo{due: true, had: !add, deadline: d, id: id})
	}
	return nil
}

// jobW is a job record written by the open block: its id and encoding.
type jobW struct {
	id  [32]byte
	enc []byte
}

// putJob records job id's new encoding in the open block (written by
// Commit).
func (s *Store) putJob(id [32]byte, enc []byte) {
	if i, ok := s.jobOv[id]; ok {
		s.jobW[i].enc = enc
		return
	}
	s.jobOv[id] = len(s.jobW)
	s.jobW = append(s.jobW, jobW{id, enc})
}

// jobBatch writes the open block's job records and live and deadline
// index keys to b, each family in key order (so each memtable insert
// starts near its predecessor); an index key is written in its final
// state, and not at all if the block left it as it was. It reorders jobW,
// so it is the block's last use of jobOv.
func (s *Store) jobBatch(b *pdb.Batch) error {
	k := make([]byte, 0, deadlineKeyLen)
	slices.SortFunc(s.jobW, func(a, b jobW) int { return bytes.Compare(a.id[:], b.id[:]) })
	for _, w := range s.jobW {
		k = appendJobKey(k[:0], w.id)
		if err := b.Set(k, w.enc, nil); err != nil {
			return err
		}
	}
	// Sorted copies, deadline keys then live keys (Discard after a failed
	// commit undoes idxUndo in its order), the changes of one key in block
	// order.
	s.idxSorted = s.idxSorted[:0]
	for _, u := range s.idxUndo {
		if u.due {
			s.idxSorted = append(s.idxSorted, u)
		}
	}
	nDue := len(s.idxSorted)
	for _, u := range s.idxUndo {
		if !u.due {
			s.idxSorted = append(s.idxSorted, u)
		}
	}
	byKey := func(a, b idxUndo) int {
		if c := cmp.Compare(a.deadline, b.deadline); c != 0 {
			return c
		}
		if c := bytes.Compare(a.id[:], b.id[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	}
	idx := s.idxSorted
	slices.SortFunc(idx[:nDue], byKey)
	slices.SortFunc(idx[nDue:], byKey) // deadline 0 in live entries
	for i := 0; i < len(idx); {
		first := idx[i]
		j := i + 1
		for j < len(idx) && idx[j].due == first.due && idx[j].deadline == first.deadline && idx[j].id == first.id {
			j++
		}
		present := !idx[j-1].had // the last change's result
		i = j
		if present == first.had {
			continue // back where the block found it
		}
		if first.due {
			k = appendDeadlineKey(k[:0], first.deadline, first.id)
		} else {
			k = appendLiveKey(k[:0], first.id)
		}
		var err error
		if present {
			err = b.Set(k, nil, nil)
		} else {
			err = b.Delete(k, nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// jobBatchSize bounds the bytes jobBatch adds to a batch.
func (s *Store) jobBatchSize() int {
	n := len(s.idxUndo) * (deadlineKeyLen + 11)
	for _, w := range s.jobW {
		n += jobKeyLen + len(w.enc) + 11
	}
	return n
}

// undoJobIndex reverts the open batch's changes of the live and deadline
// sets (Discard).
func (s *Store) undoJobIndex() {
	for i := len(s.idxUndo) - 1; i >= 0; i-- {
		u := s.idxUndo[i]
		switch {
		case !u.due && u.had:
			s.live[u.id] = struct{}{}
		case !u.due:
			delete(s.live, u.id)
		case u.had:
			if s.due[u.deadline] == nil {
				s.due[u.deadline] = make(map[[32]byte]struct{})
			}
			s.due[u.deadline][u.id] = struct{}{}
		default:
			delete(s.due[u.deadline], u.id)
			if len(s.due[u.deadline]) == 0 {
				delete(s.due, u.deadline)
			}
		}
	}
	s.idxUndo = s.idxUndo[:0]
}

// committedJob reports whether job key k is in the committed database. It
// seeks one iterator per block (the database does not change during a
// block) that reads the bloom filters of every level, L6 included, so the
// usual answer, absent, costs no data-block read.
func (s *Store) committedJob(k []byte) (bool, error) {
	if s.dupIt == nil {
		it, err := s.db.NewIter(&pdb.IterOptions{LowerBound: []byte(pfxJob), UpperBound: prefixEnd([]byte(pfxJob)), UseL6Filters: true})
		if err != nil {
			return false, wrapCorrupt(err)
		}
		s.dupIt = it
	}
	found := s.dupIt.SeekPrefixGE(k)
	return found, wrapCorrupt(s.dupIt.Error())
}

// Insert implements [engine.JobStore].
func (j jobs) Insert(r engine.JobRecord) error {
	s := j.s
	if err := s.lockBatch(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	// Every job record the batch wrote is in jobOv, so the duplicate check
	// is jobOv, then the committed database.
	if _, dup := s.jobOv[r.JobID]; dup {
		return fmt.Errorf("%w: %x", engine.ErrDuplicateJob, r.JobID)
	}
	k := jobKey(r.JobID)
	if dup, err := s.committedJob(k); err != nil {
		return err
	} else if dup {
		return fmt.Errorf("%w: %x", engine.ErrDuplicateJob, r.JobID)
	}
	s.putJob(r.JobID, r.Encode())
	var err error
	if r.Status == engine.StatusAssigned {
		err = s.setDue(r.DeadlineBlock, r.JobID, true)
	}
	if live(r) {
		err = errors.Join(err, s.setLive(r.JobID, true))
	}
	return err
}

// Update implements [engine.JobStore].
func (j jobs) Update(r engine.JobRecord) error {
	s := j.s
	if err := s.lockBatch(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	old, ok, err := s.job(r.JobID)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %x", engine.ErrUnknownJob, r.JobID)
	}
	s.putJob(r.JobID, r.Encode())
	// Index keys: delete the old ones the new record drops, write the new
	// ones the old record lacked (a live job that stays live keeps its key).
	var err2 error
	oldDue, newDue := old.Status == engine.StatusAssigned, r.Status == engine.StatusAssigned
	if oldDue && (!newDue || old.DeadlineBlock != r.DeadlineBlock) {
		err2 = errors.Join(err2, s.setDue(old.DeadlineBlock, old.JobID, false))
	}
	if newDue && (!oldDue || old.DeadlineBlock != r.DeadlineBlock) {
		err2 = errors.Join(err2, s.setDue(r.DeadlineBlock, r.JobID, true))
	}
	if wasLive, isLive := live(old), live(r); wasLive != isLive {
		err2 = errors.Join(err2, s.setLive(r.JobID, isLive))
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
			due = append(due, dueEntry{d, id})
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
	out := make([][32]byte, 0, len(s.live))
	for id := range s.live {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	return out, nil
}

// dueEntry is a key of the deadline family.
type dueEntry struct {
	deadline uint64
	id       [32]byte
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

// dueOp is one change of the due-round index by the open batch: its key
// added (a Put) or removed (a Delete).
type dueOp struct {
	key string
	add bool
}

// loadMirrors reads the due-round index and the mru_key records into
// memory (Open).
func (s *Store) loadMirrors() error {
	err := scan(s.db, []byte(pendingDueDomain), prefixEnd([]byte(pendingDueDomain)), func(k, _ []byte) (bool, error) {
		if len(k) != dueKeyLen {
			return false, fmt.Errorf("%w: due-round key length %d", ErrCorrupt, len(k))
		}
		s.dueIdx = append(s.dueIdx, string(k)) // scan order: ascending
		return true, nil
	})
	if err != nil {
		return err
	}
	return scan(s.db, []byte(mru.KeyPrefix), prefixEnd([]byte(mru.KeyPrefix)), func(k, v []byte) (bool, error) {
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
		s.mruS = append(s.mruS, mruEntry([mru.KeyLen]byte(k), r)) // scan order: key order
		return true, nil
	})
}

// applyMirrors moves the committed batch's due-round index changes and
// mru_key records into the mirrors (Commit, after the pebble commit).
func (s *Store) applyMirrors() {
	for _, o := range s.dueOps {
		i, found := slices.BinarySearch(s.dueIdx, o.key)
		switch {
		case o.add && !found:
			s.dueIdx = slices.Insert(s.dueIdx, i, o.key)
		case !o.add && found:
			s.dueIdx = slices.Delete(s.dueIdx, i, i+1)
		}
	}
	for k, r := range s.mruOv {
		e := mruEntry(k, r)
		if i, ok := slices.BinarySearchFunc(s.mruS, e, cmpMRU); ok {
			s.mruS[i] = e
		} else {
			s.mruS = slices.Insert(s.mruS, i, e)
		}
	}
}

// Pending (§9.2) ----------------------------------------------------------------
