package quic

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	qgo "github.com/quic-go/quic-go"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

// ServerConfig configures a validator [Server]. Zero durations and limits
// take the documented defaults.
type ServerConfig struct {
	Key     *wire.ValidatorKey // the §5.4 peer_pubkey's key; signs every validator frame
	ChainID uint64
	Params  cip11.Params

	// Registry reads the Runner Registry as committed (§6.2 registration
	// and health, §8.1/§8.5 index basis for ProposerInput); see
	// [CommittedRegistry].
	Registry CommittedRegistry
	// Validators is the §5.3 validator-set view (admission, Sub(R)).
	Validators ValidatorSets

	// TxDecoder is the node's Transaction::read; TxValidator (optional) its
	// normal validation; Mempool receives forwarded results (§10.3).
	TxDecoder   wire.TxDecoder
	TxValidator wire.TxValidator
	Mempool     Mempool
	// RevealOpen reports whether the CIP-2 reveal window of a multi-runner
	// job is open at h (its commitment included). Nil uses a non-normative
	// default: open from the block after this validator forwarded the
	// job's JobResultCommit.
	RevealOpen func(jobID cip11.Hash, h uint64) bool
	// RefuseEarlyReveal answers an early multi-runner JobResult with
	// Goodbye{ProtocolError} instead of holding it (§10.3 allows either).
	RefuseEarlyReveal bool
	// MaxHeldReveals bounds the early reveals held for one runner at a
	// time ([DefaultMaxHeldReveals]); beyond it an early reveal's push is
	// a SoftFailure (ErrTooManyHeld). A held reveal is released by the
	// reveal window (RevealOpen, or [Server.ReleaseReveal]) or dropped
	// past the job's deadline_block.
	MaxHeldReveals int

	// OnOutcome receives every §10.6 dispatch classification; OnProgress
	// every §10.4 JobProgress. Both are optional and must not block.
	OnOutcome  func(Outcome)
	OnProgress func(runner cip11.Address, p *wire.JobProgress)
	// OnAdmit is told of every admission (§6.2: both proofs verified and the
	// admission rules passed). Optional; must not block.
	OnAdmit func(runner cip11.Address)
	// OnAck is told of every verified JobAck (§10.2) when it is read, with
	// the pushed assignment's job and runner. Optional; must not block.
	OnAck func(jobID cip11.Hash, runner cip11.Address, status wire.AckStatus)
	// OnRefuse is told the §12.5 Goodbye reason of every refused
	// handshake. Optional; must not block.
	OnRefuse func(reason wire.GoodbyeReason)
	// OnPushed is told of every assignment whose JobAssignment was written
	// on its job stream (§10.1); OnPushError of every routed assignment
	// that could not be sent after [Server.PushWith] returned: the runner
	// left local presence while the assignment waited for a slot, or its
	// stream could not be opened or written. Exactly one of the two is
	// called per assignment PushWith returned nil for. Optional.
	OnPushed    func(a Assignment)
	OnPushError func(a Assignment, err error)
	//
	// Every callback above is called from the server's own goroutines,
	// never from a caller of Push or PushWith (OnOutcome also from the
	// caller of Tick or Applied, for ack timeouts and released reveals).
	// None may block: Close waits for the goroutines that call them.

	// PushWindow is the default [PushOptions.MaxInFlight]: > 0 paces every
	// push at that many unanswered assignments, < 0 sends all at once, and
	// 0 decides by the UDP receive buffer the socket got (see
	// [Server.PushWindow]).
	PushWindow int

	// Listen is the UDP address ("127.0.0.1:0" by default); PacketConn,
	// if set, is used instead and not closed by the Server.
	Listen     string
	PacketConn net.PacketConn

	HandshakeTimeout time.Duration // QUIC + CIP-11 handshake deadline (10 s)
	IdleTimeout      time.Duration // QUIC idle timeout (30 s)
	GoodbyeLinger    time.Duration // wait for the peer to close after Goodbye (500 ms)
	// HelloRate and HelloBurst bound unauthenticated Hellos per source IP
	// (§6.2): 50/s with a burst of 100 by default; HelloRate < 0 disables.
	HelloRate  float64
	HelloBurst int
	// MaxHalfOpen caps connections between their first Initial and CIP-11
	// admission (1024); above RetryAbove (MaxHalfOpen/2) new connections
	// must pass QUIC address validation (Retry) first (§6.6).
	// MaxHalfOpenPerSource caps them per source IP
	// ([DefaultMaxHalfOpenPerSource]), so one source's handshake storm
	// cannot take every slot from the others (§6.6, §15.1).
	MaxHalfOpen          int
	RetryAbove           int
	MaxHalfOpenPerSource int
	// Now is the wall clock for the Hello rate limit and the log limiter
	// (time.Now).
	Now func() time.Time
	// Logger receives admissions and refusals (Info, with the §12.5 reason
	// and detail; refusals at most one per source IP every 10 s),
	// connection loss (Info) and push outcomes other than Success (Debug).
	// Nil discards.
	Logger *slog.Logger
}

// CommittedRegistry is all the server reads of the Runner Registry: the
// view as committed at the end of block h. It asks only for heights the
// node gave it as committed (NewServer's h, Tick's h, ProposerInput's
// h): for admission at the current height (§6.2: registered and not
// Deregistered) and for the index basis of PresenceInput (§8.1, §8.5). A
// height not (or no longer) available must return an error wrapping
// state.ErrUnknownHeight, which admission answers retryably (ErrNotReady,
// SPEC-NOTES N6). A returned view must stay valid, unchanged, while later
// blocks commit. state.Registry implementations satisfy it.
type CommittedRegistry interface {
	At(h uint64) (state.RegistryView, error)
}

// Outcome is one §10.6 dispatch classification.
type Outcome struct {
	JobID   cip11.Hash
	Runner  cip11.Address
	Outcome local.Outcome
	Height  uint64
	Err     error           // why a SoftFailure was one: a bad frame, or ErrAckRejected with the reason
	Ack     *wire.AckStatus // the runner's verified JobAck status, if one was read
}

// ServerStats is a snapshot of the server's counters and gauges, for tests,
// operators and [NewCollector].
type ServerStats struct {
	// Cumulative counters.
	Admitted, Refused, PingsOK, PingsRejected, ProtocolErrors, Forwarded int64
	// RefusedBy counts refused handshakes by §12.5 Goodbye reason (index:
	// the reason byte); their sum is Refused.
	RefusedBy [NumGoodbyeReasons]int64
	// Outcomes counts §10.6 dispatch classifications (index: local.Outcome).
	Outcomes [NumOutcomes]int64
	// ResultsRejected counts JobResultCommit/JobResult frames whose
	// tx_bytes failed the §10.3 checks (not forwarded).
	ResultsRejected int64
	// PreHelloCloses counts connections closed before a Hello arrived
	// (no control stream, a timeout, or another first frame; §6.6).
	PreHelloCloses int64
	// GoodbyesSent and GoodbyesReceived count §12.5 Goodbye frames by
	// reason (index: the reason byte): sent, every one the server wrote
	// (refusals included); received, every one a runner sent, verified or
	// advisory. GoodbyesSent[wire.GoodbyeOverlapExpired] counts the
	// epoch-E connections this validator closed at the §5.3 point-4
	// cutoff, GoodbyesReceived[...] those the runners closed themselves.
	GoodbyesSent, GoodbyesReceived [NumGoodbyeReasons]int64
	// PushesAbandoned counts pushes abandoned because their connection's
	// epoch pair expired (§5.3 point 4, §11.5): each is also counted once
	// in Outcomes as a SoftFailure with [ErrPushAbandoned].
	PushesAbandoned int64
	// ReceiptsIssued counts the §8.3 PresenceReceipts signed and written
	// (frame 0x15, SPEC-NOTES N18); ReceiptRequestsIgnored the
	// PresenceReceiptRequests left unanswered because their connection
	// already had a receipt at the current height (at most one signature
	// per connection and height) or was being retired.
	ReceiptsIssued, ReceiptRequestsIgnored int64
	// Gauges at the time of the snapshot: admitted connections, runners in
	// local presence at the current height (§7.4), and connections not yet
	// admitted (§6.6).
	Connected, Present, HalfOpen int
}

// NumGoodbyeReasons is the number of §12.5 GoodbyeReason variants; NumOutcomes
// the number of §10.6 outcomes.
const (
	NumGoodbyeReasons = int(wire.GoodbyeShutdown) + 1
	NumOutcomes       = int(local.HardFailure) + 1
)

// Server is a validator's CIP-11 endpoint: one UDP socket, QUIC+TLS 1.3,
// admission, heartbeats and push (§6, §10, §11). It owns the validator's
// local presence, which it drives with the height given by [Server.Tick].
type Server struct {
	cfg    ServerConfig
	self   validators.PeerKey
	udp    net.PacketConn
	ownUDP bool
	tr     *qgo.Transport
	ln     *qgo.Listener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the server starts; Add only via track
	// stopAfter unregisters the shutdown NewServer's context would start;
	// done is closed once Shutdown has finished.
	stopAfter func() bool
	done      chan struct{}

	half    halfOpen
	limiter *helloLimiter
	log     *slog.Logger
	logLim  *logLimiter
	stats   struct {
		admitted, refused, pingsOK, pingsRejected, protocol, forwarded atomic.Int64
		refusedBy                                                      [NumGoodbyeReasons]atomic.Int64
		outcomes                                                       [NumOutcomes]atomic.Int64
		resultsRejected, preHello                                      atomic.Int64
		goodbyesSent, goodbyesRecv                                     [NumGoodbyeReasons]atomic.Int64
		abandoned                                                      atomic.Int64
		receipts, receiptsIgnored                                      atomic.Int64
	}

	mu     sync.Mutex
	height uint64
	// valid are the epoch pairs valid at height, Current first (§5.3,
	// [validators.Epochs.Pairs]), as of the last Tick or NewServer; nil
	// when the view could not be read then (nothing is expired on it).
	valid    []wire.EpochPair
	pres     *local.Presence
	conns    map[local.ConnID]*sconn
	byRunner map[cip11.Address][]*sconn // admitted connections: at most one per epoch pair (admit replaces)
	// handover holds, per runner, the local-presence entries of
	// connections closed at the §5.3 cutoff while the runner had another
	// connection that had pinged: they are closed in local presence just
	// before that runner's next valid ping (onPing), so the runner stays
	// present across the switch from its epoch-E to its epoch-E+1
	// connection instead of missing the cutoff block (§5.3 point 1: no
	// gap). Dropping the runner's last connection closes them too.
	handover map[cip11.Address][]local.ConnID
	pushes   map[pushKey]*push
	heldBy   map[cip11.Address]int // reveals held per runner (§10.3), ≤ MaxHeldReveals
	closed   bool

	mutatePong func(*wire.HeartbeatPong) // test hook: a misbehaving validator
}

// sconn is one admitted runner connection.
type sconn struct {
	qc     *qgo.Conn
	ctl    *frameStream
	sess   *wire.Session
	runner cip11.Address
	id     local.ConnID
	pair   wire.EpochPair // the (subset_epoch, validator_set_hash) it was admitted under (§5.3 point 2)
	pinged bool           // a valid HeartbeatPing arrived on it (guarded by Server.mu)
	// receiptAt is the height of the last PresenceReceipt issued on it, and
	// receipted whether there was one (guarded by Server.mu): at most one
	// receipt per connection and height (SPEC-NOTES N18).
	receiptAt uint64
	receipted bool
	// replaced are the runner's older connections this admission
	// superseded; serveConn closes them (§12.5 has no reason for it, so
	// with a plain QUIC close, codeReplaced).
	replaced []*sconn
}

func (c *ServerConfig) defaults() error {
	switch {
	case c.Key == nil:
		return ErrNilKey
	case c.Registry == nil:
		return fmt.Errorf("%w: Registry", ErrNilDependency)
	case c.Validators == nil:
		return fmt.Errorf("%w: Validators", ErrNilDependency)
	case c.TxDecoder == nil:
		return fmt.Errorf("%w: TxDecoder", ErrNilDependency)
	case c.Mempool == nil:
		return fmt.Errorf("%w: Mempool", ErrNilDependency)
	}
	if err := c.Params.Validate(); err != nil {
		return err
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:0"
	}
	c.HandshakeTimeout = orDefault(c.HandshakeTimeout, 10*time.Second)
	c.IdleTimeout = orDefault(c.IdleTimeout, 30*time.Second)
	c.GoodbyeLinger = orDefault(c.GoodbyeLinger, 500*time.Millisecond)
	if c.HelloRate == 0 {
		c.HelloRate = 50
	}
	if c.HelloBurst <= 0 {
		c.HelloBurst = 100
	}
	if c.MaxHalfOpen <= 0 {
		c.MaxHalfOpen = 1024
	}
	if c.MaxHeldReveals <= 0 {
		c.MaxHeldReveals = DefaultMaxHeldReveals
	}
	if c.MaxHalfOpenPerSource <= 0 {
		c.MaxHalfOpenPerSource = DefaultMaxHalfOpenPerSource
	}
	if c.RetryAbove <= 0 {
		c.RetryAbove = c.MaxHalfOpen / 2
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// DefaultMaxHeldReveals is ServerConfig.MaxHeldReveals's default.
const DefaultMaxHeldReveals = 16

// DefaultMaxHalfOpenPerSource is ServerConfig.MaxHalfOpenPerSource's
// default: room for a NAT of honest runners reconnecting at once, a
// sixteenth of the default total.
const DefaultMaxHalfOpenPerSource = 64

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// NewServer validates cfg, binds the UDP socket and starts accepting at
// height h (the node's last finalized and applied block). Cancelling ctx
// shuts the server down as [Server.Close] does; Close still waits for it.
func NewServer(ctx context.Context, cfg ServerConfig, h uint64) (*Server, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	self, err := validators.PeerKeyOf(cfg.Key.PubKey())
	if err != nil {
		return nil, err
	}
	cert, err := selfSignedCert()
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, self: self, height: h, pres: local.New(cfg.Params),
		conns: map[local.ConnID]*sconn{}, byRunner: map[cip11.Address][]*sconn{}, pushes: map[pushKey]*push{}, heldBy: map[cip11.Address]int{},
		handover: map[cip11.Address][]local.ConnID{},
		limiter:  newHelloLimiter(cfg.HelloRate, cfg.HelloBurst, cfg.Now), done: make(chan struct{}),
		log: loggerOr(cfg.Logger), logLim: newLogLimiter(refusalLogInterval, cfg.Now),
	}
	s.valid = s.validPairs(h)
	s.udp = cfg.PacketConn
	if s.udp == nil {
		if s.udp, err = net.ListenPacket("udp", cfg.Listen); err != nil {
			return nil, err
		}
		s.ownUDP = true
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	resetKey := statelessResetKey(cfg.Key)
	s.tr = &qgo.Transport{
		Conn:                s.udp,
		StatelessResetKey:   &resetKey,
		VerifySourceAddress: func(net.Addr) bool { return s.half.n.Load() >= int64(cfg.RetryAbove) },
		ConnContext: func(ctx context.Context, ci *qgo.ClientInfo) (context.Context, error) {
			ctx, ok := s.half.enter(ctx, sourceIP(ci.RemoteAddr), int64(cfg.MaxHalfOpen), int64(cfg.MaxHalfOpenPerSource),
				func() { s.stats.preHello.Add(1) }) // ended before serveConn took it
			if !ok {
				return ctx, errors.New("half-open handshake cap reached")
			}
			return ctx, nil
		},
	}
	s.ln, err = s.tr.Listen(serverTLS(cert), &qgo.Config{
		HandshakeIdleTimeout:  cfg.HandshakeTimeout,
		MaxIdleTimeout:        cfg.IdleTimeout,
		MaxIncomingStreams:    1,  // D27: the runner opens only the control stream
		MaxIncomingUniStreams: -1, // and no unidirectional streams
	})
	if err != nil {
		s.cancel()
		_ = s.tr.Close()
		s.closeSocket()
		return nil, err
	}
	s.wg.Add(1) // nothing else can run yet: no track needed
	go s.acceptLoop()
	s.stopAfter = context.AfterFunc(ctx, func() { _ = s.Close() })
	return s, nil
}

// PushWindow is the MaxInFlight a [PushOptions] of 0 takes: the
// configured ServerConfig.PushWindow, or, with 0 there, one picked from
// the socket's receive buffer as it is now (quic-go has tried to raise
// it): [PacedPushWindow] below [SmallReceiveBuffer], else unpaced (-1).
func (s *Server) PushWindow() int {
	if s.cfg.PushWindow != 0 {
		return s.cfg.PushWindow
	}
	return windowForBuffer(receiveBuffer(s.udp))
}

// Addr is the server's UDP address.
func (s *Server) Addr() net.Addr { return s.udp.LocalAddr() }

// PeerKey is this validator's raw peer_pubkey.
func (s *Server) PeerKey() validators.PeerKey { return s.self }

// Stats returns a snapshot of the counters and gauges.
func (s *Server) Stats() ServerStats {
	st := ServerStats{
		Admitted: s.stats.admitted.Load(), Refused: s.stats.refused.Load(),
		PingsOK: s.stats.pingsOK.Load(), PingsRejected: s.stats.pingsRejected.Load(),
		ProtocolErrors: s.stats.protocol.Load(), Forwarded: s.stats.forwarded.Load(),
		ResultsRejected: s.stats.resultsRejected.Load(), PreHelloCloses: s.stats.preHello.Load(),
		HalfOpen: s.HalfOpen(), PushesAbandoned: s.stats.abandoned.Load(),
		ReceiptsIssued: s.stats.receipts.Load(), ReceiptRequestsIgnored: s.stats.receiptsIgnored.Load(),
	}
	for i := range st.RefusedBy {
		st.RefusedBy[i] = s.stats.refusedBy[i].Load()
		st.GoodbyesSent[i] = s.stats.goodbyesSent[i].Load()
		st.GoodbyesReceived[i] = s.stats.goodbyesRecv[i].Load()
	}
	for i := range st.Outcomes {
		st.Outcomes[i] = s.stats.outcomes[i].Load()
	}
	s.mu.Lock()
	st.Connected = len(s.conns)
	st.Present = len(s.pres.Present(s.height))
	s.mu.Unlock()
	return st
}

// HalfOpen is the current number of connections not yet admitted (§6.6).
func (s *Server) HalfOpen() int { return int(s.half.n.Load()) }

// acceptLoop only accepts: each connection is served on its own goroutine,
// so quic-go's 32-slot accept queue never backs up behind a slow peer.
func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		qc, err := s.ln.Accept(s.ctx)
		if err != nil {
			return
		}
		if !s.track() {
			_ = qc.CloseWithError(codeShutdown, "")
			return
		}
		go func() {
			defer s.wg.Done()
			s.serveConn(qc)
		}()
	}
}

func (s *Server) currentHeight() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.height
}

// serveConn runs one connection: handshake under the deadline, then the
// control loop until the connection ends.
func (s *Server) serveConn(qc *qgo.Conn) {
	tok := tokenOf(qc.Context())
	defer tok.release()
	first := tok.claim() // false: the connection ended before and was counted
	deadline := time.Now().Add(s.cfg.HandshakeTimeout)
	ctx, cancel := context.WithDeadline(qc.Context(), deadline)
	st, err := qc.AcceptStream(ctx)
	cancel()
	if err != nil {
		if first {
			s.stats.preHello.Add(1)
		}
		_ = qc.CloseWithError(codeProtocol, "no control stream")
		return
	}
	f := newFrameStream(st, handshakeFrameBytes, s.cfg.Params.MaxFrameBytes)
	if st.StreamID() != 0 {
		s.stats.preHello.Add(1)
		s.refuse(qc, f, nil, ErrNotControlStream)
		return
	}
	sc, sess, err := s.handshake(qc, f, deadline)
	if err != nil {
		var gone *RefusedError
		if errors.As(err, &gone) {
			s.received(gone)
		}
		if gone != nil || isClosed(err) {
			_ = qc.CloseWithError(codeGoodbye, "")
			return
		}
		s.refuse(qc, f, sess, err)
		return
	}
	tok.release()
	for _, old := range sc.replaced {
		_ = old.qc.CloseWithError(codeReplaced, "replaced by a newer connection")
	}
	sc.replaced = nil
	s.log.Info("quic: runner admitted", "runner", sc.runner, "remote", qc.RemoteAddr())
	if s.cfg.OnAdmit != nil {
		s.cfg.OnAdmit(sc.runner)
	}
	f.setReadMax(s.cfg.Params.MaxFrameBytes)
	f.setVersion(sess.Version) // 0x14 only on a 0x0101 connection (SPEC-NOTES N18)
	s.controlLoop(sc)
	s.log.Info("quic: runner connection closed", "runner", sc.runner, "remote", qc.RemoteAddr(), "cause", context.Cause(qc.Context()))
}

// refuse closes with the Goodbye reason for err (§12.5), signed once the
// session is known.
func (s *Server) refuse(qc *qgo.Conn, f *frameStream, sess *wire.Session, err error) {
	reason := GoodbyeReason(err)
	s.stats.refused.Add(1)
	if int(reason) < NumGoodbyeReasons {
		s.stats.refusedBy[reason].Add(1)
	}
	if s.cfg.OnRefuse != nil {
		s.cfg.OnRefuse(reason)
	}
	if src := sourceIP(qc.RemoteAddr()); s.logLim.allow(src) {
		s.log.Info("quic: runner refused", "reason", reason.String(), "detail", err.Error(), "remote", qc.RemoteAddr())
	}
	var k wire.Signer
	if sess != nil {
		k = s.cfg.Key
	}
	s.say(qc, f, goodbye(sess, k, reason, err.Error(), retryAfter(err)))
}

// say sends a Goodbye (sayGoodbye) and counts it if it was written.
func (s *Server) say(qc *qgo.Conn, f *frameStream, g *wire.Goodbye) {
	sayGoodbye(qc, f, g, s.cfg.GoodbyeLinger, &s.stats.goodbyesSent)
}

// received counts a runner's Goodbye by reason.
func (s *Server) received(g *RefusedError) {
	if int(g.Reason) < NumGoodbyeReasons {
		s.stats.goodbyesRecv[g.Reason].Add(1)
	}
}

// Goodbye closes every connection of runner with a signed Goodbye carrying
// reason and retry_after_blocks (§12.5). It returns once they are closed.
func (s *Server) Goodbye(runner cip11.Address, reason wire.GoodbyeReason, detail string, retryAfterBlocks *uint64) error {
	s.mu.Lock()
	list := append([]*sconn(nil), s.byRunner[runner]...)
	s.mu.Unlock()
	if len(list) == 0 {
		return ErrNotConnected
	}
	var wg sync.WaitGroup
	for _, sc := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.say(sc.qc, sc.ctl, goodbye(sc.sess, s.cfg.Key, reason, detail, retryAfterBlocks))
		}()
	}
	wg.Wait()
	return nil
}

// Close says Goodbye{Shutdown} to every runner, stops accepting, waits
// for every goroutine the server started and releases the socket. A
// restarted Server starts with empty presence (§8.1). Close is
// idempotent and safe to call concurrently: every call returns once the
// server is down.
func (s *Server) Close() error {
	return s.Shutdown(wire.GoodbyeShutdown, nil)
}

// Shutdown is Close with a chosen reason (Shutdown or Draining) and
// retry_after_blocks (§12.5). Only the first Close or Shutdown says
// Goodbye; later ones wait for it and return nil.
func (s *Server) Shutdown(reason wire.GoodbyeReason, retryAfterBlocks *uint64) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return nil
	}
	s.closed = true
	defer close(s.done)
	if s.stopAfter != nil {
		s.stopAfter()
	}
	list := make([]*sconn, 0, len(s.conns))
	for _, sc := range s.conns {
		list = append(list, sc)
	}
	s.mu.Unlock()
	_ = s.ln.Close()
	var wg sync.WaitGroup
	for _, sc := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.say(sc.qc, sc.ctl, goodbye(sc.sess, s.cfg.Key, reason, "", retryAfterBlocks))
		}()
	}
	wg.Wait()
	s.cancel()
	err := s.tr.Close()
	s.wg.Wait()
	s.closeSocket()
	return err
}

func (s *Server) closeSocket() {
	if s.ownUDP {
		_ = s.udp.Close()
	}
}

// statelessResetKey is the server's QUIC stateless-reset key, stable across
// restarts: after a crash, the restarted validator answers its runners'
// packets for the dead connections with a stateless reset (RFC 9000
// §10.3), so they reconnect at once instead of waiting out the idle
// timeout. It is derived from the validator key by a (deterministic,
// secret) Ed25519 signature over a domain string.
func statelessResetKey(k *wire.ValidatorKey) qgo.StatelessResetKey {
	sig := k.Sign(cip11.Keccak256([]byte("cip11/quic/stateless-reset-key/v1")))
	return qgo.StatelessResetKey(cip11.Keccak256(sig[:]))
}
