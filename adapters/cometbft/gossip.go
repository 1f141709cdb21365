package cometbft

import (
	"fmt"
	"log/slog"
	"math/bits"
	"sync"
	"time"

	"github.com/cometbft/cometbft/p2p"
	gogotypes "github.com/cosmos/gogoproto/types"

	"github.com/cip11/cip11/blocklayout"
)

// Presence gossip (§8.2, D33; issue 20 §1): after committing height h,
// every validator publishes the runners it holds live streams to, as a
// PresenceInputV1 over registry(h), on its own CometBFT p2p channel. The
// proposer of h+1 proposes the union of its own local presence and its
// peers' views for heights ≥ h+1 − PRESENCE_TIMEOUT_BLOCKS, restricted to
// registry(h) (§8.1, §8.5). Fail-open (§7.3): a fabricated bit costs one
// ack timeout, a suppressed one leaves the runner in the fallback pool.

// PresenceChannel is the gossip's p2p channel (unused by CometBFT v1.0.1).
const PresenceChannel = byte(0x70)

// The message codec (D33, SPEC-NOTES C8) is blocklayout.EncodeGossip /
// blocklayout.DecodeGossip, pinned by the presence_gossip vectors.
const (
	// MaxGossipBytes bounds one message.
	MaxGossipBytes = blocklayout.MaxGossipBytes
	// gossipBurst messages per peer are allowed at once, refilled at
	// gossipRate a second; a peer above it is disconnected.
	gossipBurst = 20
	gossipRate  = 10
)

// ErrGossip: a presence message is malformed (blocklayout.ErrGossip).
var ErrGossip = blocklayout.ErrGossip

// peerView is one peer's last published view.
type peerView struct {
	h       uint64
	indices []int
	// token bucket
	tokens float64
	at     time.Time
}

// presenceReactor is the gossip's CometBFT reactor. Views are kept per
// connected peer and dropped when the peer goes.
type presenceReactor struct {
	p2p.BaseReactor
	log *slog.Logger
	now func() time.Time

	mu    sync.Mutex
	views map[p2p.ID]*peerView
	// counters (Stats)
	sent, received, dropped uint64
	bytesSent               uint64
}

func newPresenceReactor(log *slog.Logger) *presenceReactor {
	r := &presenceReactor{log: log, now: time.Now, views: map[p2p.ID]*peerView{}}
	r.BaseReactor = *p2p.NewBaseReactor("CIP11Presence", r)
	return r
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
	r.views[p.ID()] = &peerView{tokens: gossipBurst, at: r.now()}
}

// RemovePeer implements p2p.Reactor.
func (r *presenceReactor) RemovePeer(p p2p.Peer, _ any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.views, p.ID())
}

// Receive implements p2p.Reactor: a malformed message or a flood
// disconnects the peer; its view is never trusted beyond fail-open.
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
	r.mu.Lock()
	v := r.views[e.Src.ID()]
	if v == nil {
		v = &peerView{tokens: gossipBurst, at: r.now()}
		r.views[e.Src.ID()] = v
	}
	now := r.now()
	v.tokens = min(gossipBurst, v.tokens+now.Sub(v.at).Seconds()*gossipRate)
	v.at = now
	v.tokens--
	flood := v.tokens < 0
	if !flood && h >= v.h {
		v.h, v.indices = h, set.Indices()
	}
	r.received++
	r.mu.Unlock()
	if flood {
		r.drop(e.Src, fmt.Errorf("%w: more than %d messages a second", ErrGossip, gossipRate))
	}
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

// GossipStats are the reactor's counters.
type GossipStats struct {
	Sent, Received, Dropped, BytesSent uint64
}

func (r *presenceReactor) stats() GossipStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return GossipStats{Sent: r.sent, Received: r.received, Dropped: r.dropped, BytesSent: r.bytesSent}
}
