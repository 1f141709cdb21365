package modea

import (
	"errors"
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

const testChainID = 7

// modeAWorld is an overlapWorld plus the state a certificate needs.
type modeAWorld struct {
	overlapWorld
	keys      map[validators.PeerKey]*wire.ValidatorKey
	subE      []validators.PeerKey
	subE1     []validators.PeerKey
	addr      cip11.Address
	reg       *state.MemRegistry
	st        *MemState
	lastBlock uint64
}

func newModeAWorld(t fataler) *modeAWorld {
	w := &modeAWorld{overlapWorld: newOverlapWorld(t), keys: map[validators.PeerKey]*wire.ValidatorKey{}, st: NewMemState()}
	ks, _ := validatorKeys(0, 12)
	for _, k := range ks {
		w.keys[peerOf(k)] = k
	}
	w.subE, _ = w.e.Previous.Sub(w.runner.PubKey(), w.p)
	w.subE1, _ = w.e.Current.Sub(w.runner.PubKey(), w.p)
	w.addr = w.runner.Address()
	w.reg = registryWith(t, w.addr)
	return w
}

// receipt is a receipt by v under snapshot s at block height bh, signed
// over testChainID.
func (w *modeAWorld) receipt(t fataler, v validators.PeerKey, s *validators.Snapshot, bh uint64) wire.PresenceReceipt {
	t.Helper()
	r := wire.PresenceReceipt{
		ValidatorPubKey: v.WirePubKey(), RunnerPubKey: w.runner.PubKey(),
		SubsetEpoch: s.Epoch(), ValidatorSetHash: s.Hash(), BlockHeight: bh, NonceEcho: bh * 3, AcceptingNew: true,
	}
	return w.sign(t, r)
}

func (w *modeAWorld) sign(t fataler, r wire.PresenceReceipt) wire.PresenceReceipt {
	t.Helper()
	k := w.keys[validators.PeerKey(r.ValidatorPubKey.Raw())]
	if k == nil {
		k = vkey(200) // not in any snapshot
		r.ValidatorPubKey = k.PubKey()
	}
	if r.RunnerPubKey.CheckRole(wire.RoleRunner) != nil {
		return r // cannot be signed; the runner-key precheck rejects it first
	}
	if err := r.Sign(testChainID, k); err != nil {
		t.Fatal(err)
	}
	return r
}

// withValidatorKey swaps the validator key without re-signing.
func withValidatorKey(r wire.PresenceReceipt, k wire.PubKey) wire.PresenceReceipt {
	r.ValidatorPubKey = k
	return r
}

func forge(r wire.PresenceReceipt) wire.PresenceReceipt {
	r.ValidatorSigned[5] ^= 0x40
	return r
}

// submit processes a certificate at current height cur with the given budget.
func (w *modeAWorld) submit(t fataler, cur, height uint64, budget uint64, rs ...wire.PresenceReceipt) (CertificateResult, error) {
	t.Helper()
	c := &CertificateContext{
		Params: w.p, ChainID: testChainID, CurrentHeight: cur, Epochs: w.e,
		Registry: regAt(t, w.reg, cur), Store: w.st.Block(cur), Meter: &CycleMeter{Limit: budget},
	}
	return ProcessCertificate(c, &Certificate{Runner: w.addr, Height: height, Receipts: rs})
}

const plenty = 1 << 40

func (w *modeAWorld) record(t fataler, h uint64) (Record, bool) {
	rec, ok, err := w.st.At(h).PresenceAnchor(w.addr)
	if err != nil {
		t.Fatal(err)
	}
	return rec, ok
}

// TestCertificateAccepted: t_hard = 2 receipts of Sub_{E+1}; anchor = max
// observation height; proven_until = anchor + TTL; cycles per the §8.3 formula.
func TestCertificateAccepted(t *testing.T) {
	w := newModeAWorld(t)
	res, err := w.submit(t, 2000, 2000, plenty,
		w.receipt(t, w.subE1[0], w.e.Current, 1990), w.receipt(t, w.subE1[1], w.e.Current, 1995))
	if err != nil {
		t.Fatal(err)
	}
	if res.Record != (Record{Anchor: 1995, ProvenUntil: 2055}) {
		t.Fatalf("record %+v", res.Record)
	}
	if want := uint64(20_000 + 2*1_000 + 2*5_000); res.Cycles != want || res.Cycles != CertificateCycles(w.p, 2, 2) {
		t.Fatalf("cycles %d, want %d", res.Cycles, want)
	}
	if rec, _ := w.record(t, 2000); rec != res.Record {
		t.Fatalf("stored %+v", rec)
	}
	if !slices.Equal(res.Counted(), []int{0, 1}) {
		t.Fatalf("counted %v", res.Counted())
	}
}

// TestReceiptVerdicts: two good receipts reach t_hard; a third receipt with
// one defect is not counted and reports its sentinel. Precheck failures
// cost no verification; only a forged signature does.
func TestReceiptVerdicts(t *testing.T) {
	w := newModeAWorld(t)
	cur, E1, v := uint64(2000), w.e.Current, w.subE1[2]
	mod := func(f func(*wire.PresenceReceipt)) wire.PresenceReceipt {
		r := w.receipt(t, v, E1, 1999)
		f(&r)
		return w.sign(t, r)
	}
	other := rkey(t, 250).PubKey()
	outside := w.e.Current.Participants()[0].PeerPubKey
	for _, pk := range w.subE1 {
		if pk == outside {
			outside = w.e.Current.Participants()[1].PeerPubKey
		}
	}
	for slices.Contains(w.subE1, outside) {
		outside = w.e.Current.Participants()[2].PeerPubKey
	}
	cases := []struct {
		name     string
		bad      wire.PresenceReceipt
		want     error
		attempts int
	}{
		{"runner key of another runner", mod(func(r *wire.PresenceReceipt) { r.RunnerPubKey = other }), ErrReceiptRunnerKey, 2},
		{"runner key is an Ed25519 key", mod(func(r *wire.PresenceReceipt) { r.RunnerPubKey = vkey(3).PubKey() }), ErrReceiptRunnerKey, 2},
		{"validator key is a secp256k1 key", withValidatorKey(w.receipt(t, v, E1, 1999), other), ErrReceiptValidatorKey, 2},
		{"accepting_new false", mod(func(r *wire.PresenceReceipt) { r.AcceptingNew = false }), ErrReceiptNotAccepting, 2},
		{"block_height above certificate height", mod(func(r *wire.PresenceReceipt) { r.BlockHeight = 2001 }), ErrReceiptFuture, 2},
		{"age 31 > RECEIPT_FRESHNESS_BLOCKS", mod(func(r *wire.PresenceReceipt) { r.BlockHeight = 1969 }), ErrReceiptStale, 2},
		{"unknown epoch pair", mod(func(r *wire.PresenceReceipt) { r.SubsetEpoch = 9 }), validators.ErrEpochPairUnknown, 2},
		{"epoch E after the cutoff", w.receipt(t, w.both, w.e.Previous, 1999), validators.ErrOverlapExpired, 2},
		{"validator not in the snapshot", mod(func(r *wire.PresenceReceipt) { r.ValidatorPubKey = vkey(200).PubKey() }), validators.ErrValidatorNotInSet, 2},
		{"validator outside Sub_epoch(runner)", w.receipt(t, outside, E1, 1999), validators.ErrOutsideSubset, 2},
		{"forged signature", forge(w.receipt(t, v, E1, 1999)), ErrReceiptSignature, 3},
		{"lower receipt of a retained validator", w.receipt(t, w.subE1[0], E1, 1980), ErrReceiptSuperseded, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w.st = NewMemState()
			good := []wire.PresenceReceipt{w.receipt(t, w.subE1[0], E1, 1990), w.receipt(t, w.subE1[1], E1, 1995)}
			res, err := w.submit(t, cur, 2000, plenty, append(good, c.bad)...)
			if err != nil {
				t.Fatal(err)
			}
			if !errors.Is(res.Verdicts[2], c.want) {
				t.Fatalf("verdict %v, want %v", res.Verdicts[2], c.want)
			}
			if res.Cycles != CertificateCycles(w.p, 3, c.attempts) {
				t.Fatalf("cycles %d, want %d", res.Cycles, CertificateCycles(w.p, 3, c.attempts))
			}
			if res.Record.Anchor != 1995 {
				t.Fatalf("anchor %d", res.Record.Anchor)
			}
		})
	}
}

// TestCertificateRejections covers every certificate-level sentinel and
// the cycles each leaves charged.
func TestCertificateRejections(t *testing.T) {
	w := newModeAWorld(t)
	E1 := w.e.Current
	two := func() []wire.PresenceReceipt {
		return []wire.PresenceReceipt{w.receipt(t, w.subE1[0], E1, 1990), w.receipt(t, w.subE1[1], E1, 1995)}
	}
	t.Run("not registered", func(t *testing.T) {
		c := &CertificateContext{Params: w.p, ChainID: testChainID, CurrentHeight: 2000, Epochs: w.e,
			Registry: regAt(t, registryWith(t), 2000), Store: w.st.Block(2000), Meter: &CycleMeter{Limit: plenty}}
		res, err := ProcessCertificate(c, &Certificate{Runner: w.addr, Height: 2000, Receipts: two()})
		if !errors.Is(err, ErrRunnerNotRegistered) || res.Cycles != CertificateCycles(w.p, 2, 0) {
			t.Fatalf("err %v cycles %d", err, res.Cycles)
		}
	})
	t.Run("height ahead", func(t *testing.T) {
		res, err := w.submit(t, 2000, 2001, plenty, two()...)
		if !errors.Is(err, ErrCertificateHeightAhead) || res.Cycles != CertificateCycles(w.p, 2, 0) {
			t.Fatalf("err %v cycles %d", err, res.Cycles)
		}
	})
	t.Run("below threshold", func(t *testing.T) {
		res, err := w.submit(t, 2000, 2000, plenty, two()[0])
		if !errors.Is(err, ErrBelowThreshold) || res.Cycles != CertificateCycles(w.p, 1, 1) {
			t.Fatalf("err %v cycles %d", err, res.Cycles)
		}
		if _, ok := w.record(t, 2000); ok {
			t.Fatal("rejected certificate wrote state")
		}
	})
	t.Run("empty certificate", func(t *testing.T) {
		if _, err := w.submit(t, 2000, 2000, plenty); !errors.Is(err, ErrBelowThreshold) {
			t.Fatal(err)
		}
	})
	for _, budget := range []uint64{0, 19_999, 20_000, 21_999, 22_000, 26_999, 31_999} {
		res, err := w.submit(t, 2000, 2000, budget, two()...)
		if !errors.Is(err, ErrOutOfCycles) || res.Cycles > budget {
			t.Fatalf("budget %d: err %v cycles %d", budget, err, res.Cycles)
		}
	}
	if _, err := w.submit(t, 2000, 2000, 32_000, two()...); err != nil {
		t.Fatalf("exact budget: %v", err)
	}
}

// TestNoVerificationWithoutCycles: with cycles for exactly one attempt, the
// second validator's signature is never checked — the call stops at the
// charge, and a meter that refused leaves the used count unchanged.
func TestNoVerificationWithoutCycles(t *testing.T) {
	w := newModeAWorld(t)
	E1 := w.e.Current
	m := &CycleMeter{Limit: CertificateCycles(w.p, 2, 1) + 4_999}
	c := &CertificateContext{Params: w.p, ChainID: testChainID, CurrentHeight: 2000, Epochs: w.e,
		Registry: regAt(t, w.reg, 2000), Store: w.st.Block(2000), Meter: m}
	res, err := ProcessCertificate(c, &Certificate{Runner: w.addr, Height: 2000,
		Receipts: []wire.PresenceReceipt{w.receipt(t, w.subE1[0], E1, 1990), forge(w.receipt(t, w.subE1[1], E1, 1995))}})
	if !errors.Is(err, ErrOutOfCycles) {
		t.Fatal(err)
	}
	if m.Used != CertificateCycles(w.p, 2, 1) || res.Cycles != m.Used {
		t.Fatalf("used %d, result %d", m.Used, res.Cycles)
	}
	if res.Verdicts[1] != nil {
		t.Fatalf("receipt 1 was judged without a paid attempt: %v", res.Verdicts[1])
	}
}

// TestForgedHigherDoesNotSuppress: §8.3 step 4 — a forged higher receipt
// costs one attempt and the lower valid receipt of the same validator still
// counts; the forged height never reaches the anchor.
func TestForgedHigherDoesNotSuppress(t *testing.T) {
	w := newModeAWorld(t)
	E1 := w.e.Current
	res, err := w.submit(t, 2000, 2000, plenty,
		forge(w.receipt(t, w.subE1[0], E1, 1999)),
		w.receipt(t, w.subE1[0], E1, 1990),
		w.receipt(t, w.subE1[1], E1, 1992))
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.Anchor != 1992 || !slices.Equal(res.Counted(), []int{1, 2}) {
		t.Fatalf("anchor %d counted %v", res.Record.Anchor, res.Counted())
	}
	if !errors.Is(res.Verdicts[0], ErrReceiptSignature) || res.Cycles != CertificateCycles(w.p, 3, 3) {
		t.Fatalf("verdict %v cycles %d", res.Verdicts[0], res.Cycles)
	}
}

// TestSignatureFreeRejectionFirst: a receipt failing a precheck is never
// verified even when its signature is also bad (no Ed25519 charge).
func TestSignatureFreeRejectionFirst(t *testing.T) {
	w := newModeAWorld(t)
	E1 := w.e.Current
	bad := w.receipt(t, w.subE1[2], E1, 1999)
	bad.AcceptingNew = false // also invalidates the signature
	res, err := w.submit(t, 2000, 2000, plenty, w.receipt(t, w.subE1[0], E1, 1990), w.receipt(t, w.subE1[1], E1, 1995), bad)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.Verdicts[2], ErrReceiptNotAccepting) || res.Cycles != CertificateCycles(w.p, 3, 2) {
		t.Fatalf("verdict %v cycles %d", res.Verdicts[2], res.Cycles)
	}
}

// TestOverlapDedup: a validator in both Sub_E and Sub_{E+1} signing under
// both epochs during the overlap counts once (§8.3 point 4); the retained
// receipt is its highest.
func TestOverlapDedup(t *testing.T) {
	w := newModeAWorld(t)
	rE := w.receipt(t, w.both, w.e.Previous, 1090)
	rE1 := w.receipt(t, w.both, w.e.Current, 1095)
	res, err := w.submit(t, 1100, 1100, plenty, rE, rE1)
	if !errors.Is(err, ErrBelowThreshold) {
		t.Fatalf("one validator under two epochs reached t_hard 2: %v", err)
	}
	if !slices.Equal(res.Counted(), []int{1}) || !errors.Is(res.Verdicts[0], ErrReceiptSuperseded) {
		t.Fatalf("counted %v verdicts %v", res.Counted(), res.Verdicts)
	}
	third := w.receipt(t, w.onlyE, w.e.Previous, 1080)
	res, err = w.submit(t, 1100, 1100, plenty, rE, rE1, third)
	if err != nil || res.Record.Anchor != 1095 || len(res.Counted()) != 2 {
		t.Fatalf("err %v record %+v counted %v", err, res.Record, res.Counted())
	}
}

// ---- §16 item 2: cross-epoch replay tests ----

// TestReplayStaleReceiptCannotExtend: once accepted, the same or older
// receipts can neither re-certify nor extend presence_proven_until, whether
// replayed under an unchanged or a later certificate height.
func TestReplayStaleReceiptCannotExtend(t *testing.T) {
	w := newModeAWorld(t)
	E1 := w.e.Current
	rs := []wire.PresenceReceipt{w.receipt(t, w.subE1[0], E1, 1990), w.receipt(t, w.subE1[1], E1, 1995)}
	if _, err := w.submit(t, 2000, 2000, plenty, rs...); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ cur, height uint64 }{{2001, 2000}, {2010, 2010}, {2020, 2020}} {
		if _, err := w.submit(t, c.cur, c.height, plenty, rs...); !errors.Is(err, ErrAnchorNotNewer) {
			t.Fatalf("replay at %d: %v", c.cur, err)
		}
	}
	res, err := w.submit(t, 2040, 2040, plenty, rs...)
	if !errors.Is(err, ErrBelowThreshold) || !errors.Is(res.Verdicts[0], ErrReceiptStale) {
		t.Fatalf("aged replay: %v %v", err, res.Verdicts)
	}
	if rec, _ := w.record(t, 2040); rec.ProvenUntil != 2055 {
		t.Fatalf("proven_until moved to %d", rec.ProvenUntil)
	}
	reader := w.st.At(2055)
	for h, want := range map[uint64]bool{2055: true, 2056: false} {
		s, err := ProvenPresentSet(reader, h, regAt(t, w.reg, h-1))
		if err != nil || (s.Len() == 1) != want {
			t.Fatalf("PresenceInput(%d) = %v, %v", h, s.Indices(), err)
		}
	}
}

// TestReceiptPreimageBindsEpoch: moving a signed receipt to the other
// snapshot's (subset_epoch, validator_set_hash) breaks its signature, and
// moving only one of the two selects no snapshot.
func TestReceiptPreimageBindsEpoch(t *testing.T) {
	w := newModeAWorld(t)
	orig := w.receipt(t, w.both, w.e.Previous, 1090)
	moved := orig
	moved.SubsetEpoch, moved.ValidatorSetHash = w.e.Current.Epoch(), w.e.Current.Hash()
	d1, _ := orig.Digest(testChainID)
	d2, _ := moved.Digest(testChainID)
	if d1 == d2 {
		t.Fatal("digest does not bind the epoch pair")
	}
	for _, f := range []func(*wire.PresenceReceipt){
		func(r *wire.PresenceReceipt) { r.SubsetEpoch++ },
		func(r *wire.PresenceReceipt) { r.ValidatorSetHash[0] ^= 1 },
	} {
		r := orig
		f(&r)
		if d, _ := r.Digest(testChainID); d == d1 {
			t.Fatal("digest ignores a field of the pair")
		}
	}
	gv := w.subE1[0]
	if gv == w.both {
		gv = w.subE1[1]
	}
	good := w.receipt(t, gv, w.e.Current, 1095)
	res, err := w.submit(t, 1100, 1100, plenty, moved, good)
	if !errors.Is(err, ErrBelowThreshold) || !errors.Is(res.Verdicts[0], ErrReceiptSignature) {
		t.Fatalf("moved receipt: %v %v", err, res.Verdicts)
	}
	half := orig
	half.ValidatorSetHash = w.e.Current.Hash()
	res, _ = w.submit(t, 1100, 1100, plenty, half, good)
	if !errors.Is(res.Verdicts[0], validators.ErrEpochPairUnknown) {
		t.Fatalf("cross-product pair: %v", res.Verdicts[0])
	}
	other := orig
	if other.Verify(testChainID+1) == nil {
		t.Fatal("receipt verifies under another chain_id")
	}
}

// TestAnchorRejectsOlderOrEqual: the anchor is strictly monotonic.
func TestAnchorRejectsOlderOrEqual(t *testing.T) {
	w := newModeAWorld(t)
	E1 := w.e.Current
	at := func(a, b uint64) []wire.PresenceReceipt {
		return []wire.PresenceReceipt{w.receipt(t, w.subE1[0], E1, a), w.receipt(t, w.subE1[1], E1, b)}
	}
	if _, err := w.submit(t, 2000, 2000, plenty, at(1990, 1995)...); err != nil {
		t.Fatal(err)
	}
	for _, hs := range [][2]uint64{{1995, 1995}, {1994, 1990}, {1995, 1980}} {
		if _, err := w.submit(t, 2001, 2001, plenty, at(hs[0], hs[1])...); !errors.Is(err, ErrAnchorNotNewer) {
			t.Fatalf("anchor %v: %v", hs, err)
		}
	}
	res, err := w.submit(t, 2001, 2001, plenty, at(1996, 1970+1)...)
	if err != nil || res.Record != (Record{1996, 2056}) {
		t.Fatalf("newer: %v %+v", err, res.Record)
	}
}

// TestReceiptEpochAtOverlapBoundary: epoch-E receipts count through block
// activation+OVERLAP−1 and are rejected exactly at activation+OVERLAP;
// epoch-E+1 receipts are rejected before activation.
func TestReceiptEpochAtOverlapBoundary(t *testing.T) {
	w := newModeAWorld(t)
	E := w.e.Previous
	rs := func(h uint64) []wire.PresenceReceipt {
		return []wire.PresenceReceipt{w.receipt(t, w.subE[0], E, h), w.receipt(t, w.subE[1], E, h)}
	}
	if _, err := w.submit(t, 1159, 1159, plenty, rs(1150)...); err != nil {
		t.Fatalf("last overlap block: %v", err)
	}
	res, err := w.submit(t, 1160, 1160, plenty, rs(1155)...)
	if !errors.Is(err, ErrBelowThreshold) || !errors.Is(res.Verdicts[0], validators.ErrOverlapExpired) {
		t.Fatalf("cutoff block: %v %v", err, res.Verdicts)
	}
	early := []wire.PresenceReceipt{w.receipt(t, w.subE1[0], w.e.Current, 990), w.receipt(t, w.subE1[1], w.e.Current, 990)}
	res, err = w.submit(t, 999, 999, plenty, early...)
	if !errors.Is(err, ErrBelowThreshold) || !errors.Is(res.Verdicts[0], validators.ErrSnapshotNotYetActive) {
		t.Fatalf("before activation: %v %v", err, res.Verdicts)
	}
}

// TestSource: PresenceInput(H) from parent state, indexed against
// registry(H−1): a runner registered in H is not in it; proven_until ≥ H is
// inclusive.
func TestSource(t *testing.T) {
	st := NewMemState()
	reg := registryWith(t, addrA, addrB)
	if err := reg.Register(50, state.Runner{Address: addrC}); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		a cip11.Address
		r Record
	}{{addrA, Record{40, 100}}, {addrB, Record{30, 49}}, {addrC, Record{45, 200}}} {
		if err := st.Block(48).PutPresenceAnchor(x.a, x.r); err != nil {
			t.Fatal(err)
		}
	}
	src := Source(func(h uint64) (Reader, error) { return st.At(h), nil })
	isPresent, err := src(50, regAt(t, reg, 49))
	if err != nil {
		t.Fatal(err)
	}
	if !isPresent(addrA) || isPresent(addrB) || isPresent(addrC) {
		t.Fatalf("A %v B %v C %v", isPresent(addrA), isPresent(addrB), isPresent(addrC))
	}
	isPresent, _ = src(51, regAt(t, reg, 50))
	if !isPresent(addrC) {
		t.Fatal("C registered at 50 must be present in 51")
	}
	if err := st.Block(47).PutPresenceAnchor(addrA, Record{}); !errors.Is(err, ErrHeightRegressed) {
		t.Fatal(err)
	}
	if _, ok, _ := st.At(47).PresenceAnchor(addrA); ok {
		t.Fatal("history leaks a later write")
	}
	if _, ok, _ := st.At(^uint64(0)).PresenceAnchor(addrA); !ok {
		t.Fatal("At(max) misses the record")
	}
}
