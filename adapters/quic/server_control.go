package quic

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
)

// A runner's connection after admission: the control stream, HeartbeatPings
// and presence (§6.3–§6.4, §7.4), retirement and hand-over (§5.3).

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
