package node

import (
	"cmp"
	"context"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/chain"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
)

// certState is a Mode-A runner's certificate schedule (§8.3), owned by the
// runner loop.
type certState struct {
	anchor uint64 // the newest anchor submitted (the greatest receipt height)
	tried  uint64 // height of the last submission attempt
	sent   int64  // certificates submitted
}

// certify keeps a Mode-A runner's presence_proven_until ahead of the
// chain (§8.3): with PRESENCE_HARD_EXCLUDE_ENABLED, once the newest anchor
// it submitted is older than 2/3 of PRESENCE_PROOF_TTL_BLOCKS (or none was),
// it submits a SubmitPresenceCertificate with the newest verified receipts
// (the QUIC client's Receipts, one per validator) that are accepting_new
// and within RECEIPT_FRESHNESS_BLOCKS of the newest, at most t_hard + 1 of
// them, if at least t_hard remain and the newest is above the last
// anchor (the chain accepts only a strictly newer one). The certificate
// height is the newest receipt's height. A submission that is not admitted
// or not accepted is retried every few blocks with newer receipts. One
// certificate per TTL·2/3 is the cadence the §8.4 byte estimate assumes
// within a factor of 1.5 (it divides by the TTL).
func (r *Runner) certify(ctx context.Context, h uint64) {
	p := r.cfg.Genesis.P()
	if !p.PresenceHardExcludeEnabled || r.cfg.NoCertificates {
		return
	}
	ttl := p.PresenceProofTTLBlocks
	due := r.cert.anchor == 0 || h+ttl/3 >= r.cert.anchor+ttl
	if !due || (r.cert.tried > 0 && h < r.cert.tried+certRetryBlocks) {
		return
	}
	rs := freshReceipts(r.usableReceipts(h+1), p)
	if len(rs) < int(p.THard) || len(rs) == 0 || rs[0].BlockHeight <= r.cert.anchor {
		return
	}
	top := rs[0].BlockHeight
	// t_hard receipts and one spare (a receipt the chain does not count,
	// e.g. of a validator that left the set, does not sink the
	// certificate); more would only add bytes (§8.4).
	rs = rs[:min(len(rs), int(p.THard)+1, chain.MaxCertificateReceipts)]
	payload, err := chain.CertPayload(top, rs)
	if err != nil {
		r.log.Warn("presence certificate not built (§8.3)", "height", h, "err", err)
		return
	}
	tx, err := SignTx(r.cfg.Key, uint64(r.cfg.Genesis.ChainID), chain.TxCertificate, top, cip11.Hash{}, payload)
	if err != nil {
		return
	}
	r.cert.tried = h
	if err := r.cfg.Chain.Submit(ctx, tx.Bytes()); err != nil {
		r.log.Debug("presence certificate not admitted", "height", h, "err", err)
		return
	}
	r.cert.anchor = top
	r.cert.sent++
	r.log.Debug("presence certificate submitted (§8.3)", "height", h, "anchor", top, "receipts", len(rs))
}

// usableReceipts are the client's receipts whose epoch pair the chain can
// still select from height at (the next block) through at +
// certInclusionBlocks (§5.3: past the cutoff an epoch-E pair selects
// nothing, and a certificate may be included a few blocks after it was
// sent) and whose validator is in that snapshot's Sub(R): the
// signature-free §8.3 prechecks the runner can apply itself, so that a
// receipt of a validator that left, or of a pair about to expire, does not
// sink the certificate.
func (r *Runner) usableReceipts(at uint64) []wire.PresenceReceipt {
	all := r.cl.Receipts()
	p, self := r.cfg.Genesis.P(), r.cfg.Key.PubKey()
	for _, h := range []uint64{at, at + certInclusionBlocks} {
		ep, err := r.sets.EpochsAt(h)
		if err != nil {
			return nil
		}
		all = slices.DeleteFunc(all, func(rc wire.PresenceReceipt) bool {
			s, err := ep.Select(h, wire.EpochPair{SubsetEpoch: rc.SubsetEpoch, ValidatorSetHash: rc.ValidatorSetHash}, p)
			if err != nil {
				return true
			}
			v, err := validators.PeerKeyOf(rc.ValidatorPubKey)
			if err != nil {
				return true
			}
			in, err := s.InSub(self, v, p)
			return err != nil || !in
		})
	}
	return all
}

// certInclusionBlocks is how many blocks after the next one a certificate
// may wait for inclusion and still count every receipt it carries.
const certInclusionBlocks = 4

// certRetryBlocks spaces certificate attempts.
const certRetryBlocks = 3

// freshReceipts keeps the receipts that can count (§8.3): accepting_new,
// and within RECEIPT_FRESHNESS_BLOCKS of the newest one; newest first.
func freshReceipts(all []wire.PresenceReceipt, p cip11.Params) []wire.PresenceReceipt {
	rs := slices.DeleteFunc(slices.Clone(all), func(r wire.PresenceReceipt) bool { return !r.AcceptingNew })
	slices.SortStableFunc(rs, func(a, b wire.PresenceReceipt) int { return cmp.Compare(b.BlockHeight, a.BlockHeight) })
	if len(rs) == 0 {
		return nil
	}
	top := rs[0].BlockHeight
	return slices.DeleteFunc(rs, func(r wire.PresenceReceipt) bool { return top-r.BlockHeight > p.ReceiptFreshnessBlocks })
}

// CertificatesSent counts the Mode-A certificates the runner submitted
// and the chain admitted to its mempool (§8.3).
func (r *Runner) CertificatesSent() int64 {
	r.certMu.Lock()
	defer r.certMu.Unlock()
	return r.cert.sent
}
