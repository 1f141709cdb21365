package node

import (
	"fmt"

	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/presence/validators"
)

// scheduledSets is the transport's §5.4 view of a network whose validator
// sets are scheduled in its genesis (D30): at height h, the snapshot
// active at h and, from its activation on, its predecessor (the
// validators.Epochs cutoff rules decide when the predecessor stops
// admitting, §5.3 point 4).
type scheduledSets struct {
	snaps []*validators.Snapshot // ascending by activation
}

// newScheduledSets builds the view of g's epochs (a single validator: its
// static epoch 0).
func newScheduledSets(g *Genesis) (*scheduledSets, error) {
	hist, err := g.History()
	if err != nil {
		return nil, err
	}
	s := &scheduledSets{}
	for _, e := range g.EpochSets() {
		act := e.Activation
		if e.Epoch == 0 {
			act = 0
		}
		sn, err := hist.Active(act)
		if err != nil {
			return nil, err
		}
		s.snaps = append(s.snaps, sn)
	}
	if len(s.snaps) == 0 {
		sn, err := g.Snapshot()
		if err != nil {
			return nil, err
		}
		s.snaps = append(s.snaps, sn)
	}
	return s, nil
}

// EpochsAt implements cquic.ValidatorSets.
func (s *scheduledSets) EpochsAt(h uint64) (validators.Epochs, error) {
	i := 0
	for i+1 < len(s.snaps) && s.snaps[i+1].ActivationHeight() <= h {
		i++
	}
	if i == 0 {
		return validators.NewEpochs(nil, s.snaps[0])
	}
	e, err := validators.NewEpochs(s.snaps[i-1], s.snaps[i])
	if err != nil {
		return validators.Epochs{}, fmt.Errorf("epochs at %d: %w", h, err)
	}
	return e, nil
}

var _ cquic.ValidatorSets = (*scheduledSets)(nil)
