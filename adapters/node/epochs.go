package node

import (
	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/presence/validators"
)

// scheduledSets is the transport's §5.4 view of a chain whose validator
// sets are scheduled in its genesis (D30): at height h, the snapshot
// active at h and, from its activation on, its predecessor (the
// validators.Epochs cutoff rules decide when the predecessor stops
// admitting, §5.3 point 4). The view of each epoch is built once.
type scheduledSets struct {
	from  []uint64 // activation height of each epoch, ascending
	views []validators.Epochs
}

// newScheduledSets builds the view of g's epochs (a single validator: its
// static epoch 0).
func newScheduledSets(g *Genesis) (*scheduledSets, error) {
	snaps, err := g.snapshots()
	if err != nil {
		return nil, err
	}
	s := &scheduledSets{}
	for i, sn := range snaps {
		var prev *validators.Snapshot
		if i > 0 {
			prev = snaps[i-1]
		}
		e, err := validators.NewEpochs(prev, sn)
		if err != nil {
			return nil, err
		}
		s.from, s.views = append(s.from, sn.ActivationHeight()), append(s.views, e)
	}
	return s, nil
}

// EpochsAt implements cquic.ValidatorSets.
func (s *scheduledSets) EpochsAt(h uint64) (validators.Epochs, error) {
	i := 0
	for i+1 < len(s.from) && s.from[i+1] <= h {
		i++
	}
	return s.views[i], nil
}

var _ cquic.ValidatorSets = (*scheduledSets)(nil)

// Upcoming implements cquic.UpcomingSets: the first snapshot that
// activates after h (§5.4: scheduled in the genesis, so already emitted).
func (s *scheduledSets) Upcoming(h uint64) (*validators.Snapshot, bool) {
	for i, from := range s.from {
		if from > h {
			return s.views[i].Current, true
		}
	}
	return nil, false
}

var _ cquic.UpcomingSets = (*scheduledSets)(nil)
