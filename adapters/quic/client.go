package quic

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	qgo "github.com/quic-go/quic-go"

	"github.com/cip11/cip11"
	cjob "github.com/cip11/cip11/job"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

// ClientConfig configures a runner [Client]. Zero durations and limits take
// the documented defaults.
type ClientConfig struct {
	Key     *wire.RunnerKey // the runner's registered identity (§3.3)
	ChainID uint64
	Params  cip11.Params

	Validators ValidatorSets // §5.4 snapshot(s): Sub(R) and validator identity
	Directory  Directory     // validator peer_pubkey → UDP address
	Executor   Executor      // runs accepted jobs (§10.1)
	// Specs decodes job_spec with the pinned codec (optional: hash check only).
	Specs wire.JobSpecDecoder
	// Submitter self-submits retained result transactions (§10.3); nil
	// disables rebroadcast.
	Submitter ResultSubmitter
	// MaxConcurrent is the runner's capacity (16): at it, new pushes are
	// Reject(AtCapacity) and a BackpressureSignal{accepting_new: false} goes
	// to every validator (§6.4).
	MaxConcurrent int
	// Assigned, if set, is the runner's chain view of its assignments: it
	// reports whether runner is still assigned to job at height, the
	// assignment_height of a push (§10.1). A push it denies, or cannot
	// answer (an error), is acked Reject(UnverifiableAssignment) and not
	// executed. It is called once per first valid push of a job_id, from
	// the push's stream goroutine, with a context that ends on Close or
	// after HandshakeTimeout. Nil skips the check.
	Assigned func(ctx context.Context, job cip11.Hash, runner cip11.Address, height uint64) (bool, error)
	// Rand is the §11.3 jitter source (a ChaCha8 seeded from crypto/rand).
	Rand local.RandSource

	// Offline makes a client with no socket and no connections: §14 with
	// CIP11_TRANSPORT_ENABLED off. It only runs assignments given to
	// [Client.Deliver] (the poll answer), with the same checks,
	// deduplication and §10.3 retention; Tick drives its reveals and
	// rebroadcasts.
	Offline bool

	Listen     string         // UDP address (":0": every interface, an ephemeral port)
	PacketConn net.PacketConn // used instead of Listen if set; not closed by the Client

	HandshakeTimeout time.Duration // dial + CIP-11 handshake + first pong (10 s)
	IdleTimeout      time.Duration // QUIC idle timeout (30 s)
	KeepAlive        time.Duration // QUIC keep-alive (5 s)
	GoodbyeLinger    time.Duration // (500 ms)
	// ProbeEvery, if > 0, makes every admitted connection ping at that
	// interval whenever no ping is outstanding, at the current height:
	// for a runner without its own chain view, whose heights then come
	// from the validators' pongs (§6.3). 0 (the default) pings only on
	// new heights.
	ProbeEvery time.Duration
	// PingSpread, if > 0, sends each connection's per-height HeartbeatPing
	// (§6.3) after a random delay below it instead of at once, so that a
	// runner's signatures, and the validators' verifications and pongs, do
	// not all land in the moment a block commits, when its pushes go out.
	// The spread is capped at half the time between the last two heights,
	// so the ping still goes out within the height it names.
	PingSpread time.Duration
	// OnPongRejected is told about every rejected HeartbeatPong (§6.3).
	OnPongRejected func(v validators.PeerKey, err error)
	// OnPongHeight, if set, is told the block_height of every verified
	// HeartbeatPong and the validator that signed it (a runner's chain
	// view learns from it which validator is ahead). It is called from the
	// link's read loop: it must not block.
	OnPongHeight func(v validators.PeerKey, h uint64)
	// Behind, if set, is told the assignment_height of a push that arrived
	// ahead of the runner's finalized height, and the validator that
	// pushed it, once per such push, before the push waits for it (§10.1,
	// SPEC-NOTES N1): a runner reads its chain view at once — that
	// validator's, which has applied the height — instead of at its next
	// poll, and Ticks the client. It must not block.
	Behind func(v validators.PeerKey, h uint64)
	// ModeAReceipts makes the runner seek §8.3 Mode-A PresenceReceipts
	// (SPEC-NOTES N18): its Hello offers version 0x0101
	// ([wire.VersionReceipts]) instead of 0x0100, and on every admitted
	// link whose negotiated version is 0x0101 a PresenceReceiptRequest
	// follows each HeartbeatPing. Receipts that pass [wire.CheckReceipt]
	// are kept, the newest per validator ([Client.Receipts]); others are
	// dropped and logged. Off (the default), the runner speaks 0x0100
	// exactly as before.
	ModeAReceipts bool
	// Logger receives admissions and connection loss (Info) and refusals
	// (Warn, with the §12.5 reason and detail, at most one per validator
	// every 10 s). Nil discards.
	Logger *slog.Logger
}

// ClientStats are cumulative counters. Delivered counts the assignments
// [Client.Deliver] accepted (Executions counts pushed and delivered ones).
// GoodbyesSent and GoodbyesReceived count §12.5 Goodbye frames by reason
// (index: the reason byte): sent, every one the runner wrote; received,
// every one a validator sent, verified or advisory. Their OverlapExpired
// entries count the epoch-E links closed at the §5.3 point-4 cutoff by
// the runner and by the validators.
//
// ReceiptRequests counts the PresenceReceiptRequests sent, ReceiptsOK the
// received PresenceReceipts that passed [wire.CheckReceipt] and
// ReceiptsRejected those that did not (ClientConfig.ModeAReceipts).
type ClientStats struct {
	Dials, Admissions, PingsSent, PongsOK, PongsRejected, Executions, Acks, Delivered int64
	GoodbyesSent, GoodbyesReceived                                                    [NumGoodbyeReasons]int64
	ReceiptRequests, ReceiptsOK, ReceiptsRejected                                     int64
	// PushesAttested counts pushes ahead of the runner's view that the push
	// itself settled (SPEC-NOTES N1, one height above the validator's last
	// pong); PushesWaited those that waited for the view instead (§10.1,
	// at most assignmentWait), PushWaitMicros the time they waited in all.
	PushesAttested, PushesWaited, PushWaitMicros int64
}

// Client is a runner's CIP-11 endpoint: one UDP socket and one connection
// to each validator of Sub(R) (§4.2, §5.1, §6.1) — across an E → E+1
// overlap one per validator and epoch pair of Sub_E(R) ∪ Sub_{E+1}(R)
// (§5.3, [Client.Links]) — kept up with the §11.3 backoff, heartbeats on
// every new height (§6.3) and push handling with deduplication by job_id
// across validators and connections (§10.1–§10.5).
type Client struct {
	cfg    ClientConfig
	self   wire.PubKey
	udp    net.PacketConn
	ownUDP bool
	tr     *qgo.Transport
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the client starts; Add only under mu while !closed
	log    *slog.Logger
	logLim *logLimiter
	// stopAfter unregisters the shutdown NewClient's context would start;
	// done is closed once Close has finished.
	stopAfter func() bool
	done      chan struct{}
	stats     struct {
		dials, admissions, pings, pongsOK, pongsRejected, executions, acks, delivered atomic.Int64
		goodbyesSent, goodbyesRecv                                                    [NumGoodbyeReasons]atomic.Int64
		refusalSeq                                                                    atomic.Uint64
		receiptRequests, receiptsOK, receiptsRejected                                 atomic.Int64
		pushesAttested, pushesWaited, pushWaitMicros                                  atomic.Int64
	}
	// serveLat is each push's time from its frame read to its ack written
	// ([Client.ServeLatency]).
	serveLat struct {
		mu sync.Mutex
		h  cjob.Histogram
	}

	mu        sync.Mutex
	rng       local.RandSource
	height    uint64
	tick      chan struct{} // closed and replaced on every new height
	tickAt    time.Time     // when the last new height arrived (Tick)
	tickEvery time.Duration // the time between the last two heights
	links     map[linkKey]*link
	jobs      map[cip11.Hash]*job
	active    int
	full      bool          // at capacity: the BackpressureSignal state (§6.4)
	bpWake    chan struct{} // wakes backpressureLoop (capacity 1)
	pairsOf   []wire.EpochPair
	// receipts are the newest verified §8.3 PresenceReceipt per validator
	// (ClientConfig.ModeAReceipts, SPEC-NOTES N18).
	receipts map[validators.PeerKey]wire.PresenceReceipt
	closed   bool
}

// linkKey names a link: a validator and the epoch pair it is dialled
// under. Across an overlap a validator in Sub_E(R) and Sub_{E+1}(R) has
// two links, one per pair (§5.3 points 1–2: a connection is valid for one
// snapshot only).
type linkKey struct {
	peer validators.PeerKey
	pair wire.EpochPair
}

// link is the runner's connection to one validator under one epoch pair,
// across reconnects.
type link struct {
	c    *Client
	peer validators.PeerKey
	pair wire.EpochPair
	stop chan struct{}

	mu          sync.Mutex
	qc          *qgo.Conn
	ctl         *frameStream
	sess        *wire.Session
	snap        *validators.Snapshot
	nonce       uint64 // next ping nonce; restarts at 0 per connection (§6.3)
	outstanding uint64
	pinged      bool
	lastPing    uint64
	// pongHeight is the greatest block_height of a verified pong on this
	// link (any of its connections): the validator's own signed word for
	// the height it had applied (§6.3), which bounds the heights its pushes
	// may attest (attests, SPEC-NOTES N1).
	pongHeight uint64
	admitted   chan struct{} // closed at the first valid pong
	up         bool
	retryAt    uint64 // Goodbye.retry_after_blocks gate (§12.5)
	attempt    uint32
	refusal    *RefusedError
	refusalSeq uint64 // order of refusal among the client's links (LastRefusal)
	// ended is set by the validator's verified Goodbye{OverlapExpired} on
	// a previous-epoch link: the link never dials again (§5.3 point 4)
	// and waits for reconcile to retire it.
	ended bool
}

func (c *ClientConfig) defaults() error {
	switch {
	case c.Key == nil:
		return ErrNilKey
	case c.Validators == nil:
		return fmt.Errorf("%w: Validators", ErrNilDependency)
	case c.Directory == nil:
		return fmt.Errorf("%w: Directory", ErrNilDependency)
	case c.Executor == nil:
		return fmt.Errorf("%w: Executor", ErrNilDependency)
	}
	if err := c.Params.Validate(); err != nil {
		return err
	}
	if c.Listen == "" {
		// the unspecified address: a socket bound to 127.0.0.1 cannot send
		// to a validator on another host (EINVAL), issue 28
		c.Listen = ":0"
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 16
	}
	if c.Rand == nil {
		var seed [32]byte
		_, _ = crand.Read(seed[:])
		c.Rand = rand.NewChaCha8(seed)
	}
	c.HandshakeTimeout = orDefault(c.HandshakeTimeout, 10*time.Second)
	c.IdleTimeout = orDefault(c.IdleTimeout, 30*time.Second)
	c.KeepAlive = orDefault(c.KeepAlive, 5*time.Second)
	c.GoodbyeLinger = orDefault(c.GoodbyeLinger, 500*time.Millisecond)
	return nil
}

// NewClient validates cfg, binds one UDP socket and connects to Sub(R) at
// height h, the runner's finalized height. Cancelling ctx closes the
// client as [Client.Close] does; Close still waits for it.
func NewClient(ctx context.Context, cfg ClientConfig, h uint64) (*Client, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	c := &Client{
		cfg: cfg, self: cfg.Key.PubKey(), height: h, tick: make(chan struct{}), rng: cfg.Rand,
		links: map[linkKey]*link{}, jobs: map[cip11.Hash]*job{}, done: make(chan struct{}), receipts: map[validators.PeerKey]wire.PresenceReceipt{},
		bpWake: make(chan struct{}, 1), log: loggerOr(cfg.Logger), logLim: newLogLimiter(refusalLogInterval, time.Now),
	}
	if !cfg.Offline {
		c.udp = cfg.PacketConn
		if c.udp == nil {
			var err error
			if c.udp, err = net.ListenPacket("udp", cfg.Listen); err != nil {
				return nil, err
			}
			c.ownUDP = true
		}
		c.tr = &qgo.Transport{Conn: c.udp}
	}
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.wg.Add(1)
	go c.backpressureLoop()
	var err error
	if !cfg.Offline {
		c.mu.Lock()
		err = c.reconcile(h)
		c.mu.Unlock()
	}
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	c.stopAfter = context.AfterFunc(ctx, func() { _ = c.Close() })
	return c, nil
}

// ServeLatency is the histogram, in microseconds, of the time from a
// push's JobAssignment read to its JobAck written: the runner's part of a
// validator's push latency (§10.1 checks, the still-assigned hook, any
// wait for the view, signing the ack).
func (c *Client) ServeLatency() cjob.Histogram {
	c.serveLat.mu.Lock()
	defer c.serveLat.mu.Unlock()
	return c.serveLat.h
}

// Stats returns a snapshot of the counters.
func (c *Client) Stats() ClientStats {
	st := ClientStats{
		Dials: c.stats.dials.Load(), Admissions: c.stats.admissions.Load(), PingsSent: c.stats.pings.Load(),
		PongsOK: c.stats.pongsOK.Load(), PongsRejected: c.stats.pongsRejected.Load(),
		Executions: c.stats.executions.Load(), Acks: c.stats.acks.Load(), Delivered: c.stats.delivered.Load(),
		ReceiptRequests: c.stats.receiptRequests.Load(), ReceiptsOK: c.stats.receiptsOK.Load(), ReceiptsRejected: c.stats.receiptsRejected.Load(),
		PushesAttested: c.stats.pushesAttested.Load(), PushesWaited: c.stats.pushesWaited.Load(), PushWaitMicros: c.stats.pushWaitMicros.Load(),
	}
	for i := range st.GoodbyesSent {
		st.GoodbyesSent[i] = c.stats.goodbyesSent[i].Load()
		st.GoodbyesReceived[i] = c.stats.goodbyesRecv[i].Load()
	}
	return st
}

// say sends a Goodbye (sayGoodbye) and counts it if it was written.
func (c *Client) say(qc *qgo.Conn, f *frameStream, g *wire.Goodbye) {
	sayGoodbye(qc, f, g, c.cfg.GoodbyeLinger, &c.stats.goodbyesSent)
}

// received counts a validator's Goodbye by reason.
func (c *Client) received(g *RefusedError) {
	if int(g.Reason) < NumGoodbyeReasons {
		c.stats.goodbyesRecv[g.Reason].Add(1)
	}
}

// subset is the links the runner holds at h (§5.3 point 1): for each
// snapshot valid at h — Current from its activation height, Previous
// until activation_height(Current) + OVERLAP_BLOCKS — every validator of
// Sub_epoch(R) under that snapshot's own pair. A validator in both
// subsets is in it twice, once per pair (point 2: never a cross-product).
// It also returns the valid pairs, Current first.
func (c *Client) subset(h uint64) (map[linkKey]bool, []wire.EpochPair, error) {
	ep, err := c.cfg.Validators.EpochsAt(h)
	if err != nil {
		return nil, nil, err
	}
	want := map[linkKey]bool{}
	for _, s := range []*validators.Snapshot{ep.Current, ep.Previous} {
		if s == nil {
			continue
		}
		if _, err := ep.Select(h, s.Pair(), c.cfg.Params); err != nil {
			continue
		}
		sub, err := s.Sub(c.self, c.cfg.Params)
		if err != nil {
			return nil, nil, err
		}
		for _, v := range sub {
			want[linkKey{v, s.Pair()}] = true
		}
	}
	return want, ep.Pairs(h, c.cfg.Params), nil
}

// reconcile opens a link for every (validator, pair) newly held and
// retires every link whose pair is no longer valid with
// Goodbye{OverlapExpired} (§5.3 point 4): from activation_height(E+1)
// the runner holds Sub_E(R) ∪ Sub_{E+1}(R), each validator of
// Sub_{E+1}(R) under E+1's pair even when it also keeps its epoch-E link
// (no delivery gap), and at the cutoff every epoch-E link goes. c.mu held.
func (c *Client) reconcile(h uint64) error {
	want, pairs, err := c.subset(h)
	if err != nil {
		return err
	}
	c.pairsOf = pairs
	for k := range want {
		if c.links[k] == nil {
			l := &link{c: c, peer: k.peer, pair: k.pair, stop: make(chan struct{})}
			c.links[k] = l
			c.wg.Add(1) // c.mu held and not closed (NewClient, Tick)
			go l.run()
		}
	}
	for k, l := range c.links {
		if !want[k] {
			delete(c.links, k)
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				l.retire(wire.GoodbyeOverlapExpired)
			}()
		}
	}
	return nil
}

// Tick is the runner's new finalized height h (§6.3: a HeartbeatPing on
// every new height). A verified HeartbeatPong whose block_height is ahead
// of the last Tick ticks the client too. It also re-evaluates Sub(R), sends reveals whose
// window opened and rebroadcasts retained result transactions (§10.3).
func (c *Client) Tick(h uint64) {
	c.mu.Lock()
	if c.closed || h <= c.height {
		c.mu.Unlock()
		return
	}
	c.height = h
	now := time.Now()
	if !c.tickAt.IsZero() {
		c.tickEvery = now.Sub(c.tickAt)
	}
	c.tickAt = now
	spread := c.cfg.PingSpread
	if c.tickEvery > 0 && spread > c.tickEvery/2 {
		spread = c.tickEvery / 2 // within the first half of the height
	}
	close(c.tick)
	c.tick = make(chan struct{})
	if ep, err := c.cfg.Validators.EpochsAt(h); err == nil && !c.cfg.Offline && !samePairs(ep.Pairs(h, c.cfg.Params), c.pairsOf) {
		_ = c.reconcile(h)
	}
	links := make([]*link, 0, len(c.links))
	for _, l := range c.links {
		links = append(links, l)
	}
	c.mu.Unlock()
	for _, l := range links {
		if spread <= 0 {
			l.ping(h)
			continue
		}
		if !c.track() {
			return
		}
		d := time.Duration(rand.Int64N(int64(spread)))
		go func() {
			defer c.wg.Done()
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				l.ping(h)
			case <-c.ctx.Done():
			}
		}()
	}
	c.jobsTick(h)
}

func samePairs(a, b []wire.EpochPair) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Height is the newest height given to Tick.
func (c *Client) Height() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.height
}

// Connected lists the validators with an admitted connection, each once
// (across an overlap a validator may hold two, one per epoch pair).
func (c *Client) Connected() []validators.PeerKey {
	var out []validators.PeerKey
	for _, l := range c.Links() {
		if l.Up && !slices.Contains(out, l.Validator) {
			out = append(out, l.Validator)
		}
	}
	return out
}

// AnyUp reports whether at least one link is up: Connected without
// building the list (the runner asks it every height, §14 phase 2).
func (c *Client) AnyUp() bool {
	for _, l := range c.linkList() {
		l.mu.Lock()
		up := l.up
		l.mu.Unlock()
		if up {
			return true
		}
	}
	return false
}

// LinkState is one link the runner holds (§5.3 point 1): a validator of
// Sub_epoch(R) and the epoch pair it is dialled under, and whether the
// validator admitted it (its first HeartbeatPong verified) and it is up.
type LinkState struct {
	Validator validators.PeerKey
	Pair      wire.EpochPair
	Up        bool
}

// Links lists the links the runner holds now, ordered by subset_epoch,
// then validator: across an E → E+1 overlap, Sub_E(R) under E's pair and
// Sub_{E+1}(R) under E+1's, a validator in both listed twice; after the
// cutoff, E+1's only. Sampled once a height it is a per-runner overlap
// timeline.
func (c *Client) Links() []LinkState {
	out := make([]LinkState, 0, 8)
	for _, l := range c.linkList() {
		l.mu.Lock()
		out = append(out, LinkState{Validator: l.peer, Pair: l.pair, Up: l.up})
		l.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b LinkState) int {
		if a.Pair.SubsetEpoch != b.Pair.SubsetEpoch {
			return cmp.Compare(a.Pair.SubsetEpoch, b.Pair.SubsetEpoch)
		}
		return a.Validator.Compare(b.Validator)
	})
	return out
}

// LastRefusal is the most recent Goodbye v sent this runner on any of its
// links, or nil. The Goodbye{OverlapExpired} ending a previous-epoch link
// is the overlap's normal end, not a refusal, and is not recorded.
func (c *Client) LastRefusal(v validators.PeerKey) *RefusedError {
	var last *RefusedError
	var seq uint64
	for _, l := range c.linkList() {
		if l.peer != v {
			continue
		}
		l.mu.Lock()
		if l.refusal != nil && l.refusalSeq >= seq {
			last, seq = l.refusal, l.refusalSeq
		}
		l.mu.Unlock()
	}
	return last
}

// waitTick returns a channel closed at the next new height.
func (c *Client) waitTick() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tick
}

// Close says Goodbye{Shutdown} on every connection, waits for every
// goroutine the client started and releases the socket. It is idempotent
// and safe to call concurrently: every call returns once the client is
// down (later calls return nil).
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.done
		return nil
	}
	c.closed = true
	defer close(c.done)
	if c.stopAfter != nil {
		c.stopAfter()
	}
	links := make([]*link, 0, len(c.links))
	for _, l := range c.links {
		links = append(links, l)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.retire(wire.GoodbyeShutdown)
		}()
	}
	wg.Wait()
	c.cancel()
	var err error
	if c.tr != nil {
		err = c.tr.Close()
	}
	c.wg.Wait()
	if c.ownUDP {
		_ = c.udp.Close()
	}
	return err
}

// version is the Hello version the runner offers: 0x0101 when it seeks
// Mode-A receipts, else 0x0100 (SPEC-NOTES N18).
func (c *Client) version() uint16 {
	if c.cfg.ModeAReceipts {
		return wire.VersionReceipts
	}
	return wire.Version
}

// requestReceipt sends a PresenceReceiptRequest with fresh random nonce
// entropy (§8.3: nonce_echo is replay entropy, not checked on chain).
// l.mu held, the session 0x0101.
func (l *link) requestReceipt() {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return
	}
	if err := l.ctl.write(&wire.PresenceReceiptRequest{Nonce: binary.BigEndian.Uint64(b[:])}); err != nil {
		return
	}
	l.c.stats.receiptRequests.Add(1)
}

// onReceipt keeps a PresenceReceipt that passes wire.CheckReceipt on this
// connection — from its validator, for this runner, under its epoch pair,
// signed for this chain — if it is the newest (highest block_height) from
// that validator; a bad one is dropped and logged, and the connection
// stays (SPEC-NOTES N18).
func (l *link) onReceipt(sess *wire.Session, r *wire.PresenceReceipt) {
	c := l.c
	if err := wire.CheckReceipt(sess, r); err != nil {
		c.stats.receiptsRejected.Add(1)
		if c.logLim.allow("receipt " + hex.EncodeToString(l.peer[:])) {
			c.log.Warn("quic: dropped a bad PresenceReceipt", "validator", hex.EncodeToString(l.peer[:]), "err", err)
		}
		return
	}
	c.stats.receiptsOK.Add(1)
	c.mu.Lock()
	if old, ok := c.receipts[l.peer]; !ok || r.BlockHeight >= old.BlockHeight {
		c.receipts[l.peer] = *r
	}
	c.mu.Unlock()
}

// Receipts returns a copy of the newest verified §8.3 PresenceReceipt of
// each validator (ClientConfig.ModeAReceipts), ordered by the validator's
// raw peer_pubkey: the material of a SubmitPresenceCertificate. Receipts
// are kept however old they get; the chain judges freshness (§8.3).
func (c *Client) Receipts() []wire.PresenceReceipt {
	c.mu.Lock()
	keys := slices.SortedFunc(maps.Keys(c.receipts), validators.PeerKey.Compare)
	out := make([]wire.PresenceReceipt, len(keys))
	for i, k := range keys {
		out[i] = c.receipts[k]
	}
	c.mu.Unlock()
	return out
}

// control sends a signed control frame built by mk on the link, if up.
func (l *link) control(mk func(s *wire.Session) (wire.Frame, error)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess == nil {
		return ErrNotConnected
	}
	fr, err := mk(l.sess)
	if err != nil {
		return err
	}
	return l.ctl.write(fr)
}

// SendCapabilityDelta signs and sends a §6.5 CapabilityDelta to every
// connected validator (advisory; never an on-chain change).
func (c *Client) SendCapabilityDelta(d wire.CapabilityDelta) error {
	var first error
	for _, l := range c.linkList() {
		err := l.control(func(s *wire.Session) (wire.Frame, error) {
			f := d
			f.BlockHeight = c.Height()
			return &f, f.Sign(s, c.cfg.Key)
		})
		if err != nil && !errors.Is(err, ErrNotConnected) && first == nil {
			first = err
		}
	}
	return first
}

// track adds one goroutine to the client's wait group unless the client
// is closed (Close waits for them): no wg.Add once Close began.
func (c *Client) track() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

func (c *Client) linkList() []*link {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*link, 0, len(c.links))
	for _, l := range c.links {
		out = append(out, l)
	}
	return out
}
