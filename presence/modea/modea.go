package modea

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

// Certificate-level rejections of SubmitPresenceCertificate (§8.3). The
// certificate is rejected, the state is not touched, and the cycles already
// charged stay charged.
var (
	// ErrOutOfCycles: the meter could not pay the next §8.3 charge. No
	// verification is ever attempted without its cycles paid first.
	ErrOutOfCycles = errors.New("modea: not enough cycles for the next Mode-A charge")
	// ErrRunnerNotRegistered: the certificate's runner resolves to no
	// RunnerRegistration (§8.3).
	ErrRunnerNotRegistered = errors.New("modea: certificate runner is not registered")
	// ErrCertificateHeightAhead: the certificate height exceeds
	// current_block_height, so no receipt can be fresh (§8.3 freshness).
	ErrCertificateHeightAhead = errors.New("modea: certificate height is above current_block_height")
	// ErrBelowThreshold: fewer than t_hard distinct validators kept a
	// signature-valid receipt (§8.3 point 4).
	ErrBelowThreshold = errors.New("modea: fewer than t_hard distinct valid receipts")
	// ErrAnchorNotNewer: max(counted receipt.block_height) is not strictly
	// greater than presence_anchor[runner] (§8.3 anti-replay).
	ErrAnchorNotNewer = errors.New("modea: certificate is not strictly newer than presence_anchor")
)

// Receipt-level verdicts (§8.3). A receipt that fails one is not counted;
// the certificate may still reach t_hard with the others. The prechecks run
// in the order listed here and report the first failure; between
// ErrReceiptStale and the signature, the epoch-pair, snapshot and subset
// prechecks report the [validators] admission sentinels (§5.3, §8.3).
var (
	// ErrReceiptRunnerKey: runner_pubkey is not a scheme-0x01 key or its
	// derived address is not the certificate's runner.
	ErrReceiptRunnerKey = errors.New("modea: receipt runner_pubkey does not derive the certificate runner")
	// ErrReceiptValidatorKey: validator_pubkey is not a scheme-0x02 key.
	ErrReceiptValidatorKey = errors.New("modea: receipt validator_pubkey is not an Ed25519 wire PubKey")
	// ErrReceiptNotAccepting: accepting_new is false (§6.4).
	ErrReceiptNotAccepting = errors.New("modea: receipt has accepting_new = false")
	// ErrReceiptFuture: receipt.block_height > certificate height.
	ErrReceiptFuture = errors.New("modea: receipt block_height is above the certificate height")
	// ErrReceiptStale: height − receipt.block_height > RECEIPT_FRESHNESS_BLOCKS.
	ErrReceiptStale = errors.New("modea: receipt is older than RECEIPT_FRESHNESS_BLOCKS")
	// ErrReceiptSignature: the Ed25519 signature was attempted (and paid
	// for) and does not verify under the snapshot peer_pubkey.
	ErrReceiptSignature = errors.New("modea: receipt signature does not verify")
	// ErrReceiptSuperseded: the same raw validator key already has a
	// retained receipt with a greater or equal block_height; this one is
	// ignored without verification (§8.3 step 4).
	ErrReceiptSuperseded = errors.New("modea: another receipt of the same validator is retained")
)

// Record is a runner's Mode-A state (§8.3): presence_anchor, the
// observation height of its newest accepted certificate, and
// presence_proven_until = anchor + PRESENCE_PROOF_TTL_BLOCKS.
type Record struct {
	Anchor      uint64
	ProvenUntil uint64
}

// Reader reads §8.3 Mode-A state (presence_anchor, presence_proven_until).
// An absent runner has no record (ok false), which the rules treat as
// anchor 0 and proven_until absent.
type Reader interface {
	PresenceAnchor(runner cip11.Address) (rec Record, ok bool, err error)
}

// Store is §8.3 Mode-A state during one block's execution: reads see
// earlier writes of the same block.
type Store interface {
	Reader
	PutPresenceAnchor(runner cip11.Address, rec Record) error
}

// Meter is the injected execution meter (§8.3 evaluation order). Charge
// debits cycles, or debits nothing and returns an error if fewer remain.
type Meter interface {
	Charge(cycles uint64) error
}

// CycleMeter is an in-memory [Meter] with a fixed budget (§8.3 metering).
type CycleMeter struct {
	Limit uint64 // cycles available
	Used  uint64 // cycles charged so far
}

// Charge implements [Meter] (§8.3); the error wraps [ErrOutOfCycles].
func (m *CycleMeter) Charge(cycles uint64) error {
	if cycles > m.Limit-m.Used {
		return fmt.Errorf("%w: need %d, %d left", ErrOutOfCycles, cycles, m.Limit-m.Used)
	}
	m.Used += cycles
	return nil
}

// RunnerLookup resolves RunnerRegistration records (§8.3: the runner must
// resolve to one); a
// [state.RegistryView] is one.
type RunnerLookup interface {
	Runner(addr cip11.Address) (state.Runner, bool)
}

// Certificate is a decoded SubmitPresenceCertificate (§8.3). runner_signed
// is the ordinary transaction signature, already checked by the
// transaction path that decoded it (§8.3 step 1), so it is not carried.
type Certificate struct {
	Runner   cip11.Address
	Height   uint64
	Receipts []wire.PresenceReceipt
}

// CertificateContext is what execution supplies to [ProcessCertificate] (§8.3).
type CertificateContext struct {
	Params        cip11.Params
	ChainID       uint64            // the executing network's chain_id (§8.3)
	CurrentHeight uint64            // current_block_height
	Epochs        validators.Epochs // the snapshots in force; pairs are selected at CurrentHeight
	Registry      RunnerLookup
	Store         Store
	Meter         Meter
}

// CertificateResult reports one [ProcessCertificate] call (§8.3).
type CertificateResult struct {
	// Record is the new presence_anchor / presence_proven_until (on acceptance).
	Record Record
	// Verdicts has one entry per receipt once prechecks ran: nil for a
	// counted receipt, else the receipt-level sentinel why it was not.
	Verdicts []error
	// Cycles is what this call charged, on acceptance and on rejection.
	Cycles uint64
}

// Counted returns the positions of the counted receipts, ascending: the
// retained, signature-valid receipts of §8.3 step 5.
func (r CertificateResult) Counted() []int {
	var out []int
	for i, v := range r.Verdicts {
		if v == nil {
			out = append(out, i)
		}
	}
	return out
}

// CertificateCycles is the §8.3 charge of a certificate that runs to the
// end: PRESENCE_CERT_BASE_CYCLES + n·PRESENCE_RECEIPT_PRECHECK_CYCLES +
// attempts·PRESENCE_RECEIPT_ED25519_VERIFY_CYCLES, saturating.
func CertificateCycles(p cip11.Params, receipts, attempts int) uint64 {
	c := p.PresenceCertBaseCycles
	c = addSat(c, mulSat(uint64(receipts), p.PresenceReceiptPrecheckCycles))
	return addSat(c, mulSat(uint64(attempts), p.PresenceReceiptEd25519VerifyCycles))
}

func addSat(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return ^uint64(0)
	}
	return s
}

func mulSat(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return ^uint64(0)
	}
	return lo
}

// certRun is the state of one ProcessCertificate call.
type certRun struct {
	c      *CertificateContext
	cert   *Certificate
	res    CertificateResult
	runner wire.PubKey // the first runner_pubkey whose address matched
	subs   map[*validators.Snapshot][]validators.PeerKey
}

func (r *certRun) charge(cycles uint64) error {
	if err := r.c.Meter.Charge(cycles); err != nil {
		if !errors.Is(err, ErrOutOfCycles) {
			err = fmt.Errorf("%w: %w", ErrOutOfCycles, err)
		}
		return err
	}
	r.res.Cycles = addSat(r.res.Cycles, cycles)
	return nil
}

// ProcessCertificate executes SubmitPresenceCertificate in the §8.3
// normative evaluation order:
//
//  1. charge PRESENCE_CERT_BASE_CYCLES, then PRESENCE_RECEIPT_PRECHECK_CYCLES
//     for every receipt entry (before any early rejection, §13);
//  2. certificate checks: the runner is registered; height ≤ current_block_height;
//  3. signature-free receipt prechecks (runner key, validator key,
//     accepting_new, freshness, epoch pair selected at current_block_height,
//     snapshot membership, Sub_epoch(runner) membership);
//  4. per raw validator key, candidates in descending block_height (ties in
//     certificate order): charge PRESENCE_RECEIPT_ED25519_VERIFY_CYCLES, then
//     verify, until one verifies; the rest of that key's candidates are
//     superseded. Keys are visited in order of first appearance;
//  5. at least t_hard retained receipts; anchor = their max block_height,
//     strictly above presence_anchor[runner]; then presence_anchor and
//     presence_proven_until = anchor + PRESENCE_PROOF_TTL_BLOCKS are written.
//
// On any error the store is untouched; the result still reports the cycles
// charged and, if prechecks ran, the per-receipt verdicts.
func ProcessCertificate(c *CertificateContext, cert *Certificate) (CertificateResult, error) {
	r := &certRun{c: c, cert: cert, subs: make(map[*validators.Snapshot][]validators.PeerKey, 2)}
	err := r.run()
	return r.res, err
}

func (r *certRun) run() error {
	if err := r.charge(r.c.Params.PresenceCertBaseCycles); err != nil {
		return err
	}
	for range r.cert.Receipts {
		if err := r.charge(r.c.Params.PresenceReceiptPrecheckCycles); err != nil {
			return err
		}
	}
	if _, ok := r.c.Registry.Runner(r.cert.Runner); !ok {
		return fmt.Errorf("%w: %s", ErrRunnerNotRegistered, r.cert.Runner)
	}
	if r.cert.Height > r.c.CurrentHeight {
		return fmt.Errorf("%w: %d > %d", ErrCertificateHeightAhead, r.cert.Height, r.c.CurrentHeight)
	}
	r.res.Verdicts = make([]error, len(r.cert.Receipts))
	keys := make([]validators.PeerKey, len(r.cert.Receipts))
	for i := range r.cert.Receipts {
		keys[i], r.res.Verdicts[i] = r.precheck(&r.cert.Receipts[i])
	}
	if err := r.verifyBuckets(keys); err != nil {
		return err
	}
	return r.settle()
}

// precheck applies every signature-free receipt rule (§8.3 step 2) and
// returns the receipt's raw validator key.
func (r *certRun) precheck(rc *wire.PresenceReceipt) (validators.PeerKey, error) {
	if err := r.checkRunnerKey(rc.RunnerPubKey); err != nil {
		return validators.PeerKey{}, err
	}
	v, err := validators.PeerKeyOf(rc.ValidatorPubKey)
	switch {
	case err != nil:
		return v, fmt.Errorf("%w: %w", ErrReceiptValidatorKey, err)
	case !rc.AcceptingNew:
		return v, ErrReceiptNotAccepting
	case rc.BlockHeight > r.cert.Height:
		return v, fmt.Errorf("%w: %d > %d", ErrReceiptFuture, rc.BlockHeight, r.cert.Height)
	case r.cert.Height-rc.BlockHeight > r.c.Params.ReceiptFreshnessBlocks:
		return v, fmt.Errorf("%w: age %d", ErrReceiptStale, r.cert.Height-rc.BlockHeight)
	}
	s, err := r.c.Epochs.Select(r.c.CurrentHeight, wire.EpochPair{SubsetEpoch: rc.SubsetEpoch, ValidatorSetHash: rc.ValidatorSetHash}, r.c.Params)
	if err != nil {
		return v, err
	}
	if !s.Contains(v) {
		return v, fmt.Errorf("%w: %x in epoch %d", validators.ErrValidatorNotInSet, v[:], s.Epoch())
	}
	if !slices.Contains(r.subOf(s), v) {
		return v, fmt.Errorf("%w: %x in epoch %d", validators.ErrOutsideSubset, v[:], s.Epoch())
	}
	return v, nil
}

// checkRunnerKey requires a scheme-0x01 key deriving the certificate runner;
// the derivation runs once per distinct key bytes (one, in a valid certificate).
func (r *certRun) checkRunnerKey(k wire.PubKey) error {
	if !r.runner.IsZero() && k == r.runner {
		return nil
	}
	addr, err := k.RunnerAddress()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrReceiptRunnerKey, err)
	}
	if addr != r.cert.Runner {
		return fmt.Errorf("%w: derives %s, certificate runner %s", ErrReceiptRunnerKey, addr, r.cert.Runner)
	}
	r.runner = k
	return nil
}

// subOf is Sub_epoch(runner) for snapshot s, computed once per snapshot.
// Only called after checkRunnerKey accepted r.runner.
func (r *certRun) subOf(s *validators.Snapshot) []validators.PeerKey {
	sub, ok := r.subs[s]
	if !ok {
		sub, _ = s.Sub(r.runner, r.c.Params) // r.runner is a checked scheme-0x01 key
		r.subs[s] = sub
	}
	return sub
}

// verifyBuckets is §8.3 steps 3–4 over the prechecked receipts.
func (r *certRun) verifyBuckets(keys []validators.PeerKey) error {
	var order []validators.PeerKey
	buckets := make(map[validators.PeerKey][]int)
	for i, v := range r.res.Verdicts {
		if v != nil {
			continue
		}
		if _, seen := buckets[keys[i]]; !seen {
			order = append(order, keys[i])
		}
		buckets[keys[i]] = append(buckets[keys[i]], i)
	}
	for _, k := range order {
		if err := r.verifyBucket(buckets[k]); err != nil {
			return err
		}
	}
	return nil
}

// verifyBucket verifies one validator's candidates, greatest block_height
// first, stopping at the first valid signature.
func (r *certRun) verifyBucket(idx []int) error {
	rs := r.cert.Receipts
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(rs[b].BlockHeight, rs[a].BlockHeight) })
	found := false
	for _, i := range idx {
		if found {
			r.res.Verdicts[i] = ErrReceiptSuperseded
			continue
		}
		if err := r.charge(r.c.Params.PresenceReceiptEd25519VerifyCycles); err != nil {
			return err
		}
		if err := rs[i].Verify(r.c.ChainID); err != nil {
			r.res.Verdicts[i] = fmt.Errorf("%w: %w", ErrReceiptSignature, err)
			continue
		}
		found = true
	}
	return nil
}

// settle is §8.3 step 5: threshold, strictly newer anchor, state update.
func (r *certRun) settle() error {
	counted, anchor := 0, uint64(0)
	for i, v := range r.res.Verdicts {
		if v == nil {
			counted++
			anchor = max(anchor, r.cert.Receipts[i].BlockHeight)
		}
	}
	if counted < int(r.c.Params.THard) {
		return fmt.Errorf("%w: %d < t_hard %d", ErrBelowThreshold, counted, r.c.Params.THard)
	}
	prior, _, err := r.c.Store.PresenceAnchor(r.cert.Runner)
	if err != nil {
		return err
	}
	if anchor <= prior.Anchor {
		return fmt.Errorf("%w: %d ≤ %d", ErrAnchorNotNewer, anchor, prior.Anchor)
	}
	rec := Record{Anchor: anchor, ProvenUntil: addSat(anchor, r.c.Params.PresenceProofTTLBlocks)}
	if err := r.c.Store.PutPresenceAnchor(r.cert.Runner, rec); err != nil {
		return err
	}
	r.res.Record = rec
	return nil
}

// ProvenPresentSet is the Mode-A read point (§8.3 point 3, §7.2 rule 3):
// PresenceInput(H) = { runner | presence_proven_until[runner] ≥ H }, read
// from parentState (the Mode-A state at the end of H−1) and indexed against
// parent, the registry as of H−1 (§8.5): a runner not registered there is
// never in it.
func ProvenPresentSet(parentState Reader, h uint64, parent state.RegistryView) (presence.Set, error) {
	var firstErr error
	s := presence.FromFunc(parent, func(a cip11.Address) bool {
		rec, ok, err := parentState.PresenceAnchor(a)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return err == nil && ok && rec.ProvenUntil >= h
	})
	if firstErr != nil {
		return presence.Set{}, firstErr
	}
	return s, nil
}

// Source adapts the Mode-A read point to
// [presence.BlockPresenceSource].ModeA: stateAt(h) must return the Mode-A
// state as stored at the end of block h; the source reads it at
// parent.Height() (§8.3: parent state, no intra-block ordering dependence).
func Source(stateAt func(h uint64) (Reader, error)) func(h uint64, parent state.RegistryView) (func(cip11.Address) bool, error) {
	return func(h uint64, parent state.RegistryView) (func(cip11.Address) bool, error) {
		st, err := stateAt(parent.Height())
		if err != nil {
			return nil, err
		}
		s, err := ProvenPresentSet(st, h, parent)
		if err != nil {
			return nil, err
		}
		v, err := presence.NewView(s, parent)
		if err != nil {
			return nil, err
		}
		return v.IsPresent, nil
	}
}

// ErrHeightRegressed: a write to [MemState] below a height already
// written.
var ErrHeightRegressed = errors.New("modea: Mode-A state write below the last written height")

// MemState is an in-memory §8.3 Mode-A state with full history:
// [MemState.At] serves the state as stored at the end of any block,
// [MemState.Block] the state
// during one. Writes must come in non-decreasing height order. It is not
// safe for concurrent use.
type MemState struct {
	hist map[cip11.Address][]version
	last uint64
}

type version struct {
	height uint64
	rec    Record
}

// NewMemState returns an empty §8.3 state: no runner has an anchor.
func NewMemState() *MemState {
	return &MemState{hist: make(map[cip11.Address][]version)}
}

// At returns the state as stored at the end of block h (the §8.3 parent-state
// read point for block h+1).
func (m *MemState) At(h uint64) Reader { return memView{m, h} }

// Block returns the state during block h (§8.3 certificate execution): reads see h's earlier writes,
// writes are recorded at h.
func (m *MemState) Block(h uint64) Store { return memView{m, h} }

type memView struct {
	m *MemState
	h uint64
}

// PresenceAnchor implements [Reader] (§8.3).
func (v memView) PresenceAnchor(runner cip11.Address) (Record, bool, error) {
	vs := v.m.hist[runner]
	i, _ := slices.BinarySearchFunc(vs, v.h+1, func(x version, h uint64) int { return cmp.Compare(x.height, h) })
	if v.h == ^uint64(0) {
		i = len(vs)
	}
	if i == 0 {
		return Record{}, false, nil
	}
	return vs[i-1].rec, true, nil
}

// PutPresenceAnchor implements [Store] (§8.3).
func (v memView) PutPresenceAnchor(runner cip11.Address, rec Record) error {
	if v.h < v.m.last {
		return fmt.Errorf("%w: %d < %d", ErrHeightRegressed, v.h, v.m.last)
	}
	v.m.last = v.h
	vs := v.m.hist[runner]
	if n := len(vs); n > 0 && vs[n-1].height == v.h {
		vs[n-1].rec = rec
		return nil
	}
	v.m.hist[runner] = append(vs, version{v.h, rec})
	return nil
}
