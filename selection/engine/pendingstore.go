package engine

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/cip11/cip11"
)

// PendingStore holds live PendingSelectionV1 records under the two §9.2
// storage keys. A KV implementation stores the encoded record under
// PendingByJobKey and an entry under PendingDueRoundKey, and serves DueAt by
// a lexicographic prefix scan of DueRoundPrefix.
type PendingStore interface {
	// Get returns the live record for job_id (lookup by pending_by_job_key).
	Get(jobID [32]byte) (PendingSelectionV1, bool, error)
	// Put writes both keys atomically; a live record for the same job_id
	// wraps ErrPendingExists (§9.2: a second live pending record is invalid).
	Put(r PendingSelectionV1) error
	// Delete removes both keys atomically — the consumption marker (§9.2).
	Delete(r PendingSelectionV1) error
	// DueAt returns the live records whose seed round is (epoch, view), in
	// due-round key order (submitted_at, then job_id).
	DueAt(epoch, view uint64) ([]PendingSelectionV1, error)
	// DueBefore returns the live records whose seed round is below
	// Round(epoch, view), in due-round key order: a lexicographic range
	// from the index domain up to DueRoundPrefix(epoch, view).
	DueBefore(epoch, view uint64) ([]PendingSelectionV1, error)
}

// MemPendingStore is the in-memory [PendingStore]: a map by
// pending_by_job_key and a sorted slice of due-round keys.
type MemPendingStore struct {
	byJob map[cip11.Hash][]byte
	due   [][]byte // sorted due-round index keys
}

// NewMemPendingStore returns an empty store.
func NewMemPendingStore() *MemPendingStore {
	return &MemPendingStore{byJob: make(map[cip11.Hash][]byte)}
}

// Get implements [PendingStore].
func (m *MemPendingStore) Get(jobID [32]byte) (PendingSelectionV1, bool, error) {
	b, ok := m.byJob[PendingByJobKey(jobID)]
	if !ok {
		return PendingSelectionV1{}, false, nil
	}
	r, err := DecodePending(b)
	return r, err == nil, err
}

// Put implements [PendingStore].
func (m *MemPendingStore) Put(r PendingSelectionV1) error {
	k := PendingByJobKey(r.JobID)
	if _, ok := m.byJob[k]; ok {
		return fmt.Errorf("%w: job %x", ErrPendingExists, r.JobID)
	}
	m.byJob[k] = r.Encode()
	dk := PendingDueRoundKey(r)
	i, _ := slices.BinarySearchFunc(m.due, dk, bytes.Compare)
	m.due = slices.Insert(m.due, i, dk)
	return nil
}

// Delete implements [PendingStore].
func (m *MemPendingStore) Delete(r PendingSelectionV1) error {
	k := PendingByJobKey(r.JobID)
	if _, ok := m.byJob[k]; !ok {
		return fmt.Errorf("%w: job %x", ErrNoLivePending, r.JobID)
	}
	delete(m.byJob, k)
	if i, ok := slices.BinarySearchFunc(m.due, PendingDueRoundKey(r), bytes.Compare); ok {
		m.due = slices.Delete(m.due, i, i+1)
	}
	return nil
}

// DueAt implements [PendingStore] by a prefix range of the sorted index.
func (m *MemPendingStore) DueAt(epoch, view uint64) ([]PendingSelectionV1, error) {
	prefix := DueRoundPrefix(epoch, view)
	i, _ := slices.BinarySearchFunc(m.due, prefix, bytes.Compare)
	j := i
	for j < len(m.due) && bytes.HasPrefix(m.due[j], prefix) {
		j++
	}
	return m.records(m.due[i:j])
}

// DueBefore implements [PendingStore] by a range of the sorted index.
func (m *MemPendingStore) DueBefore(epoch, view uint64) ([]PendingSelectionV1, error) {
	j, _ := slices.BinarySearchFunc(m.due, DueRoundPrefix(epoch, view), bytes.Compare)
	return m.records(m.due[:j])
}

func (m *MemPendingStore) records(keys [][]byte) ([]PendingSelectionV1, error) {
	var out []PendingSelectionV1
	for _, k := range keys {
		var id [32]byte
		copy(id[:], k[len(k)-32:])
		r, ok, err := m.Get(id)
		if err != nil || !ok {
			return nil, fmt.Errorf("%w: due index names job %x", ErrNoLivePending, id)
		}
		out = append(out, r)
	}
	return out, nil
}

// Len returns the number of live records.
func (m *MemPendingStore) Len() int { return len(m.byJob) }

// DueKeys returns the due-round index in key order (for state digests).
func (m *MemPendingStore) DueKeys() [][]byte { return m.due }
