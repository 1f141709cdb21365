package cometbft

import (
	"slices"
	"testing"
	"time"

	"github.com/cometbft/cometbft/p2p"
	gogotypes "github.com/cosmos/gogoproto/types"

	"github.com/cip11/cip11/blocklayout"
	"github.com/cip11/cip11/presence"
)

// TestGossipOnlyFromValidatorsOverP2P (§8.2 "validator presence gossip",
// §15.7; SPEC-NOTES C8) on real CometBFT p2p: a five-node network whose
// fifth node (pool member 4) joins the set only at height 1000, so it is a
// connected full node whose node key is a peer_pubkey of a snapshot the
// validators hold, but not one in force now. Its view claiming runners 2
// and 3 is never used by validator 0; a validator's view claiming runner 0
// at a height far past validator 0's own is dropped too; the same
// validator's view at its own height claiming runner 1 is used (the path
// works, and — one channel, in order — the far-future one came first).
func TestGossipOnlyFromValidatorsOverP2P(t *testing.T) {
	if testing.Short() {
		t.Skip("a 5-node network")
	}
	o := NetworkOptions{Validators: 4, Members: 5, Runners: 4, Seed: 1, BasePort: freeBase(t, 5),
		Epochs: []EpochPlan{{Activation: 1000, Members: []int{0, 1, 2, 3, 4}}}}
	_, nodes, _ := startOpts(t, o, nil)
	waitHeight(t, nodes, 3, 60*time.Second)
	peerOf := func(from, to int) p2p.Peer {
		t.Helper()
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if p := nodes[from].App.gossip.Switch.Peers().Get(p2p.ID(nodes[to].ID())); p != nil {
				return p
			}
		}
		t.Fatalf("node %d has no connection to %d", from, to)
		return nil
	}
	send := func(p p2p.Peer, h uint64, idx ...int) {
		t.Helper()
		s, err := presence.NewSet(4, idx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := blocklayout.EncodeGossip(h, 4, presence.Encode(s))
		if err != nil {
			t.Fatal(err)
		}
		if !p.Send(p2p.Envelope{ChannelID: PresenceChannel, Message: &gogotypes.BytesValue{Value: b}}) {
			t.Fatal("send failed")
		}
	}
	union := func() []int {
		h := nodes[0].V.Height() + 1
		return nodes[0].App.gossip.union(nil, 4, max(1, h-min(h, nodes[0].App.g.P().PresenceTimeoutBlocks)))
	}
	before := nodes[0].Gossip()
	send(peerOf(4, 0), nodes[4].V.Height()+2, 2, 3) // not a validator at that height
	v3 := peerOf(3, 0)
	send(v3, 1<<40, 0)               // far future
	send(v3, nodes[3].V.Height(), 1) // in force, at its own height
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		u := union()
		if slices.Contains(u, 2) || slices.Contains(u, 3) {
			t.Fatalf("validator 0's PresenceInput unites %v: the non-validator's view was used", u)
		}
		if slices.Contains(u, 0) {
			t.Fatalf("validator 0's PresenceInput unites %v: the far-future view was used", u)
		}
		if slices.Contains(u, 1) {
			break
		}
		if time.Now().After(end) {
			t.Fatal("validator 3's view never reached validator 0")
		}
	}
	// the far-future view preceded the used one on validator 3's channel
	if s := nodes[0].Gossip(); s.Future < before.Future+1 || s.Dropped != 0 {
		t.Fatalf("validator 0's gossip %+v (before %+v): the far-future view not counted, or a peer dropped", s, before)
	}
	// node 4 publishes after every block, after the forged view on the same
	// channel: three more refusals mean the forged one was refused
	for end := time.Now().Add(30 * time.Second); nodes[0].Gossip().NotValidator < before.NotValidator+3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("validator 0 refused %d views of node 4", nodes[0].Gossip().NotValidator-before.NotValidator)
		}
	}
	r := nodes[0].App.gossip
	r.mu.Lock()
	v := r.views[p2p.ID(nodes[4].ID())]
	r.mu.Unlock()
	if v == nil || v.h != 0 || len(v.indices) != 0 {
		t.Fatalf("validator 0 holds node 4's view %+v", v)
	}
	if u := union(); slices.Contains(u, 2) || slices.Contains(u, 3) {
		t.Fatalf("validator 0's PresenceInput unites %v", u)
	}
}
