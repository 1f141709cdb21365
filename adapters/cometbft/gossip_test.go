package cometbft

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/p2p"
	"github.com/cometbft/cometbft/p2p/mock"
	gogotypes "github.com/cosmos/gogoproto/types"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/blocklayout"
	"github.com/cip11/cip11/presence"
)

// keyedPeer is a mock peer whose p2p ID is the address of a known Ed25519
// node key (D29: a validator's node key is its peer_pubkey).
type keyedPeer struct {
	*mock.Peer
	id p2p.ID
}

func (p keyedPeer) ID() p2p.ID { return p.id }

// newKeyedPeer is a peer with node key i and that key as a peer_pubkey.
func newKeyedPeer(i byte) (keyedPeer, cip11.Hash) {
	pub := cmted25519.GenPrivKeyFromSecret([]byte{'p', i}).PubKey()
	return keyedPeer{mock.NewPeer(nil), p2p.PubKeyToID(pub)}, cip11.Hash(pub.Bytes())
}

// testReactor is a reactor at height own whose validators at every height
// are keys.
func testReactor(own uint64, keys ...cip11.Hash) *presenceReactor {
	return newPresenceReactor(slog.New(slog.DiscardHandler), func(uint64) []cip11.Hash { return keys }, func() uint64 { return own })
}

func gossipMsg(t testing.TB, h uint64, n int, idx ...int) []byte {
	t.Helper()
	s, err := presence.NewSet(n, idx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := blocklayout.EncodeGossip(h, n, presence.Encode(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGossipReactor: views are kept per peer and united with the local
// view under the timeout and the registry bound (§8.2); a garbage message
// drops the peer and leaves its view out (a flood does not:
// TestGossipPerHeightLimits).
func TestGossipReactor(t *testing.T) {
	p1, k1 := newKeyedPeer(1)
	p2, k2 := newKeyedPeer(2)
	p3, k3 := newKeyedPeer(3)
	r := testReactor(10, k1, k2, k3)
	for _, p := range []p2p.Peer{p1, p2, p3} {
		r.AddPeer(p)
	}
	send := func(p p2p.Peer, b []byte) {
		r.Receive(p2p.Envelope{Src: p, ChannelID: PresenceChannel, Message: &gogotypes.BytesValue{Value: b}})
	}
	send(p1, gossipMsg(t, 10, 8, 1, 2))
	send(p2, gossipMsg(t, 3, 8, 5))       // too old for minH 5
	send(p3, gossipMsg(t, 10, 12, 4, 11)) // 11 is beyond registry(h−1) = 8
	got := r.union([]int{0, 2}, 8, 5)
	if want := []int{0, 1, 2, 4}; !slices.Equal(got, want) {
		t.Fatalf("union %v, want %v", got, want)
	}
	send(p2, []byte("garbage"))
	if s := r.stats(); s.Dropped != 1 {
		t.Fatalf("dropped %d after garbage, want 1", s.Dropped)
	}
	r.RemovePeer(p2, nil)
	if got, want := r.union(nil, 8, 5), []int{1, 2, 4}; !slices.Equal(got, want) {
		t.Fatalf("union %v after the peer went, want %v", got, want)
	}
}

// TestGossipOnlyFromValidators (§8.2, §15.7; SPEC-NOTES C8): the reactor
// stores a view only from a peer whose node key is a peer_pubkey of a set
// in force at the view's height, and only up to its own height +
// gossipHeightSlack; the rest is not stored, counted by reason, and the
// peer stays connected.
func TestGossipOnlyFromValidators(t *testing.T) {
	val, kv := newKeyedPeer(1)
	stranger, _ := newKeyedPeer(2)
	r := testReactor(10, kv)
	for _, p := range []p2p.Peer{val, stranger} {
		r.AddPeer(p)
	}
	send := func(p p2p.Peer, b []byte) {
		r.Receive(p2p.Envelope{Src: p, ChannelID: PresenceChannel, Message: &gogotypes.BytesValue{Value: b}})
	}
	send(stranger, gossipMsg(t, 10, 8, 2, 3))             // no validator
	send(val, gossipMsg(t, 10+gossipHeightSlack+1, 8, 0)) // 13 > 10 + 2
	send(val, gossipMsg(t, 1<<62, 8, 0))                  // the view that never went stale
	if got := r.union(nil, 8, 1); len(got) != 0 {
		t.Fatalf("union %v: a view was stored", got)
	}
	if s := r.stats(); s.NotValidator != 1 || s.Future != 2 || s.Dropped != 0 || s.Received != 3 {
		t.Fatalf("stats %+v: want 1 not a validator, 2 future, none dropped, 3 received", s)
	}
	send(val, gossipMsg(t, 10+gossipHeightSlack, 8, 1)) // at the bound: stored
	send(val, gossipMsg(t, 9, 8, 5))                    // older than the stored view: ignored, as before
	if got, want := r.union(nil, 8, 1), []int{1}; !slices.Equal(got, want) {
		t.Fatalf("union %v, want %v", got, want)
	}
}

// TestGossipValidatorsInForce (§5.3–§5.4): the keys whose views count at
// h are the set active at h and, until its activation + OVERLAP_BLOCKS,
// its predecessor's; a member of a later epoch counts only from its
// activation, a removed one until the overlap ends.
func TestGossipValidatorsInForce(t *testing.T) {
	set := func(ks ...byte) []node.GenesisValidator {
		var out []node.GenesisValidator
		for _, k := range ks {
			out = append(out, node.GenesisValidator{PeerPubKey: cip11.Hash{k}})
		}
		return out
	}
	ep := func(e, act uint64, s []node.GenesisValidator) *node.ScheduledEpoch {
		return &node.ScheduledEpoch{EpochSet: node.EpochSet{Epoch: e, Activation: act, Set: s}}
	}
	epochs := []*node.ScheduledEpoch{ep(0, 1, set(1, 2, 3, 4)), ep(1, 20, set(1, 2, 3, 4, 5)), ep(2, 30, set(2, 3, 4, 5))}
	const overlap = 10
	for _, tc := range []struct {
		h    uint64
		want []byte
	}{
		{1, []byte{1, 2, 3, 4}}, {19, []byte{1, 2, 3, 4}}, // 5 is epoch 1's: not before 20
		{20, []byte{1, 2, 3, 4, 5}}, {29, []byte{1, 2, 3, 4, 5}},
		{30, []byte{1, 2, 3, 4, 5}}, {39, []byte{1, 2, 3, 4, 5}}, // epoch 1 in force until 30 + 10: 1 still counts
		{40, []byte{2, 3, 4, 5}}, {1 << 40, []byte{2, 3, 4, 5}},
	} {
		got := map[byte]bool{}
		for _, k := range inForce(epochs, tc.h, overlap) {
			got[k[0]] = true
		}
		var keys []byte
		for k := range byte(8) {
			if got[k] {
				keys = append(keys, k)
			}
		}
		if !slices.Equal(keys, tc.want) {
			t.Errorf("height %d: validators %v, want %v", tc.h, keys, tc.want)
		}
	}
}

// gossipViews are 4 validators' local views of n runners, each runner
// connected to 3 of the 4 (k = 3, D33).
func gossipViews(b *testing.B, n int) [][]int {
	views := make([][]int, 4)
	for r := range n {
		for v := range 4 {
			if r%4 != v { // runner r is not connected to validator r mod 4
				views[v] = append(views[v], r)
			}
		}
	}
	return views
}

// BenchmarkGossipBlock is one block's presence gossip CPU on the whole
// network of 4 validators over 5,000 runners (§6.6 plans for about that):
// each validator encodes and publishes its view, each decodes its 3
// peers' messages, and the proposer unites them into PresenceInput(h).
// It reports the bytes of one message. BenchmarkPresenceBlock, the
// baseline, is what a block's PresenceInput costs without gossip (the
// proposer encodes its own view, every validator decodes the field).
func BenchmarkGossipBlock(b *testing.B) {
	const n = 5000
	views := gossipViews(b, n)
	var peers []p2p.Peer
	var keys []cip11.Hash
	for i := range 3 {
		p, k := newKeyedPeer(byte(i))
		peers, keys = append(peers, p), append(keys, k)
	}
	var own uint64
	r := newPresenceReactor(slog.New(slog.DiscardHandler), func(uint64) []cip11.Hash { return keys }, func() uint64 { return own })
	for _, p := range peers {
		r.AddPeer(p)
	}
	var msgBytes int
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		own = uint64(i + 1) // one view per peer and height
		msgs := make([][]byte, 4)
		for v := range 4 {
			s, err := presence.NewSet(n, views[v])
			if err != nil {
				b.Fatal(err)
			}
			if msgs[v], err = blocklayout.EncodeGossip(uint64(i+1), n, presence.Encode(s)); err != nil {
				b.Fatal(err)
			}
		}
		msgBytes = len(msgs[1])
		for v := 1; v < 4; v++ { // the proposer (validator 0) receives its peers' views
			r.Receive(p2p.Envelope{Src: peers[v-1], ChannelID: PresenceChannel, Message: &gogotypes.BytesValue{Value: msgs[v]}})
		}
		// the other 3 validators decode 3 messages each too
		for range 9 {
			if _, _, err := blocklayout.DecodeGossip(msgs[1]); err != nil {
				b.Fatal(err)
			}
		}
		all, err := presence.NewSet(n, r.union(views[0], n, 1))
		if err != nil || all.Len() != n {
			b.Fatalf("union of %d runners: %v", all.Len(), err)
		}
		_ = presence.Encode(all)
	}
	b.ReportMetric(float64(msgBytes), "bytes/msg")
}

// BenchmarkPresenceBlock is BenchmarkGossipBlock's baseline (see there).
func BenchmarkPresenceBlock(b *testing.B) {
	const n = 5000
	views := gossipViews(b, n)
	b.ReportAllocs()
	for b.Loop() {
		s, err := presence.NewSet(n, views[0])
		if err != nil {
			b.Fatal(err)
		}
		field := presence.Encode(s)
		for range 4 {
			if _, err := presence.Decode(field, n); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestGossipFloodOverP2P: over real CometBFT p2p on loopback, a validator
// whose peer sends it garbage on the presence channel disconnects that
// peer (counted as dropped); one that floods it with well-formed views at
// one height (§8.2, D33) is not disconnected: the excess is dropped and
// counted (issue 28). The chain goes on making blocks whose AppHashes
// agree.
func TestGossipFloodOverP2P(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4-validator network")
	}
	_, nodes, d := startNet(t, 4, 4)
	waitHeight(t, nodes, 3, 60*time.Second)
	peerOf := func(from, to int) p2p.Peer { // persistent peers: connected soon, if not yet
		t.Helper()
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if p := nodes[from].App.gossip.Switch.Peers().Get(p2p.ID(nodes[to].ID())); p != nil {
				return p
			}
		}
		t.Fatalf("validator %d has no connection to %d", from, to)
		return nil
	}
	waitDropped := func(i int, want uint64) {
		t.Helper()
		end := time.Now().Add(10 * time.Second)
		for nodes[i].Gossip().Dropped < want {
			if time.Now().After(end) {
				t.Fatalf("validator %d dropped %d peers, want %d", i, nodes[i].Gossip().Dropped, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// garbage from 3 to 0
	if !peerOf(3, 0).Send(p2p.Envelope{ChannelID: PresenceChannel, Message: &gogotypes.BytesValue{Value: []byte("not a presence message")}}) {
		t.Fatal("send failed")
	}
	waitDropped(0, 1)
	// a flood of well-formed messages from 3 to 1
	one, err := presence.NewSet(4, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := blocklayout.EncodeGossip(nodes[3].V.Height(), 4, presence.Encode(one))
	if err != nil {
		t.Fatal(err)
	}
	p := peerOf(3, 1)
	before := nodes[1].Gossip()
	for range 60 {
		p.Send(p2p.Envelope{ChannelID: PresenceChannel, Message: &gogotypes.BytesValue{Value: msg}})
	}
	for end := time.Now().Add(10 * time.Second); nodes[1].Gossip().Excess+nodes[1].Gossip().Stale < before.Excess+before.Stale+40; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("validator 1: gossip %+v (before the flood %+v): the flood's excess not counted", nodes[1].Gossip(), before)
		}
	}
	if s := nodes[1].Gossip(); s.Dropped != before.Dropped || nodes[1].cmt.Switch().Peers().Get(p2p.ID(nodes[3].ID())) == nil {
		t.Fatalf("validator 1 dropped its flooding peer (gossip %+v): honest peers must not be cut for volume", s)
	}
	h := nodes[0].V.Height()
	waitHeight(t, nodes[:3], h+5, 60*time.Second)
	d.mu.Lock()
	defer d.mu.Unlock()
	for hh := uint64(1); hh <= h+5; hh++ {
		for i := 1; i < 3; i++ {
			if d.m[hh][i] != d.m[hh][0] {
				t.Fatalf("height %d: validator %d's AppHash differs from validator 0's", hh, i)
			}
		}
	}
}

// TestGossipPerHeightLimits (issue 28): limits are per height, not per
// second. A validator catching up publishes a view for every height it
// commits, dozens a second: each newer view is stored, none disconnects
// it. A flood at one height is dropped past gossipPerHeight views, counted
// as excess, not stored and not a disconnect; an older view than the
// stored one is dropped as stale. Only a malformed message disconnects.
// Before, the token bucket (burst 20, 10 a second) cut the peer at its
// 21st message.
func TestGossipPerHeightLimits(t *testing.T) {
	p1, k1 := newKeyedPeer(1)
	r := testReactor(100, k1)
	r.AddPeer(p1) // no time passes: the old bucket would not refill
	send := func(b []byte) {
		r.Receive(p2p.Envelope{Src: p1, ChannelID: PresenceChannel, Message: &gogotypes.BytesValue{Value: b}})
	}
	for h := uint64(41); h <= 100; h++ { // a catch-up: 60 views at once
		send(gossipMsg(t, h, 8, int(h%8)))
	}
	if s := r.stats(); s.Dropped != 0 || s.Received != 60 || s.Excess != 0 || s.Stale != 0 {
		t.Fatalf("stats %+v after a catch-up's 60 views: want 60 received, none dropped, excess or stale", s)
	}
	if got, want := r.union(nil, 8, 100), []int{100 % 8}; !slices.Equal(got, want) {
		t.Fatalf("union %v, want the newest view %v", got, want)
	}
	for range 500 { // a flood at height 100
		send(gossipMsg(t, 100, 8, 7))
	}
	if s := r.stats(); s.Dropped != 0 || s.Excess != 500-(gossipPerHeight-1) {
		t.Fatalf("stats %+v after 500 views at one height: want %d excess, none dropped", s, 500-(gossipPerHeight-1))
	}
	send(gossipMsg(t, 99, 8, 3)) // older than the stored view
	if s := r.stats(); s.Stale != 1 || s.Dropped != 0 {
		t.Fatalf("stats %+v: want 1 stale, none dropped", s)
	}
	if got, want := r.union(nil, 8, 100), []int{7}; !slices.Equal(got, want) {
		t.Fatalf("union %v, want %v (the newest accepted view at 100)", got, want)
	}
	if head := r.claimed(p1.ID()); head != 100 {
		t.Fatalf("claimed height %d, want 100", head)
	}
	send([]byte("garbage"))
	if s := r.stats(); s.Dropped != 1 {
		t.Fatalf("dropped %d after garbage, want 1", s.Dropped)
	}
}
