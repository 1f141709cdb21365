package selection

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/cip11/cip11/seed"
)

// MemJobStore is the in-memory [JobStore].
type MemJobStore struct{ jobs map[[32]byte]Job }

// NewMemJobStore returns an empty store.
func NewMemJobStore() *MemJobStore { return &MemJobStore{jobs: make(map[[32]byte]Job)} }

// Job implements [JobStore].
func (m *MemJobStore) Job(id [32]byte) (Job, bool, error) {
	j, ok := m.jobs[id]
	return j, ok, nil
}

// PutJob implements [JobStore]; a second submit of one job_id wraps ErrDuplicateJob.
func (m *MemJobStore) PutJob(j Job) error {
	if _, ok := m.jobs[j.JobID]; ok {
		return fmt.Errorf("%w: %x", ErrDuplicateJob, j.JobID)
	}
	m.jobs[j.JobID] = j
	return nil
}

// FinalizedUpTo is a [Finality] under which every height ≤ its value is
// finalized and applied (single-validator chains finalize immediately).
type FinalizedUpTo struct{ Height uint64 }

// Finalized implements [Finality].
func (f *FinalizedUpTo) Finalized(h uint64) bool { return h <= f.Height }

// MemThresholdKeys maps epochs to threshold public keys (96-byte compressed
// G2) under one consensus namespace. Verifiers are built once per epoch.
type MemThresholdKeys struct {
	Namespace []byte
	keys      map[uint64]*seed.Verifier
}

// NewMemThresholdKeys returns an empty key map for namespace ns.
func NewMemThresholdKeys(ns []byte) *MemThresholdKeys {
	return &MemThresholdKeys{Namespace: bytes.Clone(ns), keys: make(map[uint64]*seed.Verifier)}
}

// Set installs epoch's threshold public key.
func (m *MemThresholdKeys) Set(epoch uint64, publicKey []byte) error {
	v, err := seed.NewVerifier(publicKey, m.Namespace)
	if err != nil {
		return err
	}
	m.keys[epoch] = v
	return nil
}

// Epochs lists the epochs with keys, ascending.
func (m *MemThresholdKeys) Epochs() []uint64 {
	out := make([]uint64, 0, len(m.keys))
	for e := range m.keys {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// KeyForEpoch implements [seed.ThresholdKeys].
func (m *MemThresholdKeys) KeyForEpoch(epoch uint64) (*seed.Verifier, error) {
	v, ok := m.keys[epoch]
	if !ok {
		return nil, fmt.Errorf("%w: epoch %d", seed.ErrNoThresholdKey, epoch)
	}
	return v, nil
}
