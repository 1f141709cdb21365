package quic

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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

// Stats returns a snapshot of the counters.
func (c *Client) Stats() ClientStats {
	st := ClientStats{
		Dials: c.stats.dials.Load(), Admissions: c.stats.admissions.Load(), PingsSent: c.stats.pings.Load(),
		PongsOK: c.stats.pongsOK.Load(), PongsRejected: c.stats.pongsRejected.Load(),
		Executions: c.stats.executions.Load(), Acks: c.stats.acks.Load(), Delivered: c.stats.delivered.Load(),
		ReceiptRequests: c.stats.receiptRequests.Load(), ReceiptsOK: c.stats.receiptsOK.Load(), ReceiptsRejected: c.stats.receiptsRejected.Load(),
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

// retire stops the link's reconnect loop and closes its connection with a
// signed Goodbye.
func (l *link) retire(reason wire.GoodbyeReason) {
	l.mu.Lock()
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	qc, ctl, sess := l.qc, l.ctl, l.sess
	l.mu.Unlock()
	if qc != nil && sess != nil {
		l.c.say(qc, ctl, goodbye(sess, l.c.cfg.Key, reason, "", nil))
	} else if qc != nil {
		_ = qc.CloseWithError(codeShutdown, "")
	}
}

func (l *link) stopped() bool {
	select {
	case <-l.stop:
		return true
	case <-l.c.ctx.Done():
		return true
	default:
		return false
	}
}

// run keeps the connection up: connect, serve until it ends, then wait out
// Goodbye.retry_after_blocks (in blocks) and the §11.3 backoff
// (100 ms × 2^attempt, cap 30 s, ±25% jitter, from presence/local).
func (l *link) run() {
	defer l.c.wg.Done()
	for !l.stopped() {
		if !l.waitRetryHeight() {
			return
		}
		admitted := l.connectOnce()
		l.mu.Lock()
		if admitted {
			l.attempt = 0
		}
		attempt := l.attempt
		l.attempt++
		l.mu.Unlock()
		l.c.mu.Lock()
		d := local.ReconnectDelayMillis(attempt, l.c.rng)
		l.c.mu.Unlock()
		t := time.NewTimer(time.Duration(d) * time.Millisecond)
		select {
		case <-t.C:
		case <-l.stop:
		case <-l.c.ctx.Done():
		}
		t.Stop()
	}
}

// waitRetryHeight blocks until the finalized height reaches retryAt and
// the link's epoch pair admits its validator at that height: a link is
// never dialled under an expired pair (§5.3 point 4), nor under one not
// yet active, nor after the validator ended it with OverlapExpired.
func (l *link) waitRetryHeight() bool {
	for {
		ch := l.c.waitTick()
		l.mu.Lock()
		at, ended := l.retryAt, l.ended
		l.mu.Unlock()
		if h := l.c.Height(); !ended && h >= at && l.admissible(h) == nil {
			return true
		}
		select {
		case <-ch:
		case <-l.stop:
			return false
		case <-l.c.ctx.Done():
			return false
		}
	}
}

// admissible is the runner's epoch-paired check of its own link at h
// (§5.3 point 2, §6.2): the link's pair selects a snapshot in force at h,
// the validator is in it and in Sub_epoch(R) of it. It returns that
// snapshot.
func (l *link) admissible(h uint64) error {
	_, err := l.snapshot(h)
	return err
}

func (l *link) snapshot(h uint64) (*validators.Snapshot, error) {
	ep, err := l.c.cfg.Validators.EpochsAt(h)
	if err != nil {
		return nil, err
	}
	return ep.Admit(h, l.pair, l.peer, l.c.self, l.c.cfg.Params)
}

// noLink logs why a dial to the link's validator at addr failed: at Warn
// at most once per validator per refusalLogInterval (the client's log
// limiter), every time at Debug. A runner that silently falls back to
// polling, or never connects, is an operator's first problem on a
// multi-host network (issue 28).
func (l *link) noLink(addr string, err error) {
	args := []any{"validator", hex.EncodeToString(l.peer[:]), "addr", addr, "local", l.c.udp.LocalAddr().String(), "err", err}
	if l.c.logLim.allow("nolink " + hex.EncodeToString(l.peer[:])) {
		l.c.log.Warn("quic: no link to validator; retrying with backoff", args...)
		return
	}
	l.c.log.Debug("quic: no link to validator", args...)
}

// connectOnce dials, runs the D28 handshake and serves the connection
// until it ends. It reports whether the validator admitted us.
func (l *link) connectOnce() bool {
	c := l.c
	addr, ok := c.cfg.Directory.Addr(l.peer)
	if !ok {
		l.noLink("", errors.New("the directory has no QUIC address for this validator"))
		return false
	}
	c.stats.dials.Add(1)
	deadline := time.Now().Add(c.cfg.HandshakeTimeout)
	ctx, cancel := context.WithDeadline(c.ctx, deadline)
	defer cancel()
	qc, err := c.tr.Dial(ctx, addr, clientTLS(), &qgo.Config{
		HandshakeIdleTimeout: c.cfg.HandshakeTimeout, MaxIdleTimeout: c.cfg.IdleTimeout, KeepAlivePeriod: c.cfg.KeepAlive,
		MaxIncomingStreams: int64(c.cfg.MaxConcurrent) * 4, MaxIncomingUniStreams: -1,
	})
	if err != nil {
		l.noLink(addr.String(), err)
		return false
	}
	st, err := qc.OpenStreamSync(ctx)
	if err != nil {
		_ = qc.CloseWithError(codeProtocol, "")
		l.noLink(addr.String(), err)
		return false
	}
	f := newFrameStream(st, handshakeFrameBytes, c.cfg.Params.MaxFrameBytes)
	sess, snap, err := l.handshake(qc, f, deadline)
	if err != nil {
		l.handshakeFailed(qc, f, sess, err)
		return false
	}
	f.setReadMax(c.cfg.Params.MaxFrameBytes)
	f.setVersion(sess.Version) // 0x15 only on a 0x0101 connection (SPEC-NOTES N18)
	f.writeTimeout = c.cfg.HandshakeTimeout
	admitted := make(chan struct{})
	l.mu.Lock()
	l.qc, l.ctl, l.sess, l.snap = qc, f, sess, snap
	l.nonce, l.pinged, l.lastPing, l.admitted = 0, false, 0, admitted
	l.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.controlLoop(qc, f, sess)
	}()
	l.ping(c.Height()) // nonce 0: its pong confirms admission
	up := false
	select {
	case <-admitted:
		up = true
		c.stats.admissions.Add(1)
		c.log.Info("quic: admitted by validator", "validator", hex.EncodeToString(l.peer[:]), "remote", qc.RemoteAddr())
		l.mu.Lock()
		l.up = true
		l.mu.Unlock()
		l.reassertFull()
		if c.track() {
			go func() {
				defer c.wg.Done()
				l.acceptJobs(qc, sess, snap)
			}()
		}
		if c.cfg.ProbeEvery > 0 && c.track() {
			go func() {
				defer c.wg.Done()
				l.probe(done)
			}()
		}
	case <-done:
	case <-ctx.Done():
		_ = qc.CloseWithError(codeProtocol, "no admission")
	}
	<-done
	l.mu.Lock()
	l.qc, l.ctl, l.sess, l.up = nil, nil, nil, false
	l.mu.Unlock()
	if up {
		c.log.Info("quic: validator connection closed", "validator", hex.EncodeToString(l.peer[:]), "cause", context.Cause(qc.Context()))
	}
	return up
}

// reassertFull re-sends accepting_new = false on a new connection while
// the runner is at capacity: a fresh handshake restores the runner's
// local-presence entry at the validator (§6.4), so "full" must be said
// again on it.
func (l *link) reassertFull() {
	c := l.c
	c.mu.Lock()
	full := c.full
	c.mu.Unlock()
	if full {
		c.wakeBackpressure()
	}
}

// handshakeFailed records a refusal, or refuses the validator ourselves.
func (l *link) handshakeFailed(qc *qgo.Conn, f *frameStream, sess *wire.Session, err error) {
	var gone *RefusedError
	if errors.As(err, &gone) {
		l.refused(gone)
		_ = qc.CloseWithError(codeGoodbye, "")
		return
	}
	if isClosed(err) {
		_ = qc.CloseWithError(codeGoodbye, "")
		return
	}
	var k wire.Signer
	if sess != nil {
		k = l.c.cfg.Key
	}
	if l.c.logLim.allow(hex.EncodeToString(l.peer[:])) {
		l.c.log.Warn("quic: refusing validator", "validator", hex.EncodeToString(l.peer[:]), "reason", GoodbyeReason(err).String(), "detail", err.Error())
	}
	l.c.say(qc, f, goodbye(sess, k, GoodbyeReason(err), err.Error(), nil))
}

// MaxAdvisoryRetryBlocks bounds the retry_after_blocks of an unverified
// (pre-auth) Goodbye: §12.5 makes such a Goodbye advisory only, so a
// forged one must not lock the runner out for longer than the §11.3
// reconnect backoff cap (30 s) at the default 1 s block time (§6.6).
// SPEC-NOTES N7.
const MaxAdvisoryRetryBlocks = 30

// refused records a Goodbye and its retry_after_blocks gate (§12.5),
// capped at MaxAdvisoryRetryBlocks when the Goodbye was not verified. A
// verified Goodbye{OverlapExpired} on a link whose pair is not the
// current epoch's is the overlap's normal end (§5.3 point 4): it is not
// a refusal, and the link never dials under that pair again.
func (l *link) refused(g *RefusedError) {
	l.c.received(g)
	if g.Reason == wire.GoodbyeOverlapExpired && g.Verified && !l.current() {
		l.c.log.Info("quic: epoch-paired link ended by validator", "validator", hex.EncodeToString(l.peer[:]), "subset_epoch", l.pair.SubsetEpoch)
		l.mu.Lock()
		l.ended = true
		l.mu.Unlock()
		return
	}
	if l.c.logLim.allow(hex.EncodeToString(l.peer[:])) {
		l.c.log.Warn("quic: refused by validator", "validator", hex.EncodeToString(l.peer[:]), "reason", g.Reason.String(), "detail", g.Detail,
			"verified", g.Verified, "retry_after_blocks", g.RetryAfterBlocks)
	}
	h := l.c.Height()
	seq := l.c.stats.refusalSeq.Add(1)
	l.mu.Lock()
	l.refusal, l.refusalSeq = g, seq
	if g.RetryAfterBlocks != nil {
		n := *g.RetryAfterBlocks
		if !g.Verified {
			n = min(n, MaxAdvisoryRetryBlocks)
		}
		l.retryAt = h + n
		if l.retryAt < h {
			l.retryAt = ^uint64(0)
		}
	}
	l.mu.Unlock()
}

// current reports whether the link's pair is the current snapshot's in
// the runner's view.
func (l *link) current() bool {
	ep, err := l.c.cfg.Validators.EpochsAt(l.c.Height())
	return err == nil && ep.Current != nil && ep.Current.Pair() == l.pair
}

// runnerLocal is the runner's wire.Local at h for a connection to l.peer
// under the link's epoch pair, with that pair's snapshot: the pair must
// admit l.peer at h (§5.3 point 2, §6.2: epoch-paired, the runner
// applies the validator's rule), else the link does not connect. Admits
// is "is the validator we dialed, under the pair we offered" (a Hello
// under another pair fails the handshake's pair check instead): Sub(R) is
// evaluated once per handshake, here, not again for the validator's Hello.
func (l *link) runnerLocal(h uint64) (*wire.Local, *validators.Snapshot, error) {
	c := l.c
	ep, err := c.cfg.Validators.EpochsAt(h)
	if err != nil {
		return nil, nil, err
	}
	snap, err := ep.Admit(h, l.pair, l.peer, c.self, c.cfg.Params)
	if err != nil {
		return nil, nil, err
	}
	return &wire.Local{
		Role: wire.RoleRunner, ChainID: c.cfg.ChainID, Version: c.version(), Epochs: ep.Pairs(h, c.cfg.Params),
		AcceptHigherMinor: true, // D28: same major ⇒ the lower version is the connection's
		Admits: func(p wire.EpochPair, v wire.PubKey) bool {
			pk, err := validators.PeerKeyOf(v)
			return err == nil && pk == l.peer && p == l.pair
		},
	}, snap, nil
}

// handshake is the runner's half of D28.
func (l *link) handshake(qc *qgo.Conn, f *frameStream, deadline time.Time) (*wire.Session, *validators.Snapshot, error) {
	c := l.c
	binding, err := ChannelBinding(qc)
	if err != nil {
		return nil, nil, err
	}
	h := c.Height()
	loc, snap, err := l.runnerLocal(h)
	if err != nil {
		return nil, nil, err
	}
	pair := l.pair
	ours := &wire.Hello{
		Version: c.version(), ChainID: c.cfg.ChainID, ValidatorSetHash: pair.ValidatorSetHash, SubsetEpoch: pair.SubsetEpoch,
		PartyPubKey: c.self, PartyRole: wire.RoleRunner, BlockHeight: h,
	}
	if _, err := crand.Read(ours.ChallengeNonce[:]); err != nil {
		return nil, nil, err
	}
	if err := f.write(ours); err != nil {
		return nil, nil, err
	}
	peer, err := readHello(f, deadline)
	if err != nil {
		return nil, nil, err
	}
	if pk, err := validators.PeerKeyOf(peer.PartyPubKey); err == nil && pk != l.peer {
		return nil, nil, ErrPeerMismatch
	}
	if _, err := wire.CheckHello(loc, peer); err != nil {
		return nil, nil, err
	}
	if (wire.EpochPair{SubsetEpoch: peer.SubsetEpoch, ValidatorSetHash: peer.ValidatorSetHash}) != pair {
		return nil, nil, fmt.Errorf("%w: validator answered another epoch pair", wire.ErrValidatorSetMismatch)
	}
	// D28: our HelloAck goes out as soon as we have the validator's Hello,
	// whether or not its HelloAck has arrived; that one is read and
	// verified meanwhile, on another goroutine (it usually came in the
	// same packet as the Hello, and the two signature operations then run
	// on two cores instead of one after the other).
	vackErr := make(chan error, 1)
	go func() {
		vack, err := readHelloAck(f, deadline)
		if err == nil {
			err = checkPeerAck(vack, ours, peer, binding)
		}
		vackErr <- err
	}()
	ack, err := signAck(ours, peer, binding, c.cfg.Key)
	if err == nil {
		err = f.write(ack)
	}
	if err != nil {
		f.st.CancelRead(streamDone) // we are failing anyway: do not wait for the validator's ack
	}
	if verr := <-vackErr; err == nil {
		err = verr
	}
	if err != nil {
		return nil, nil, err
	}
	sess, err := wire.SessionFor(ours, peer, binding)
	return sess, snap, err
}

// controlLoop reads the validator's control frames: pongs and Goodbye.
func (l *link) controlLoop(qc *qgo.Conn, f *frameStream, sess *wire.Session) {
	for {
		fr, err := f.read()
		if err != nil {
			if errors.Is(err, io.EOF) || isClosed(err) {
				_ = qc.CloseWithError(codeGoodbye, "")
			} else {
				l.c.say(qc, f, goodbye(sess, l.c.cfg.Key, GoodbyeReason(err), err.Error(), nil))
			}
			return
		}
		switch fr := fr.(type) {
		case *wire.HeartbeatPong:
			l.onPong(sess, fr)
		case *wire.PresenceReceipt:
			l.onReceipt(sess, fr)
		case *wire.Goodbye:
			l.refused(readGoodbye(sess, wire.RoleValidator, fr))
			_ = qc.CloseWithError(codeGoodbye, "")
			return
		default:
			err := fmt.Errorf("%w: %s on the control stream", ErrUnexpectedFrame, fr.Type())
			l.c.say(qc, f, goodbye(sess, l.c.cfg.Key, wire.GoodbyeProtocolError, err.Error(), nil))
			return
		}
	}
}

// onPong accepts a pong only if it echoes the outstanding ping's nonce and
// verifies under the connection's validator key (§6.3).
func (l *link) onPong(sess *wire.Session, p *wire.HeartbeatPong) {
	l.mu.Lock()
	err := error(nil)
	if !l.pinged || l.sess != sess {
		err = fmt.Errorf("%w: no ping outstanding", wire.ErrPongNonceMismatch)
	} else {
		err = wire.CheckPong(sess, l.outstanding, p)
	}
	admitted := l.admitted
	if err == nil {
		l.pinged = false
		l.admitted = nil
		l.pongHeight = max(l.pongHeight, p.BlockHeight)
	}
	l.mu.Unlock()
	if err != nil {
		l.c.stats.pongsRejected.Add(1)
		if l.c.cfg.OnPongRejected != nil {
			l.c.cfg.OnPongRejected(l.peer, err)
		}
		return
	}
	l.c.stats.pongsOK.Add(1)
	if admitted != nil {
		close(admitted)
	}
	if f := l.c.cfg.OnPongHeight; f != nil {
		f(l.peer, p.BlockHeight)
	}
	// The pong's block_height is signed by the authenticated validator: a
	// runner whose own chain view lags (or that has none but the pongs)
	// learns the height from it and heartbeats at it (§6.3: a ping on
	// every new height). Tick writes on every stream, so it runs off this
	// read loop.
	if c := l.c; p.BlockHeight > c.Height() && c.track() {
		go func() {
			defer c.wg.Done()
			c.Tick(p.BlockHeight)
		}()
	}
}

// probe pings every ClientConfig.ProbeEvery while no ping is
// outstanding, whatever the height, until done is closed: the pongs then
// carry the validator's height (onPong), so a runner with no other chain
// view keeps heartbeating on new heights (§6.3).
func (l *link) probe(done <-chan struct{}) {
	t := time.NewTicker(l.c.cfg.ProbeEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-done:
			return
		case <-l.c.ctx.Done():
			return
		}
		l.sendPing(l.c.Height(), true)
	}
}

// ping sends a HeartbeatPing for height h unless one went out for h
// already; the nonce is this connection's next (§6.3).
func (l *link) ping(h uint64) { l.sendPing(h, false) }

// sendPing is ping; a probe pings whatever the height, but never while a
// ping is outstanding (its pong would then be rejected, §6.3).
func (l *link) sendPing(h uint64, probe bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess == nil || (probe && l.pinged) || (!probe && l.lastPing >= h && l.nonce > 0) {
		return
	}
	p := &wire.HeartbeatPing{BlockHeight: h, Nonce: l.nonce}
	if err := p.Sign(l.sess, l.c.cfg.Key); err != nil {
		return
	}
	if err := l.ctl.write(p); err != nil {
		return
	}
	l.outstanding, l.pinged, l.lastPing = l.nonce, true, h
	l.nonce++
	l.c.stats.pings.Add(1)
	if l.c.cfg.ModeAReceipts && l.sess.Version >= wire.VersionReceipts {
		l.requestReceipt()
	}
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
