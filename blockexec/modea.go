package blockexec

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/presence/modea"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
	"github.com/cip11/cip11/wire"
)

// ErrNoModeA marks a block with a SubmitPresenceCertificate in a log whose
// header has no Mode-A machinery (no receipt_chain_id and peer_pubkeys), or
// executed over a store without Mode-A state (store.ModeAState).
var ErrNoModeA = errors.New("blockexec: certificate without Mode-A machinery")

// Certificate results written to chainlog.CertificateOutcome.Result (§8.3).
const (
	CertAccepted            = "accepted"
	CertOutOfCycles         = "out_of_cycles"
	CertRunnerNotRegistered = "runner_not_registered"
	CertHeightAhead         = "height_ahead"
	CertBelowThreshold      = "below_threshold"
	CertAnchorNotNewer      = "anchor_not_newer"
)

// CertificateResultName is the outcome name of a [modea.ProcessCertificate]
// error: a certificate-level rejection's name, CertAccepted for nil, and ok
// false for an error that is not a rejection (a store failure, which makes
// the block fail).
func CertificateResultName(err error) (name string, ok bool) {
	switch {
	case err == nil:
		return CertAccepted, true
	case errors.Is(err, modea.ErrOutOfCycles):
		return CertOutOfCycles, true
	case errors.Is(err, modea.ErrRunnerNotRegistered):
		return CertRunnerNotRegistered, true
	case errors.Is(err, modea.ErrCertificateHeightAhead):
		return CertHeightAhead, true
	case errors.Is(err, modea.ErrBelowThreshold):
		return CertBelowThreshold, true
	case errors.Is(err, modea.ErrAnchorNotNewer):
		return CertAnchorNotNewer, true
	}
	return "", false
}

// modeA is the executor's §8.3 machinery: the header's validator-set
// snapshots (validator_sets[i] is epoch i, §5.4) and the receipt chain_id.
type modeA struct {
	chainID uint64
	snaps   []*validators.Snapshot
	epochs  []validators.Epochs // epochs[i]: snaps[i] current, snaps[i−1] previous
}

func newModeA(h chainlog.Header) (*modeA, error) {
	if h.ReceiptChainID == nil {
		return nil, nil
	}
	m := &modeA{chainID: uint64(*h.ReceiptChainID)}
	for i, vs := range h.Validators {
		recs := make([]validators.Record, len(vs.PeerPubKeys))
		for j, k := range vs.PeerPubKeys {
			recs[j].PeerPubKey = validators.PeerKey(k)
		}
		s, err := validators.NewSnapshot(uint64(i), recs, uint64(vs.ActivationHeight))
		if err != nil {
			return nil, fmt.Errorf("validator_sets[%d]: %w", i, err)
		}
		var prev *validators.Snapshot
		if i > 0 {
			prev = m.snaps[i-1]
		}
		e, err := validators.NewEpochs(prev, s)
		if err != nil {
			return nil, fmt.Errorf("validator_sets[%d]: %w", i, err)
		}
		m.snaps, m.epochs = append(m.snaps, s), append(m.epochs, e)
	}
	return m, nil
}

// at is the §5.3 view in force at height h.
func (m *modeA) at(h uint64) validators.Epochs {
	i := 0
	for i+1 < len(m.snaps) && m.snaps[i+1].ActivationHeight() <= h {
		i++
	}
	return m.epochs[i]
}

// presenceSource is the §7.2 presence source with the §8.3 point-3 Mode-A
// read point over the executor's store: the engine resolves PresenceInput(H)
// before the block's certificates are executed, so the store's Mode-A state
// is then the parent state (certificates in H count from H+1).
func presenceSource(p cip11.Params, s store.Store) *presence.BlockPresenceSource {
	src := presence.NewPresenceSource(p)
	if ms, ok := s.(store.ModeAState); ok {
		src.ModeA = modea.Source(func(uint64) (modea.Reader, error) { return ms, nil })
	}
	return src
}

// latestRunners is the §8.3 RunnerRegistration lookup: the registry
// including the block's own registry changes.
type latestRunners struct{ w store.Registrar }

func (l latestRunners) Runner(a cip11.Address) (state.Runner, bool) {
	r, ok, err := l.w.Latest(a)
	return r, ok && err == nil
}

// receipt converts a logged receipt. Bytes that are not a wire PubKey or a
// 64-byte signature leave the field zero, which the §8.3 prechecks reject
// (ErrReceiptRunnerKey / ErrReceiptValidatorKey) or the signature check
// fails, after the receipt's precheck cycles are charged.
func receipt(c chainlog.Receipt) wire.PresenceReceipt {
	r := wire.PresenceReceipt{
		SubsetEpoch: uint64(c.SubsetEpoch), ValidatorSetHash: c.ValidatorSetHash,
		BlockHeight: uint64(c.BlockHeight), NonceEcho: uint64(c.NonceEcho), AcceptingNew: c.AcceptingNew,
	}
	r.ValidatorPubKey, _ = wire.ParsePubKey(c.ValidatorPubKey)
	r.RunnerPubKey, _ = wire.ParsePubKey(c.RunnerPubKey)
	if len(c.ValidatorSigned) == wire.ValidatorSigLen {
		r.ValidatorSigned = wire.ValidatorSig(c.ValidatorSigned)
	}
	return r
}

// ReceiptOf is the chain-log form of a wire receipt (§8.3).
func ReceiptOf(r *wire.PresenceReceipt) chainlog.Receipt {
	return chainlog.Receipt{
		ValidatorPubKey: r.ValidatorPubKey.Bytes(), RunnerPubKey: r.RunnerPubKey.Bytes(),
		SubsetEpoch: chainlog.U64(r.SubsetEpoch), ValidatorSetHash: r.ValidatorSetHash,
		BlockHeight: chainlog.U64(r.BlockHeight), NonceEcho: chainlog.U64(r.NonceEcho),
		AcceptingNew: r.AcceptingNew, ValidatorSigned: chainlog.Bytes(r.ValidatorSigned[:]),
	}
}

// certificates executes the block's SubmitPresenceCertificate transactions
// in order (§8.3), after the engine and the registry changes. Each runs on
// its own meter, funded for every receipt's precheck and signature attempt
// (the devnet transaction carries no fee; the §8.3 order and charges are
// still applied and reported). A rejected certificate leaves the state
// untouched and the block valid.
func (x *Executor) certificates(h uint64, b *chainlog.Block) ([]chainlog.CertificateOutcome, error) {
	var out []chainlog.CertificateOutcome
	for i, tx := range b.Txs {
		c := tx.Certificate
		if c == nil {
			continue
		}
		ms, ok := x.s.(store.ModeAState)
		if x.modeA == nil || !ok {
			return nil, fmt.Errorf("txs[%d]: %w", i, ErrNoModeA)
		}
		cert := &modea.Certificate{Runner: c.Runner, Height: uint64(c.Height), Receipts: make([]wire.PresenceReceipt, len(c.Receipts))}
		for j := range c.Receipts {
			cert.Receipts[j] = receipt(c.Receipts[j])
		}
		meter := &modea.CycleMeter{Limit: modea.CertificateCycles(x.params, len(cert.Receipts), len(cert.Receipts))}
		res, err := modea.ProcessCertificate(&modea.CertificateContext{
			Params: x.params, ChainID: x.modeA.chainID, CurrentHeight: h, Epochs: x.modeA.at(h),
			Registry: latestRunners{x.s.Registrar()}, Store: ms, Meter: meter,
		}, cert)
		name, ok := CertificateResultName(err)
		if !ok {
			return nil, fmt.Errorf("txs[%d]: certificate of %s: %w", i, c.Runner, err)
		}
		o := chainlog.CertificateOutcome{Tx: uint32(i), Runner: c.Runner, Result: name,
			Counted: uint32(len(res.Counted())), Cycles: chainlog.U64(res.Cycles)}
		if err == nil {
			o.Anchor, o.ProvenUntil = chainlog.U64(res.Record.Anchor), chainlog.U64(res.Record.ProvenUntil)
			x.modeAValid = false // the digest's Mode-A section changed
		}
		out = append(out, o)
	}
	return out, nil
}

// appendModeA appends the Mode-A section of the state digest
// (docs/chainlog.md): nothing while no runner has an anchor, else "modea" ‖
// count_be8 ‖ (address ‖ presence_anchor_be8 ‖ presence_proven_until_be8)*
// ascending by address. The section changes only when a certificate is
// accepted, so it is kept between blocks (modeAValid) instead of being
// re-read from the store on every block; an accepted certificate or a
// discarded block drops it.
func (x *Executor) appendModeA(buf []byte) ([]byte, error) {
	if x.modeAValid {
		return append(buf, x.modeASection...), nil
	}
	ms, ok := x.s.(store.ModeAState)
	if !ok {
		return buf, nil
	}
	recs, err := ms.PresenceAnchors()
	if err != nil {
		return buf, err
	}
	sec := x.modeASection[:0]
	if len(recs) > 0 {
		sec = binary.BigEndian.AppendUint64(append(sec, "modea"...), uint64(len(recs)))
		for _, e := range recs {
			sec = append(sec, e.Runner[:]...)
			sec = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(sec, e.Record.Anchor), e.Record.ProvenUntil)
		}
	}
	x.modeASection, x.modeAValid = sec, true
	return append(buf, sec...), nil
}
