package quic

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/local"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
	qgo "github.com/quic-go/quic-go"
)

// The validator's side of the handshake (§6.1–§6.2, §7.4, D28): which
// pair it offers, Hello and HelloAck, and admission of the runner's
// connection.

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
