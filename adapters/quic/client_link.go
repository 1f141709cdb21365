package quic

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
	qgo "github.com/quic-go/quic-go"
)

// The link: one runner→validator QUIC connection for an epoch pair, its
// reconnect loop (§11.3), handshake (§6.1–§6.2, §7.4), control stream and
// HeartbeatPings (§6.3).

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
	if l.c.logLim.allow("refusing " + hex.EncodeToString(l.peer[:]) + " " + GoodbyeReason(err).String()) {
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
	if l.c.logLim.allow("refused " + hex.EncodeToString(l.peer[:]) + " " + g.Reason.String()) {
		// Draining and Shutdown (a validator starting, stopping or
		// restarting) are transient: Info. The others need the operator.
		level := slog.LevelWarn
		if g.Reason == wire.GoodbyeDraining || g.Reason == wire.GoodbyeShutdown {
			level = slog.LevelInfo
		}
		retry := "none"
		if g.RetryAfterBlocks != nil {
			retry = strconv.FormatUint(*g.RetryAfterBlocks, 10)
		}
		l.c.log.Log(context.Background(), level, "quic: refused by validator", "validator", hex.EncodeToString(l.peer[:]), "reason", g.Reason.String(), "detail", g.Detail,
			"verified", g.Verified, "retry_after_blocks", retry)
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
