package cometbft

import (
	"fmt"
	"log/slog"
	"math/bits"
	"sync"

	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/p2p"
	gogotypes "github.com/cosmos/gogoproto/types"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
	"github.com/cip11/cip11/blocklayout"
)

// Presence gossip (§8.2, D33; issue 20 §1): after committing height h,
// every validator publishes the runners it holds live streams to, as a
// PresenceInputV1 over registry(h), on its own CometBFT p2p channel. The
// proposer of h+1 proposes the union of its own local presence and its
// peers' views for heights ≥ h+1 − PRESENCE_TIMEOUT_BLOCKS, restricted to
// registry(h) (§8.1, §8.5). Fail-open (§7.3): a fabricated bit costs one
// ack timeout, a suppressed one leaves the runner in the fallback pool.
//
// Only validators gossip (§8.2 "validator presence gossip"; §15.7 bounds
// fabrication to a Byzantine proposer's own slots). A view is stored only
// when its sender's p2p node key is a peer_pubkey of a validator-set
// snapshot in force at the view's height (D29: a validator's CometBFT node
// key is its §5.4 peer_pubkey, and CometBFT's secret connection proves the
// peer holds it: the p2p ID is the key's address) and when that height is
// at most the receiver's own height + gossipHeightSlack. Anything else is
// dropped, not stored, and counted by reason (GossipStats); the peer stays
// connected (a full node, a joining or a removed validator is a legitimate
// consensus peer).

// PresenceChannel is the gossip's p2p channel (unused by CometBFT v1.0.1).
const PresenceChannel = byte(0x70)

// The message codec (D33, SPEC-NOTES C8) is blocklayout.EncodeGossip /
// blocklayout.DecodeGossip, pinned by the presence_gossip vectors.
const (
	// MaxGossipBytes bounds one message.
	MaxGossipBytes = blocklayout.MaxGossipBytes
	// gossipPerHeight views per sender and height are stored (the
	// newest replaces the one before); more at that height are excess,
	// dropped and counted, the peer kept (issue 28: limits per height, not
	// per second: a validator catching up publishes a view for every
	// height it commits, dozens a second, and a stalled one a burst when
	// it resumes; a per-second bucket cut both). An honest validator
	// publishes one view per height; two leaves room for a republish.
	gossipPerHeight = 2
	// gossipHeightSlack bounds a view's height by the receiver's own
	// committed height + 2. A validator publishes h right after committing
	// h, and the receiver commits h (+2/3 precommitted it, so it is at most
	// a round behind) moments later: an honest view is at most one ahead of
	// a receiver in step with consensus, and one more covers a receiver
	// that is a block behind (a slow validator, or Commit racing the
	// read). A receiver further behind proposes nothing until it catches
	// up, and the view it drops is replaced the next block. The bound keeps
	// a view from outliving PRESENCE_TIMEOUT_BLOCKS + 2 of the receiver's
	// blocks: before it, a view claiming a huge height never went stale and
	// shadowed every later one (the h ≥ stored-h rule).
	gossipHeightSlack = 2
)

// ErrGossip: a presence message is malformed (blocklayout.ErrGossip).
var ErrGossip = blocklayout.ErrGossip

// peerView is one peer's last stored view, the views stored at its
// height, and the greatest height the peer claimed as a validator in
// force at the receiver's height (claimed; App.peerHead).
type peerView struct {
	h       uint64
	indices []int
	atH     int
	claim   uint64
}

// presenceReactor is the gossip's CometBFT reactor. Views are kept per
// connected peer and dropped when the peer goes.
type presenceReactor struct {
	p2p.BaseReactor
	log *slog.Logger
	// validators lists the peer_pubkeys of the validator-set snapshots in
	// force at a height (App.gossipValidators); height is the receiver's
	// committed height.
	validators func(h uint64) []cip11.Hash
	height     func() uint64

	mu    sync.Mutex
	views map[p2p.ID]*peerView
	ids   map[cip11.Hash]p2p.ID // peer_pubkey → p2p ID, computed once
	// counters (Stats)
	sent, received, dropped uint64
	notValidator, future    uint64
	stale, excess           uint64
	bytesSent               uint64
}

func newPresenceReactor(log *slog.Logger, validators func(h uint64) []cip11.Hash, height func() uint64) *presenceReactor {
	r := &presenceReactor{log: log, validators: validators, height: height,
		views: map[p2p.ID]*peerView{}, ids: map[cip11.Hash]p2p.ID{}}
	r.BaseReactor = *p2p.NewBaseReactor("CIP11Presence", r)
	return r
}

// Reasons a well-formed view is not stored (GossipStats, the Debug log).
const (
	reasonNotValidator = "the sender's node key is no peer_pubkey of a validator set in force at the view's height"
	reasonFuture       = "the view's height is past the receiver's height + gossipHeightSlack"
	reasonStale        = "the view is older than the sender's stored view"
	reasonExcess       = "the sender already had gossipPerHeight views stored at this height"
)

// isValidator reports whether id is the p2p ID of a validator in keys.
// r.mu held.
func (r *presenceReactor) isValidator(id p2p.ID, keys []cip11.Hash) bool {
	for _, k := range keys {
		x, ok := r.ids[k]
		if !ok {
			x = p2p.PubKeyToID(cmted25519.PubKey(k[:]))
			r.ids[k] = x
		}
		if x == id {
			return true
		}
	}
	return false
}

// GetChannels implements p2p.Reactor.
func (r *presenceReactor) GetChannels() []*p2p.ChannelDescriptor {
	return []*p2p.ChannelDescriptor{{ID: PresenceChannel, Priority: 1, SendQueueCapacity: 4,
		RecvMessageCapacity: MaxGossipBytes + 16, MessageType: &gogotypes.BytesValue{}}}
}

// AddPeer implements p2p.Reactor.
func (r *presenceReactor) AddPeer(p p2p.Peer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.views[p.ID()] = &peerView{}
}

// RemovePeer implements p2p.Reactor.
func (r *presenceReactor) RemovePeer(p p2p.Peer, _ any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.views, p.ID())
}

// Receive implements p2p.Reactor: only a malformed message disconnects
// the peer. A well-formed view is stored when its sender is a validator in
// force at its height, its height is at most the receiver's +
// gossipHeightSlack, at least the sender's stored view's, and fewer than
// gossipPerHeight views of the sender are stored at it; otherwise it is
// dropped, counted by reason, the peer kept. Its view is never trusted
// beyond fail-open.
func (r *presenceReactor) Receive(e p2p.Envelope) {
	if e.Src == nil {
		return
	}
	msg, ok := e.Message.(*gogotypes.BytesValue)
	if !ok {
		r.drop(e.Src, fmt.Errorf("%w: message type %T", ErrGossip, e.Message))
		return
	}
	h, set, err := blocklayout.DecodeGossip(msg.Value)
	if err != nil {
		r.drop(e.Src, err)
		return
	}
	own := r.height()
	ownKeys := r.validators(own)
	keys := ownKeys
	future := h > own && h-own > gossipHeightSlack
	if !future && h != own {
		keys = r.validators(h)
	}
	r.mu.Lock()
	id := e.Src.ID()
	v := r.views[id]
	if v == nil {
		v = &peerView{}
		r.views[id] = v
	}
	if h > v.claim && r.isValidator(id, ownKeys) {
		v.claim = h // a height claim for the head (App.peerHead), stored or not
	}
	var reason string
	switch {
	case future:
		reason = reasonFuture
		r.future++
	case !r.isValidator(id, keys):
		reason = reasonNotValidator
		r.notValidator++
	case h < v.h:
		reason = reasonStale
		r.stale++
	case h == v.h && v.atH >= gossipPerHeight:
		reason = reasonExcess
		r.excess++
	case h == v.h:
		v.indices = set.Indices()
		v.atH++
	default:
		v.h, v.indices, v.atH = h, set.Indices(), 1
	}
	r.received++
	r.mu.Unlock()
	if reason != "" { // Debug: a flood must not flood the log
		r.log.Debug("presence gossip: view not stored", "peer", id, "height", h, "own_height", own, "reason", reason)
	}
}

// claimed is the greatest height peer id claimed while a validator in
// force at the receiver's height (0: none, or not connected).
func (r *presenceReactor) claimed(id p2p.ID) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v := r.views[id]; v != nil {
		return v.claim
	}
	return 0
}

func (r *presenceReactor) drop(p p2p.Peer, err error) {
	r.mu.Lock()
	r.dropped++
	r.mu.Unlock()
	r.log.Warn("presence gossip: peer dropped", "peer", p.ID(), "err", err)
	if r.Switch != nil {
		r.Switch.StopPeerForError(p, err)
	}
}

// publish sends this validator's view at height h to every peer.
func (r *presenceReactor) publish(h uint64, n int, field []byte) {
	b, err := blocklayout.EncodeGossip(h, n, field)
	if err != nil || r.Switch == nil {
		return
	}
	r.Switch.TryBroadcast(p2p.Envelope{ChannelID: PresenceChannel, Message: &gogotypes.BytesValue{Value: b}})
	r.mu.Lock()
	r.sent++
	r.bytesSent += uint64(len(b))
	r.mu.Unlock()
}

// union adds to own (indices over registry(h−1), size n) every peer's
// view published for a height ≥ minH, restricted to indices < n.
func (r *presenceReactor) union(own []int, n int, minH uint64) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	// a bitmap over registry(h−1): no sort, one pass over each view
	words := make([]uint64, (n+63)/64)
	set := func(i int) {
		if i >= 0 && i < n {
			words[i/64] |= 1 << (i % 64)
		}
	}
	for _, i := range own {
		set(i)
	}
	for _, v := range r.views {
		if v.h < minH || v.h == 0 {
			continue
		}
		for _, i := range v.indices {
			set(i)
		}
	}
	var all []int
	for w, x := range words {
		for x != 0 {
			b := bits.TrailingZeros64(x)
			all = append(all, w*64+b)
			x &= x - 1
		}
	}
	return all
}

// GossipStats are the reactor's counters: Dropped counts peers
// disconnected (a malformed message only); NotValidator, Future, Stale
// and Excess count well-formed views not stored, by reason (the sender is
// no validator in force at the view's height; the height is past the
// receiver's + gossipHeightSlack; it is below the sender's stored view's;
// the sender already has gossipPerHeight views stored at it).
type GossipStats struct {
	Sent, Received, Dropped, BytesSent  uint64
	NotValidator, Future, Stale, Excess uint64
}

func (r *presenceReactor) stats() GossipStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return GossipStats{Sent: r.sent, Received: r.received, Dropped: r.dropped, BytesSent: r.bytesSent,
		NotValidator: r.notValidator, Future: r.future, Stale: r.stale, Excess: r.excess}
}

// gossipValidators are the peer_pubkeys of the validator-set snapshots in
// force at h (§5.3–§5.4), whose views the reactor stores: the epoch
// active at h and, while h < its activation + OVERLAP_BLOCKS, its
// predecessor (§5.4 retirement; a schedule never activates inside an
// overlap, SPEC-NOTES C9, so no earlier epoch is in force).
func (a *App) gossipValidators(h uint64) []cip11.Hash {
	return inForce(a.sched.Load().All(), h, a.g.P().OverlapBlocks)
}

// inForce is gossipValidators over epochs (ascending by activation).
func inForce(epochs []*node.ScheduledEpoch, h, overlap uint64) []cip11.Hash {
	if len(epochs) == 0 {
		return nil
	}
	i := 0
	for j := 1; j < len(epochs); j++ {
		if epochs[j].Activation <= h {
			i = j
		}
	}
	var keys []cip11.Hash
	for _, v := range epochs[i].Set {
		keys = append(keys, v.PeerPubKey)
	}
	if a := epochs[i].Activation; i > 0 && (a > ^uint64(0)-overlap || h < a+overlap) {
		for _, v := range epochs[i-1].Set {
			keys = append(keys, v.PeerPubKey)
		}
	}
	return keys
}
