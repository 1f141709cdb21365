package node

import (
	"context"
	"fmt"
	"sync"

	"github.com/cip11/cip11"
	cquic "github.com/cip11/cip11/adapters/quic"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/presence/validators"
)

// scheduledSets is the transport's §5.4 view of a chain's validator-set
// epochs (D30): at height h, the snapshot active at h and, from its
// activation on, its predecessor (the validators.Epochs cutoff rules
// decide when the predecessor stops admitting, §5.3 point 4). The epochs
// are the genesis's, extended as the chain commits in-band
// reconfigurations (extend, SPEC-NOTES C11). The view of each epoch is
// built once. It is safe for concurrent use.
type scheduledSets struct {
	mu    sync.RWMutex
	from  []uint64 // activation height of each epoch, ascending
	views []validators.Epochs
}

// newScheduledSets builds the view of g's epochs (a single validator: its
// static epoch 0).
func newScheduledSets(g *Genesis) (*scheduledSets, error) {
	s := &scheduledSets{}
	if !g.Network() {
		sn, err := g.Snapshot()
		if err != nil {
			return nil, err
		}
		e, err := validators.NewEpochs(nil, sn)
		if err != nil {
			return nil, err
		}
		s.from, s.views = []uint64{0}, []validators.Epochs{e}
		return s, nil
	}
	_, err := s.extend(g.EpochSets())
	return s, err
}

// extend adds the epochs of es beyond those s has (es lists every epoch,
// ascending) and returns them.
func (s *scheduledSets) extend(es []EpochSet) ([]EpochSet, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(es) <= len(s.views) {
		return nil, nil
	}
	added := es[len(s.views):]
	for _, e := range added {
		sn, err := e.snapshot()
		if err != nil {
			return nil, err
		}
		var prev *validators.Snapshot
		if n := len(s.views); n > 0 {
			prev = s.views[n-1].Current
		}
		ep, err := validators.NewEpochs(prev, sn)
		if err != nil {
			return nil, err
		}
		s.from, s.views = append(s.from, sn.ActivationHeight()), append(s.views, ep)
	}
	return added, nil
}

// EpochsAt implements cquic.ValidatorSets.
func (s *scheduledSets) EpochsAt(h uint64) (validators.Epochs, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i := 0
	for i+1 < len(s.from) && s.from[i+1] <= h {
		i++
	}
	return s.views[i], nil
}

var _ cquic.ValidatorSets = (*scheduledSets)(nil)

// Upcoming implements cquic.UpcomingSets: the first snapshot that
// activates after h (§5.4: scheduled in the genesis or by a committed
// reconfiguration, so already emitted).
func (s *scheduledSets) Upcoming(h uint64) (*validators.Snapshot, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i, from := range s.from {
		if from > h {
			return s.views[i].Current, true
		}
	}
	return nil, false
}

var _ cquic.UpcomingSets = (*scheduledSets)(nil)

// snapshot is the epoch's §5.4 snapshot (epoch 0 active from 0).
func (e EpochSet) snapshot() (*validators.Snapshot, error) {
	rs := make([]validators.Record, len(e.Set))
	for i, v := range e.Set {
		rs[i] = validators.Record{PeerPubKey: validators.PeerKey(v.PeerPubKey)}
	}
	act := e.Activation
	if e.Epoch == 0 {
		act = 0
	}
	s, err := validators.NewSnapshot(e.Epoch, rs, act)
	if err != nil {
		return nil, fmt.Errorf("epoch %d: %w", e.Epoch, err)
	}
	return s, nil
}

// EpochSetOf is the epoch a committed reconfiguration adds (SPEC-NOTES C11).
func EpochSetOf(r *chainlog.Reconfigure) EpochSet {
	es := EpochSet{Epoch: uint64(r.Epoch), Activation: uint64(r.Activation), GroupKey: r.GroupKey}
	for _, m := range r.Set {
		ck := cip11.Hash(m.ConsensusPubKey)
		es.Set = append(es.Set, GenesisValidator{PeerPubKey: cip11.Hash(m.PeerPubKey), ThresholdPubKey: m.ThresholdPubKey,
			QUIC: m.QUIC, HTTP: m.HTTP, ConsensusPubKey: &ck})
	}
	return es
}

// Reconfigure is the in-band reconfiguration that adds epoch e (the devnet
// admin's transaction payload, SPEC-NOTES C11); every member needs a
// consensus key.
func (e EpochSet) Reconfigure() (*chainlog.Reconfigure, error) {
	for i, v := range e.Set {
		if v.ConsensusPubKey == nil {
			return nil, fmt.Errorf("%w: epoch %d validator_set[%d] has no consensus_pubkey", ErrBadRequest, e.Epoch, i)
		}
	}
	r := e.reconfigure()
	return &r, nil
}

// reconfigure is e in the chain-log form (GET /epochs shows every epoch so;
// a member without a consensus key has a zero one).
func (e EpochSet) reconfigure() chainlog.Reconfigure {
	r := chainlog.Reconfigure{Epoch: chainlog.U64(e.Epoch), Activation: chainlog.U64(e.Activation), GroupKey: e.GroupKey}
	for _, v := range e.Set {
		m := chainlog.SetMember{PeerPubKey: chainlog.PeerKey(v.PeerPubKey), ThresholdPubKey: v.ThresholdPubKey, QUIC: v.QUIC, HTTP: v.HTTP}
		if v.ConsensusPubKey != nil {
			m.ConsensusPubKey = chainlog.PeerKey(*v.ConsensusPubKey)
		}
		r.Set = append(r.Set, m)
	}
	return r
}

// EpochSource is a chain's committed validator-set epochs as a node
// knows them: the genesis's and the in-band reconfigurations' (SPEC-NOTES
// C11), ascending. A runner's Chain that implements it lets the runner
// follow reconfigurations (§5.3).
type EpochSource interface {
	Epochs(ctx context.Context) ([]EpochSet, error)
}

// HistoryOf is the §5.4 snapshot history of a network's epochs (epoch 0
// active from 0, each later one from its activation height).
func HistoryOf(es []EpochSet) (*validators.History, error) {
	snaps := make([]*validators.Snapshot, 0, len(es))
	for _, e := range es {
		s, err := e.snapshot()
		if err != nil {
			return nil, err
		}
		snaps = append(snaps, s)
	}
	return validators.NewHistory(snaps...)
}
