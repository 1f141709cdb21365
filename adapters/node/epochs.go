package node

import (
	"context"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/presence/validators"
)

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
