package blockexec

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/seed"
)

// ReconfigureLeadBlocks is the least distance from the block that carries a
// [chainlog.Reconfigure] to its activation height (SPEC-NOTES C11). It
// exceeds SELECTION_SEED_DELAY_VIEWS (3, which may only rise: the check
// uses the chain's value) so that no round a block already resolved through
// advance_round changes epoch, it exceeds CometBFT's two-height delay
// before validator updates apply, and it gives runners blocks to dial the
// new set before it admits (§5.3).
const ReconfigureLeadBlocks = 8

// ReconfigureLead is the least distance from the block carrying a
// reconfiguration to its activation: max(ReconfigureLeadBlocks,
// seedDelay + 1), the sum saturating at 2^64−1 (a governance
// SELECTION_SEED_DELAY_VIEWS of 2^64−1 must not wrap the lead to 0 and
// fall back to 8; with it no activation is far enough).
func ReconfigureLead(seedDelay uint64) uint64 {
	d := seedDelay
	if d < ^uint64(0) {
		d++
	}
	return max(uint64(ReconfigureLeadBlocks), d)
}

// ErrReconfigure marks a [chainlog.Reconfigure] that does not fit the
// schedule: the block carrying it is invalid.
var ErrReconfigure = errors.New("blockexec: invalid reconfiguration")

// Epochs is the number of validator-set epochs the executor's schedule
// holds (the header's and the committed reconfigurations'): the next
// reconfiguration is epoch Epochs().
func (x *Executor) Epochs() uint64 { return uint64(len(x.hdr.Schedule.Activations)) }

// Reconfigurations are the reconfigurations the executor committed, in
// order (a restarted node hands them back through Options).
func (x *Executor) Reconfigurations() []chainlog.Reconfigure { return slices.Clone(x.reconfs) }

// CheckReconfigure reports whether a block at height h may carry r (§5.3–
// §5.4, D30, SPEC-NOTES C11): the schedule is a height schedule (D30); r
// is the next epoch; no earlier reconfiguration is still pending or in its
// overlap (r activates at least OVERLAP_BLOCKS after the last activation,
// and that one is ≤ h); r activates at least max(ReconfigureLeadBlocks,
// SELECTION_SEED_DELAY_VIEWS + 1) after h (ReconfigureLead; every sum is
// checked against 2^64−1 and never wraps) and within the schedule's
// known_through; r's set differs from the last epoch's by exactly one added
// or one removed validator; its group key and public shares are BLS12-381
// G2 keys; with Mode A, every set lists peer keys (they are r's). Errors
// wrap ErrReconfigure.
func (x *Executor) CheckReconfigure(h uint64, r *chainlog.Reconfigure) error {
	_, err := checkSchedule(&x.hdr, h, r)
	return err
}

// CheckScheduleChange is CheckReconfigure against a header whose schedule
// (activations, known_through, validator_sets, receipt_chain_id,
// namespace, OVERLAP_BLOCKS, SELECTION_SEED_DELAY_VIEWS) is the chain's
// so far: the pure rule the reconfigure_check vectors pin. The schedule's
// epoch count is len(Schedule.Activations).
func CheckScheduleChange(h chainlog.Header, height uint64, r *chainlog.Reconfigure) error {
	_, err := checkSchedule(&h, height, r)
	return err
}

func checkSchedule(hdr *chainlog.Header, h uint64, r *chainlog.Reconfigure) (*seed.Verifier, error) {
	s := hdr.Schedule
	if !s.Height() || len(hdr.Validators) == 0 {
		return nil, fmt.Errorf("%w: the chain has no height schedule (D30)", ErrReconfigure)
	}
	if want := uint64(len(s.Activations)); uint64(r.Epoch) != want {
		return nil, fmt.Errorf("%w: epoch %d, the next epoch is %d", ErrReconfigure, r.Epoch, want)
	}
	last := uint64(s.Activations[len(s.Activations)-1])
	lead := ReconfigureLead(hdr.Params.SelectionSeedDelayViews)
	a := uint64(r.Activation)
	switch {
	case last > h:
		return nil, fmt.Errorf("%w: epoch %d activates at %d, after this block %d: one reconfiguration at a time", ErrReconfigure, len(s.Activations)-1, last, h)
	case h > ^uint64(0)-lead || a < h+lead:
		return nil, fmt.Errorf("%w: activation %d is less than %d blocks after block %d", ErrReconfigure, a, lead, h)
	case last > ^uint64(0)-hdr.Params.OverlapBlocks || a < last+hdr.Params.OverlapBlocks:
		return nil, fmt.Errorf("%w: activation %d is inside epoch %d's overlap (%d + OVERLAP_BLOCKS %d)", ErrReconfigure, a, len(s.Activations)-1, last, hdr.Params.OverlapBlocks)
	case a > uint64(s.KnownThrough):
		return nil, fmt.Errorf("%w: activation %d is after the schedule's known_through %d", ErrReconfigure, a, s.KnownThrough)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReconfigure, err)
	}
	if err := oneChange(hdr.Validators[len(hdr.Validators)-1], r.Set, hdr.ReceiptChainID != nil); err != nil {
		return nil, err
	}
	for i, m := range r.Set {
		if _, err := seed.DecodePublicKey(m.ThresholdPubKey[:]); err != nil {
			return nil, fmt.Errorf("%w: validator_set[%d].threshold_pubkey: %w", ErrReconfigure, i, err)
		}
	}
	v, err := seed.NewVerifier(r.GroupKey[:], hdr.Namespace)
	if err != nil {
		return nil, fmt.Errorf("%w: group_key: %w", ErrReconfigure, err)
	}
	return v, nil
}

// oneChange checks that set is prev with exactly one validator added or
// one removed. Without peer keys in the header (no Mode A) only the size
// can be compared.
func oneChange(prev chainlog.ValidatorSet, set []chainlog.SetMember, keys bool) error {
	n, m := int(prev.Participants), len(set)
	if m != n+1 && m != n-1 {
		return fmt.Errorf("%w: %d validators after %d: add or remove exactly one", ErrReconfigure, m, n)
	}
	if !keys {
		return nil
	}
	common := 0
	for _, s := range set {
		if slices.Contains(prev.PeerPubKeys, s.PeerPubKey) {
			common++
		}
	}
	if common != min(n, m) {
		return fmt.Errorf("%w: the set keeps %d of %d validators: add or remove exactly one", ErrReconfigure, common, n)
	}
	return nil
}

// reconfigure stages block h's reconfiguration (at most one; the block is
// invalid otherwise), applied to the schedule when the block commits.
func (x *Executor) reconfigure(h uint64, b *chainlog.Block) error {
	for i, tx := range b.Txs {
		r := tx.Reconfigure
		if r == nil {
			continue
		}
		if x.staged != nil {
			return fmt.Errorf("txs[%d]: %w: a second reconfiguration in block %d", i, ErrReconfigure, h)
		}
		v, err := checkSchedule(&x.hdr, h, r)
		if err != nil {
			return fmt.Errorf("txs[%d]: %w", i, err)
		}
		x.staged, x.stagedKey = r, v
	}
	return nil
}

// applyReconfigure extends the schedule by r (v its group key's verifier):
// the threshold key, the activation, the set size and (with Mode A) its
// peer keys, then what is derived from them.
func (x *Executor) applyReconfigure(r *chainlog.Reconfigure, v *seed.Verifier) error {
	h := &x.hdr
	h.ThresholdKeys = append(h.ThresholdKeys, chainlog.EpochKey{Epoch: r.Epoch, PublicKey: r.GroupKey})
	h.Schedule.Activations = append(h.Schedule.Activations, r.Activation)
	vs := chainlog.ValidatorSet{ActivationHeight: r.Activation, Participants: uint32(len(r.Set))}
	if h.ReceiptChainID != nil {
		for _, m := range r.Set {
			vs.PeerPubKeys = append(vs.PeerPubKeys, m.PeerPubKey)
		}
	}
	h.Validators = append(h.Validators, vs)
	x.pre.add(uint64(r.Epoch), v)
	x.adv = Advance(h.Schedule)
	x.reconfs = append(x.reconfs, *r)
	x.reconfHash = ReconfigureChain(x.reconfHash, r)
	if h.ReceiptChainID != nil {
		ma, err := newModeA(*h)
		if err != nil {
			return fmt.Errorf("%w: Mode A: %w", ErrReconfigure, err)
		}
		x.modeA = ma
	}
	return nil
}

// ReconfigureChain is the state digest's running hash over the
// reconfigurations (docs/chainlog.md): keccak256(prev ‖ canonical bytes of
// r), prev 32 zero bytes for the first.
func ReconfigureChain(prev cip11.Hash, r *chainlog.Reconfigure) cip11.Hash {
	enc, _ := chainlog.EncodeReconfigure(r) // validated when decoded or staged
	return cip11.Keccak256(prev[:], enc)
}

// appendReconfig is the state digest's reconfiguration section, present
// once a reconfiguration is committed or staged in the open block:
// "reconfig" ‖ the running hash including the staged one.
func (x *Executor) appendReconfig(buf []byte) []byte {
	if len(x.reconfs) == 0 && x.staged == nil {
		return buf
	}
	h := x.reconfHash
	if x.staged != nil {
		h = ReconfigureChain(h, x.staged)
	}
	return append(append(buf, "reconfig"...), h[:]...)
}

// RestoreReconfiguration extends the schedule by r, which a block the
// store already committed carried (a restarted node reads it from its
// block log; Options.Reconfigurations is the same at construction). r
// must be the next epoch; no block may be open.
func (x *Executor) RestoreReconfiguration(r *chainlog.Reconfigure) error {
	if x.open {
		return fmt.Errorf("%w: restore while a block is open", ErrReconfigure)
	}
	if uint64(r.Epoch) != x.Epochs() {
		return fmt.Errorf("%w: restore epoch %d, the schedule's next is %d", ErrReconfigure, r.Epoch, x.Epochs())
	}
	v, err := seed.NewVerifier(r.GroupKey[:], x.hdr.Namespace)
	if err != nil {
		return fmt.Errorf("%w: restore epoch %d: group_key: %w", ErrReconfigure, r.Epoch, err)
	}
	return x.applyReconfigure(r, v)
}
