package cometbft

import (
	"slices"
	"sync/atomic"
	"time"

	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"
	cmtnode "github.com/cometbft/cometbft/node"
	"github.com/cometbft/cometbft/p2p"
	cmttypes "github.com/cometbft/cometbft/types"

	"github.com/cip11/cip11"
)

// catchUpSlack: a validator whose trusted head is more than this many
// heights above the block it commits is catching up. In step with
// consensus its peers have committed the block or the next one (their
// consensus height is h+1 or h+2 when it commits h), so one height of lag
// is normal; two is a validator following others' commits.
const catchUpSlack = 1

// catchUpGap: a commit this long after the validator's previous one
// follows a stall (a paused process, a partition, a disk that hung) and
// counts as catching up. Its peers' heights may not say so yet: while
// consensus was stalled, the p2p connections' receive routines waited on
// it too. Its pushes are held one block, not lost, and a network-wide
// stall (no quorum) delays the first block's pushes after it by a block.
const catchUpGap = 3 * time.Second

// catchUp is the validator's node.CatchUp (issue 28): while CometBFT's
// handshake replays the blocks the store is missing (no node yet), while
// block sync runs (ConsensusReactor.WaitSync), at the first commit after a
// stall of catchUpGap, and while the trusted head is more than
// catchUpSlack above h, the validator is catching up and its push path
// pushes nothing for the past (node/catchup.go). Called once per commit.
func (a *App) catchUp(h uint64) (head uint64, catching bool) {
	now := time.Now().UnixNano()
	last := a.lastCommit.Swap(now)
	cn := a.cmt.Load()
	if cn == nil {
		return h, true
	}
	head = a.peerHead(cn, h)
	stalled := last != 0 && time.Duration(now-last) >= catchUpGap
	return head, stalled || cn.ConsensusReactor().WaitSync() || head-h > catchUpSlack
}

// peerHead is the highest committed height at least f+1 validators in
// force at h claim, among this node's connected peers (CometBFT's
// consensus peer state: a peer at consensus height H has committed H−1;
// and the greatest height of the peer's presence views, which arrive
// while this node's consensus is stalled and its peer states are not
// updated),
// or h when fewer than f+1 validator peers are connected; f =
// ⌊(n−1)/3⌋ of the set active at h. One Byzantine validator claiming a
// huge height cannot hold a validator's pushes back: f+1 claims include
// an honest one.
func (a *App) peerHead(cn *cmtnode.Node, h uint64) uint64 {
	n := len(a.epochAt(h).Set)
	f := (max(n, 1) - 1) / 3
	keys := a.gossipValidators(h)
	ids := make(map[p2p.ID]bool, len(keys))
	for _, k := range keys {
		ids[peerID(k)] = true
	}
	var hs []uint64
	for _, p := range cn.Switch().Peers().Copy() {
		if !ids[p.ID()] {
			continue
		}
		var x uint64
		if ps, ok := p.Get(cmttypes.PeerStateKey).(interface{ GetHeight() int64 }); ok && ps.GetHeight() > 1 {
			x = uint64(ps.GetHeight() - 1)
		}
		if a.gossip != nil {
			x = max(x, a.gossip.claimed(p.ID()))
		}
		if x > 0 {
			hs = append(hs, x)
		}
	}
	if len(hs) <= f {
		return h
	}
	slices.Sort(hs)
	return max(h, hs[len(hs)-1-f])
}

// pause is a devnet fault (Node.Pause): the next Commit waits until then,
// as a validator whose process was stopped would (consensus halts; its
// QUIC server and p2p connections stay up).
type pause struct{ until atomic.Int64 }

func (p *pause) wait() {
	if u := p.until.Swap(0); u != 0 {
		time.Sleep(time.Until(time.Unix(0, u)))
	}
}

// Pause holds the node's next Commit for d (DEVNET fault, issue 28: a
// paused validator): the others go on, this one's runners stay connected,
// and when the pause ends it catches up by following the others'
// commits.
func (n *Node) Pause(d time.Duration) { n.App.pause.until.Store(time.Now().Add(d).UnixNano()) }

// peerID is the p2p ID of peer_pubkey k (D29).
func peerID(k cip11.Hash) p2p.ID { return p2p.PubKeyToID(cmted25519.PubKey(k[:])) }
