package quic

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
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
	// reveal window (RevealOpen, or [Server.CommitIncluded]) or dropped
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
	Err     error           // why a SoftFailure was one, when it was a bad frame
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

// local is the validator's wire.Local at h: the admissible epoch pairs and
// the Sub(runner) predicate (§5.3, §6.2).
func (s *Server) local(h uint64) (*wire.Local, validators.Epochs, error) {
	ep, err := s.cfg.Validators.EpochsAt(h)
	if err != nil {
		return nil, ep, err
	}
	return &wire.Local{
		Role: wire.RoleValidator, ChainID: s.cfg.ChainID, Version: wire.VersionReceipts,
		AcceptHigherMinor: true, // D28: same major ⇒ the lower version is the connection's
		Epochs:            ep.Pairs(h, s.cfg.Params), Admits: ep.AdmitsRunner(h, s.self, s.cfg.Params),
	}, ep, nil
}

// expiredOffer refines a Hello refused for its epoch pair (err, from
// wire.CheckHello): an offer of epoch E's own pair at or after the
// cutoff is [validators.ErrOverlapExpired], refused with
// Goodbye{OverlapExpired} (§5.3 point 4: "a Hello offering
// validator_set_hash(E) past the cutoff is rejected at §6.2 admission");
// an offer of the next epoch's pair at most [EarlyOfferBlocks] before its
// activation (an [UpcomingSets] view) is [ErrNotReady] with
// [validators.ErrSnapshotNotYetActive], refused with Goodbye{Draining} and
// retry_after_blocks up to the activation (SPEC-NOTES N19). Any other error
// is returned unchanged.
func (s *Server) expiredOffer(ep validators.Epochs, h uint64, hello *wire.Hello, err error) error {
	if !errors.Is(err, wire.ErrValidatorSetMismatch) {
		return err
	}
	offer := wire.EpochPair{SubsetEpoch: hello.SubsetEpoch, ValidatorSetHash: hello.ValidatorSetHash}
	if _, serr := ep.Select(h, offer, s.cfg.Params); errors.Is(serr, validators.ErrOverlapExpired) {
		return serr
	}
	if us, ok := s.cfg.Validators.(UpcomingSets); ok {
		if next, ok := us.Upcoming(h); ok && next.Pair() == offer && next.ActivationHeight() > h && next.ActivationHeight()-h <= EarlyOfferBlocks {
			return &earlyOffer{fmt.Errorf("%w: %w: epoch %d activates at %d, this validator is at %d", ErrNotReady,
				validators.ErrSnapshotNotYetActive, next.Epoch(), next.ActivationHeight(), h), next.ActivationHeight() - h}
		}
	}
	return err
}

// earlyOffer is a Hello refused because it offers the next epoch's pair
// before this validator reached its activation: retry after blocks.
type earlyOffer struct {
	err    error
	blocks uint64
}

func (e *earlyOffer) Error() string { return e.err.Error() }
func (e *earlyOffer) Unwrap() error { return e.err }

// handshake is the validator's half of D28. It returns the session as soon
// as both HelloAcks verified, even when admission then fails, so the
// refusal can be signed.
func (s *Server) handshake(qc *qgo.Conn, f *frameStream, deadline time.Time) (*sconn, *wire.Session, error) {
	binding, err := ChannelBinding(qc)
	if err != nil {
		return nil, nil, err
	}
	peer, err := readHello(f, deadline)
	if err != nil {
		s.stats.preHello.Add(1)
		return nil, nil, err
	}
	if !s.limiter.allow(sourceIP(qc.RemoteAddr())) {
		return nil, nil, ErrRateLimited
	}
	h := s.currentHeight()
	l, ep, err := s.local(h)
	if err != nil {
		return nil, nil, err
	}
	pair, err := wire.CheckHello(l, peer)
	if err != nil {
		return nil, nil, s.expiredOffer(ep, h, peer, err)
	}
	ours, err := s.sendHello(f, peer, pair, h, binding)
	if err != nil {
		return nil, nil, err
	}
	ack, err := readHelloAck(f, deadline)
	if err != nil {
		return nil, nil, err
	}
	if err := checkPeerAck(ack, ours, peer, binding); err != nil {
		return nil, nil, err
	}
	sess, err := wire.SessionFor(ours, peer, binding)
	if err != nil {
		return nil, nil, err
	}
	sc, err := s.admit(qc, f, sess, h)
	return sc, sess, err
}

// sendHello writes our Hello, offering the pair the runner's Hello selected
// (both ends must fold the same pair into connection_id), then our HelloAck
// over the runner's challenge (D28: without waiting for the runner's ack).
// Our version is the lower of the runner's and [wire.VersionReceipts]: the
// connection's version either way (D28), and to a 0x0100 runner our Hello
// is byte for byte what a 0x0100 validator sends (SPEC-NOTES N18).
func (s *Server) sendHello(f *frameStream, peer *wire.Hello, pair wire.EpochPair, h uint64, binding cip11.Hash) (*wire.Hello, error) {
	ours := &wire.Hello{
		Version: wire.NegotiatedVersion(peer.Version, wire.VersionReceipts), ChainID: s.cfg.ChainID, ValidatorSetHash: pair.ValidatorSetHash, SubsetEpoch: pair.SubsetEpoch,
		PartyPubKey: s.cfg.Key.PubKey(), PartyRole: wire.RoleValidator, BlockHeight: h,
	}
	if _, err := rand.Read(ours.ChallengeNonce[:]); err != nil {
		return nil, err
	}
	ack, err := signAck(ours, peer, binding, s.cfg.Key)
	if err != nil {
		return nil, err
	}
	return ours, f.writeAll(ours, ack)
}

// signAck is our HelloAck answering peer's Hello (D28): it repeats our
// Hello's fields but block_height, and signs the §12.6 HelloAck preimage
// over peer's challenge_nonce; wire.HelloAck.Digest puts the connection's
// version in it, the lower of the two Hellos' (D28: "used in connection_id
// and every preimage"). The version field on the wire stays our Hello's.
func signAck(ours, peer *wire.Hello, binding cip11.Hash, k wire.Signer) (*wire.HelloAck, error) {
	ack := ackFor(ours)
	if err := ack.Sign(peer, binding, k); err != nil {
		return nil, err
	}
	return ack, nil
}

// checkPeerAck verifies the peer's HelloAck once our Hello went out and
// the peer's Hello passed wire.CheckHello (D28, §6.2): first that it
// repeats the peer's Hello (else ErrHelloAckMismatch, ProtocolError), which
// makes every admission rule already applied to that Hello hold for the
// ack too, so they are not run again (no second Sub(R) evaluation); then
// its signature over our challenge_nonce and the channel binding, with the
// connection's version in the preimage (D28).
func checkPeerAck(ack *wire.HelloAck, ours, peer *wire.Hello, binding cip11.Hash) error {
	if err := ackRepeatsHello(ack, peer); err != nil {
		return err
	}
	return ack.Verify(ours, binding)
}

// ackFor is the HelloAck repeating h's fields but block_height (D28).
func ackFor(h *wire.Hello) *wire.HelloAck {
	return &wire.HelloAck{
		Version: h.Version, ChainID: h.ChainID, ValidatorSetHash: h.ValidatorSetHash, SubsetEpoch: h.SubsetEpoch,
		PartyPubKey: h.PartyPubKey, PartyRole: h.PartyRole, BlockHeight: h.BlockHeight,
	}
}

// ackRepeatsHello is D28's rule that a HelloAck repeats its sender's Hello
// fields except block_height; a mismatch is Goodbye{ProtocolError}. It runs
// before wire.CheckHelloAck, which would report the same defects as
// identity or epoch errors.
func ackRepeatsHello(a *wire.HelloAck, h *wire.Hello) error {
	if a.Version != h.Version || a.ChainID != h.ChainID || a.ValidatorSetHash != h.ValidatorSetHash ||
		a.SubsetEpoch != h.SubsetEpoch || a.PartyPubKey != h.PartyPubKey || a.PartyRole != h.PartyRole {
		return ErrHelloAckMismatch
	}
	return nil
}

// readHello reads the peer's Hello; a Goodbye instead is a refusal.
func readHello(f *frameStream, deadline time.Time) (*wire.Hello, error) {
	fr, err := f.readBy(deadline)
	if err != nil {
		return nil, err
	}
	switch fr := fr.(type) {
	case *wire.Hello:
		return fr, nil
	case *wire.Goodbye:
		return nil, readGoodbye(nil, 0, fr)
	}
	return nil, fmt.Errorf("%w: %s during handshake", ErrUnexpectedFrame, fr.Type())
}

func readHelloAck(f *frameStream, deadline time.Time) (*wire.HelloAck, error) {
	fr, err := f.readBy(deadline)
	if err != nil {
		return nil, err
	}
	switch fr := fr.(type) {
	case *wire.HelloAck:
		return fr, nil
	case *wire.Goodbye:
		return nil, readGoodbye(nil, 0, fr)
	}
	return nil, fmt.Errorf("%w: %s during handshake", ErrUnexpectedFrame, fr.Type())
}

// admit applies the registration rule (§6.2: health ≠ Deregistered) at the
// current height and records the connection in local presence. Nothing
// about the runner is recorded before this point. helloAt is the height
// the Hello's epoch pair was checked at: if Tick has moved past it, the
// pair must still be valid now (§5.3 point 4).
func (s *Server) admit(qc *qgo.Conn, f *frameStream, sess *wire.Session, helloAt uint64) (*sconn, error) {
	addr, err := sess.RunnerPubKey.RunnerAddress()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.height == 0 {
		// registry(0) is empty by definition (genesis runners register in
		// block 1): before the first Tick there is nothing to admit against,
		// which is "not ready", not "not registered".
		return nil, fmt.Errorf("%w: no block committed yet", ErrNotReady)
	}
	view, err := s.cfg.Registry.At(s.height)
	if errors.Is(err, state.ErrUnknownHeight) {
		return nil, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	if err != nil {
		return nil, err
	}
	if r, ok := view.Runner(addr); !ok || r.Health == state.Deregistered {
		return nil, fmt.Errorf("%w: %s", ErrRunnerNotRegistered, addr)
	}
	pair := pairOf(sess)
	if s.height != helloAt && s.valid != nil && !slices.Contains(s.valid, pair) {
		// Tick passed the cutoff during the handshake (§5.3 point 4).
		return nil, fmt.Errorf("%w: epoch %d at height %d", validators.ErrOverlapExpired, pair.SubsetEpoch, s.height)
	}
	sc := &sconn{qc: qc, ctl: f, sess: sess, runner: addr, id: local.ConnID(sess.ID), pair: pair}
	// A runner keeps one connection per validator and epoch pair (§4.2;
	// two across an overlap, §5.3 point 1): a new admission replaces the
	// runner's connection under the same pair, which is forgotten here,
	// under the same lock, so its later close cannot clear presence the
	// new connection owns (§11.3). A connection under the other epoch's
	// pair stays: local presence counts the runner once whatever the
	// number of its connections (§7.4).
	keep := make([]*sconn, 0, 2)
	for _, old := range s.byRunner[addr] {
		if old.pair != pair {
			keep = append(keep, old)
			continue
		}
		sc.replaced = append(sc.replaced, old)
		delete(s.conns, old.id)
		_ = s.pres.Close(s.height, addr, old.id)
	}
	if err := s.pres.Open(s.height, addr, sc.id); err != nil {
		s.setRunnerConns(addr, keep)
		return nil, err // the replaced connections' next ping fails: they close then
	}
	s.conns[sc.id] = sc
	s.byRunner[addr] = append(keep, sc)
	s.stats.admitted.Add(1)
	return sc, nil
}

// pairOf is the epoch pair a session was established under.
func pairOf(sess *wire.Session) wire.EpochPair {
	return wire.EpochPair{SubsetEpoch: sess.SubsetEpoch, ValidatorSetHash: sess.ValidatorSetHash}
}

// setRunnerConns stores runner's admitted connections; s.mu held.
func (s *Server) setRunnerConns(runner cip11.Address, list []*sconn) {
	if len(list) == 0 {
		delete(s.byRunner, runner)
		return
	}
	s.byRunner[runner] = list
}

// controlLoop serves the admitted control stream (§6.3–§6.5, §12.5).
func (s *Server) controlLoop(sc *sconn) {
	defer s.drop(sc)
	for {
		fr, err := sc.ctl.read()
		if err != nil {
			s.streamError(sc, err)
			return
		}
		if err := s.onControl(sc, fr); err != nil {
			var gone *RefusedError
			if errors.As(err, &gone) {
				s.received(gone)
				_ = sc.qc.CloseWithError(codeGoodbye, "")
				if gone.Verified && gone.Reason == wire.GoodbyeOverlapExpired {
					s.retire(sc) // before drop: the runner abandons the pushes (§5.3 point 4)
					s.abandon(s.pushesOn(sc))
				}
				return
			}
			s.closeWith(sc, err)
			return
		}
	}
}

// streamError ends a connection whose stream failed: a §12.1 defect is a
// protocol error answered with a Goodbye, a vanished peer is just gone.
func (s *Server) streamError(sc *sconn, err error) {
	if errors.Is(err, io.EOF) || isClosed(err) {
		_ = sc.qc.CloseWithError(codeGoodbye, "")
		return
	}
	s.closeWith(sc, err)
}

// closeWith sends the signed Goodbye for err and closes.
func (s *Server) closeWith(sc *sconn, err error) {
	s.stats.protocol.Add(1)
	s.say(sc.qc, sc.ctl, goodbye(sc.sess, s.cfg.Key, GoodbyeReason(err), err.Error(), nil))
}

func (s *Server) onControl(sc *sconn, fr wire.Frame) error {
	switch fr := fr.(type) {
	case *wire.HeartbeatPing:
		return s.onPing(sc, fr)
	case *wire.BackpressureSignal:
		if err := fr.Verify(sc.sess); err != nil {
			return err
		}
		return s.event(func(h uint64) error { return s.pres.Backpressure(h, sc.runner, sc.id, fr.AcceptingNew) })
	case *wire.CapabilityDelta:
		if err := fr.Verify(sc.sess); err != nil {
			return err
		}
		return s.event(func(h uint64) error { return s.pres.CapabilityDelta(h, sc.runner, sc.id, fr) })
	case *wire.PresenceReceiptRequest:
		return s.onReceiptRequest(sc, fr)
	case *wire.Goodbye:
		return readGoodbye(sc.sess, wire.RoleRunner, fr)
	}
	return fmt.Errorf("%w: %s on the control stream", ErrUnexpectedFrame, fr.Type())
}

// onReceiptRequest answers a PresenceReceiptRequest (frame 0x14, which the
// reader passes only on a connection of version 0x0101 or later) with a
// §8.3 PresenceReceipt signed by this validator's key over the §12.6
// preimage with this network's chain_id: runner_pubkey is the
// connection's authenticated runner, (subset_epoch, validator_set_hash)
// the connection's epoch pair, block_height the current height,
// nonce_echo the request's nonce and accepting_new false while the
// runner's BackpressureSignal says so (§6.4, as in its HeartbeatPong). A
// connection gets at most one receipt per height: a further request at
// the same height, or one on a connection being retired, is ignored and
// counted, not a protocol error (SPEC-NOTES N18).
func (s *Server) onReceiptRequest(sc *sconn, req *wire.PresenceReceiptRequest) error {
	s.mu.Lock()
	h := s.height
	if s.conns[sc.id] != sc || (sc.receipted && sc.receiptAt >= h) {
		s.mu.Unlock()
		s.stats.receiptsIgnored.Add(1)
		return nil
	}
	sc.receiptAt, sc.receipted = h, true
	accepting := s.pres.AcceptingNew(sc.runner)
	s.mu.Unlock()
	r := &wire.PresenceReceipt{
		ValidatorPubKey: s.cfg.Key.PubKey(), RunnerPubKey: sc.sess.RunnerPubKey,
		SubsetEpoch: sc.pair.SubsetEpoch, ValidatorSetHash: sc.pair.ValidatorSetHash,
		BlockHeight: h, NonceEcho: req.Nonce, AcceptingNew: accepting,
	}
	if err := r.Sign(s.cfg.ChainID, s.cfg.Key); err != nil {
		return err // the session's keys were role-checked at the handshake
	}
	if err := sc.ctl.write(r); err != nil {
		return err
	}
	s.stats.receipts.Add(1)
	return nil
}

// event applies one local-presence event at the current height.
func (s *Server) event(fn func(h uint64) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fn(s.height)
}

// onPing verifies a HeartbeatPing against this connection (signature bound
// to connection_id, strictly increasing nonce) and answers with a signed
// HeartbeatPong carrying accepting_new (§6.3, §6.4).
func (s *Server) onPing(sc *sconn, p *wire.HeartbeatPing) error {
	if err := p.Verify(sc.sess); err != nil {
		s.stats.pingsRejected.Add(1)
		return err
	}
	s.mu.Lock()
	h := s.height
	if s.conns[sc.id] == sc {
		s.handOverLocked(sc.runner)
	}
	err := s.pres.Ping(h, sc.runner, sc.id, p.Nonce)
	sc.pinged = sc.pinged || err == nil
	accepting := s.pres.AcceptingNew(sc.runner)
	mutate := s.mutatePong
	s.mu.Unlock()
	if err != nil {
		s.stats.pingsRejected.Add(1)
		return err
	}
	s.stats.pingsOK.Add(1)
	pong := &wire.HeartbeatPong{BlockHeight: h, NonceEcho: p.Nonce, AcceptingNew: accepting}
	if mutate != nil {
		mutate(pong)
	}
	pong.Sign(sc.sess, s.cfg.Key)
	return sc.ctl.write(pong)
}

// drop forgets a closed connection: the runner leaves local presence at
// once (§11.3).
func (s *Server) drop(sc *sconn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(sc)
}

// retire is [Server.retireLocked] under the lock.
func (s *Server) retire(sc *sconn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retireLocked(sc)
}

// retireLocked forgets a connection whose epoch pair expired (§5.3 point
// 4): if the runner has another connection that has pinged, its
// local-presence entry is handed over (see Server.handover) rather than
// closed, else it is closed as any lost connection is. s.mu held.
func (s *Server) retireLocked(sc *sconn) {
	if s.conns[sc.id] != sc {
		return
	}
	if !slices.ContainsFunc(s.byRunner[sc.runner], func(o *sconn) bool { return o != sc && o.pinged }) {
		s.forgetLocked(sc)
		return
	}
	delete(s.conns, sc.id)
	s.setRunnerConns(sc.runner, slices.DeleteFunc(slices.Clone(s.byRunner[sc.runner]), func(o *sconn) bool { return o == sc }))
	s.handover[sc.runner] = append(s.handover[sc.runner], sc.id)
}

// handOverLocked closes runner's handed-over presence entries. s.mu held.
func (s *Server) handOverLocked(runner cip11.Address) {
	ids, ok := s.handover[runner]
	if !ok {
		return
	}
	for _, id := range ids {
		_ = s.pres.Close(s.height, runner, id)
	}
	delete(s.handover, runner)
}

// forgetLocked removes sc from the admitted connections and local
// presence; a no-op once it is gone (replaced, expired or dropped). s.mu held.
func (s *Server) forgetLocked(sc *sconn) {
	if s.conns[sc.id] != sc {
		return
	}
	delete(s.conns, sc.id)
	list := s.byRunner[sc.runner]
	for i, c := range list {
		if c == sc {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	s.setRunnerConns(sc.runner, list)
	_ = s.pres.Close(s.height, sc.runner, sc.id)
	if len(list) == 0 {
		s.handOverLocked(sc.runner) // §11.3: no connection left, nothing to hand over to
	}
}

// IsPresent reports whether runner is in this validator's local presence
// at the current height (§7.4).
func (s *Server) IsPresent(runner cip11.Address) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pres.IsPresent(runner, s.height)
}

// Present lists local presence at the current height (§7.4).
func (s *Server) Present() []cip11.Address {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pres.Present(s.height)
}

// Connected reports whether runner has an admitted connection.
func (s *Server) Connected(runner cip11.Address) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byRunner[runner]) > 0
}

// ProposerInput is the PresenceInputV1 bytes for block h+1 (§8.1): local
// presence at h indexed against the registry as of h, the new block's
// parent (§8.5).
func (s *Server) ProposerInput(h uint64) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	parent, err := s.cfg.Registry.At(h) // under s.mu: registry reads are serialised
	if err != nil {
		return nil, err
	}
	_, b := s.pres.ProposerInput(h, parent)
	return b, nil
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
