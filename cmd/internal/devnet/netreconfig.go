package devnet

import (
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

// admitted is validator i's cumulative QUIC admissions (−1: not running).
func (n *netDevnet) admitted(i int) int64 {
	n.mu.Lock()
	nd := n.nodes[i]
	n.mu.Unlock()
	if nd == nil {
		return -1
	}
	st, ok := nd.V.TransportStats()
	if !ok {
		return -1
	}
	return st.Admitted
}

// reconfigure is the devnet admin (-reconfigure, SPEC-NOTES C11): at
// ReconfigureSubmitLead blocks before a planned activation it hands the
// epoch's threshold shares to its members (the devnet dealer, D31) and
// submits the admin's signed reconfiguration to a running validator,
// which gossips it to every proposer.
func (n *netDevnet) reconfigure(h uint64) error {
	acts := []uint64{n.cfg.AddAt, n.cfg.RemoveAt}
	if n.submitted >= len(acts) || h+ReconfigureSubmitLead < acts[n.submitted] {
		return nil
	}
	e := n.submitted + 1
	tx, shares, err := n.nw.Dealer.Reconfiguration(e, acts[n.submitted])
	if err != nil {
		return err
	}
	n.mu.Lock()
	for pos, sec := range shares {
		nd := n.nodes[pos]
		if nd == nil {
			continue
		}
		if err := nd.AddEpochShare(uint64(e), sec); err != nil {
			n.mu.Unlock()
			return fmt.Errorf("devnet dealer: epoch %d share of validator %d: %w", e, pos, err)
		}
	}
	n.mu.Unlock()
	v, err := n.live(0)
	if err != nil {
		return err
	}
	if _, err := v.SubmitTx(tx); err != nil {
		return fmt.Errorf("devnet admin: reconfiguration to epoch %d: %w", e, err)
	}
	n.submitted++
	n.cfg.Logger.Info("devnet admin: reconfiguration submitted", "height", h, "epoch", e, "activation_height", acts[e-1])
	return nil
}

// epochs are the validator-set epochs the chain committed (validator 0's
// view; the genesis's if it is not running).
func (n *netDevnet) epochs() []node.EpochSet {
	if v, err := n.live(0); err == nil {
		return v.Epochs()
	}
	return n.g.EpochSets()
}

// reportReconfig fills the -reconfigure counts at height h: the epochs, the
// runners held only by validators of their Sub(R) in the epoch active at h
// (re-homed) or by another (stray), and the removed validator's admissions
// after its cutoff (§5.3 point 4: it must receive no new connections).
func (n *netDevnet) reportReconfig(rep *NetworkReport, h uint64) error {
	es := n.epochs()
	hist, err := node.HistoryOf(es)
	if err != nil {
		return err
	}
	snap, err := hist.Active(h)
	if err != nil {
		return err
	}
	rep.Epochs = len(es)
	rep.Overlap = n.overlapTimelines(n.cfg.Overlap)
	held := map[cip11.Address][]int{}
	n.mu.Lock()
	for i, nd := range n.nodes {
		if nd != nil {
			for _, a := range nd.V.ConnectedRunners() {
				held[a] = append(held[a], i)
			}
		}
	}
	homes := n.peerKeys()
	n.mu.Unlock()
	p := n.g.P()
	for _, k := range n.runnerKeys {
		hs := held[k.Address()]
		stray := false
		for _, i := range hs {
			in, err := snap.InSub(k.PubKey(), validators.PeerKey(homes[i]), p)
			if err != nil {
				return err
			}
			stray = stray || !in
		}
		switch {
		case stray:
			rep.RunnersStray++
		case len(hs) > 0:
			rep.RunnersRehomed++
		}
	}
	if n.admittedAtCutoff >= 0 {
		rep.RemovedAdmittedAfter = n.admitted(0) - n.admittedAtCutoff
	}
	return nil
}

// sampleLinks records, per runner and epoch, the first and last height h
// at which the runner held an admitted link under that epoch's pair.
func (n *netDevnet) sampleLinks(runners []*node.Runner, h uint64) {
	if n.linkSeen == nil {
		n.linkSeen = make([]map[uint64][2]uint64, len(runners))
	}
	for i, r := range runners {
		if r == nil || r.Client() == nil {
			continue
		}
		if n.linkSeen[i] == nil {
			n.linkSeen[i] = map[uint64][2]uint64{}
		}
		for _, l := range r.Client().Links() {
			if !l.Up {
				continue
			}
			e := l.Pair.SubsetEpoch
			seen, ok := n.linkSeen[i][e]
			if !ok {
				seen[0] = h
			}
			seen[1] = h
			n.linkSeen[i][e] = seen
		}
	}
}

// reportGoodbyes sums the Goodbyes the validators and the runners sent, by
// §12.5 reason.
func (n *netDevnet) reportGoodbyes(rep *NetworkReport, runners []*node.Runner) {
	rep.GoodbyesByValidators, rep.GoodbyesByRunners = map[string]int64{}, map[string]int64{}
	n.mu.Lock()
	for _, nd := range n.nodes {
		if nd == nil {
			continue
		}
		if st, ok := nd.V.TransportStats(); ok {
			for i, c := range st.GoodbyesSent {
				if c > 0 {
					rep.GoodbyesByValidators[wire.GoodbyeReason(i).String()] += c
				}
			}
		}
	}
	n.mu.Unlock()
	for _, r := range runners {
		if r == nil || r.Client() == nil {
			continue
		}
		st := r.Client().Stats()
		for i, c := range st.GoodbyesSent {
			if c > 0 {
				rep.GoodbyesByRunners[wire.GoodbyeReason(i).String()] += c
			}
		}
	}
}

// overlapTimelines summarizes linkSeen for every epoch change (§5.3).
func (n *netDevnet) overlapTimelines(overlap uint64) []OverlapTimeline {
	var out []OverlapTimeline
	for _, e := range n.epochs()[1:] {
		tl := OverlapTimeline{Epoch: e.Epoch, Activation: e.Activation, Cutoff: e.Activation + overlap}
		for _, seen := range n.linkSeen {
			if s, ok := seen[e.Epoch]; ok {
				if tl.Runners == 0 || s[0] < tl.NewPairFirstUp {
					tl.NewPairFirstUp = s[0]
				}
				tl.NewPairLastUp = max(tl.NewPairLastUp, s[0])
				tl.Runners++
			}
			if s, ok := seen[e.Epoch-1]; ok {
				tl.OldPairLastUp = max(tl.OldPairLastUp, s[1])
			}
		}
		out = append(out, tl)
	}
	return out
}

// peerKeys is every member's peer key by pool position (zero: not
// running; n.mu held).
func (n *netDevnet) peerKeys() []cip11.Hash {
	var out []cip11.Hash
	for _, nd := range n.nodes {
		if nd != nil {
			out = append(out, nd.V.Genesis().Validator.PeerPubKey)
		} else {
			out = append(out, cip11.Hash{})
		}
	}
	return out
}
