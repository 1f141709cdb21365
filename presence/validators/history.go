package validators

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// History errors (§5.3–§5.4).
var (
	// ErrEmptyHistory: a history holds no snapshot, so no height has an
	// active validator set.
	ErrEmptyHistory = errors.New("validators: history holds no snapshot")
	// ErrNilSnapshot: a history entry is nil.
	ErrNilSnapshot = errors.New("validators: nil snapshot in history")
	// ErrHistoryOrder: a snapshot's activation height or epoch is not
	// strictly greater than its predecessor's (§5.3: each
	// ValidatorSetActivated advances both).
	ErrHistoryOrder = errors.New("validators: history snapshots do not strictly increase in activation height and epoch")
	// ErrNoActiveSet: the height is below the first snapshot's activation
	// height, so no validator set is active there (§5.4).
	ErrNoActiveSet = errors.New("validators: no validator-set snapshot is active at this height")
)

// History is the immutable sequence of §5.4 snapshots a chain has
// activated, in strictly increasing activation height and epoch. The
// snapshot active at height h is the one with the greatest activation
// height ≤ h (§5.3: the new set is active from its activation_height).
// Build it with [NewHistory].
type History struct {
	snaps []*Snapshot
}

// NewHistory validates snaps as a §5.3–§5.4 activation sequence: at least
// one snapshot, none nil, each activating strictly after and carrying a
// strictly greater epoch than its predecessor ([ErrHistoryOrder]), and each
// changing the ordered identity list ([ErrEpochNotAdvancing], as
// [NewEpochs]: §5.4 emits no ValidatorSetActivated for an unchanged list).
// The snapshots themselves are already validated by [NewSnapshot].
func NewHistory(snaps ...*Snapshot) (*History, error) {
	if len(snaps) == 0 {
		return nil, ErrEmptyHistory
	}
	for i, s := range snaps {
		if s == nil {
			return nil, fmt.Errorf("%w: position %d", ErrNilSnapshot, i)
		}
		if i == 0 {
			continue
		}
		prev := snaps[i-1]
		switch {
		case s.activation <= prev.activation || s.epoch <= prev.epoch:
			return nil, fmt.Errorf("%w: position %d (epoch %d, activation %d) after epoch %d, activation %d",
				ErrHistoryOrder, i, s.epoch, s.activation, prev.epoch, prev.activation)
		case s.SameIdentities(prev):
			return nil, fmt.Errorf("%w: epoch %d repeats epoch %d's identity list", ErrEpochNotAdvancing, s.epoch, prev.epoch)
		}
	}
	return &History{snaps: slices.Clone(snaps)}, nil
}

// Active returns the snapshot active at height h: the one with the greatest
// activation height ≤ h (§5.3–§5.4). Below the first activation height it
// fails with [ErrNoActiveSet].
func (hs *History) Active(h uint64) (*Snapshot, error) {
	i, found := slices.BinarySearchFunc(hs.snaps, h, func(s *Snapshot, h uint64) int { return cmp.Compare(s.activation, h) })
	if found {
		return hs.snaps[i], nil
	}
	if i == 0 {
		return nil, fmt.Errorf("%w: height %d, first activation %d", ErrNoActiveSet, h, hs.snaps[0].activation)
	}
	return hs.snaps[i-1], nil
}

// ParticipantsAt is |participants| of the snapshot active at h (DECISIONS
// D25: multi_validator is ParticipantsAt(h) > 1 and effective_k is
// [cip11.Params.SubsetSize] of it). It fails as [History.Active] does.
func (hs *History) ParticipantsAt(h uint64) (int, error) {
	s, err := hs.Active(h)
	if err != nil {
		return 0, err
	}
	return s.Len(), nil
}
