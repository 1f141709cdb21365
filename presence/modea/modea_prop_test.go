package modea

import (
	"cmp"
	"errors"
	"slices"
	"testing"

	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/wire"
	"pgregory.net/rapid"
)

// receiptSpec describes a generated receipt independently of the code under
// test, so the reference model can judge it from first principles.
type receiptSpec struct {
	validator   int // 0..11 in the snapshots, 12 = unknown key
	epochE1     bool
	offset      int // certificate height − block_height (negative: future)
	accepting   bool
	forged      bool
	otherRunner bool
}

func (w *modeAWorld) build(t fataler, height uint64, s receiptSpec) wire.PresenceReceipt {
	k := vkey(s.validator)
	if s.validator == 12 {
		k = vkey(200)
	}
	snap := w.e.Previous
	if s.epochE1 {
		snap = w.e.Current
	}
	runner := w.runner.PubKey()
	if s.otherRunner {
		runner = rkey(t, 251).PubKey()
	}
	r := wire.PresenceReceipt{ValidatorPubKey: k.PubKey(), RunnerPubKey: runner, SubsetEpoch: snap.Epoch(),
		ValidatorSetHash: snap.Hash(), BlockHeight: uint64(int64(height) - int64(s.offset)), AcceptingNew: s.accepting}
	if err := r.Sign(testChainID, k); err != nil {
		t.Fatal(err)
	}
	if s.forged {
		r = forge(r)
	}
	return r
}

// refOutcome is the reference model of §8.3: which receipts pass the
// signature-free rules, how many verifications the normative order makes,
// and which validators end up counted.
func (w *modeAWorld) refOutcome(cur, height uint64, specs []receiptSpec) (attempts int, counted []int, anchor uint64) {
	passes := func(s receiptSpec) bool {
		snap := w.e.Previous
		active := cur < 1000+w.p.OverlapBlocks
		if s.epochE1 {
			snap, active = w.e.Current, cur >= 1000
		}
		if s.otherRunner || !s.accepting || s.offset < 0 || s.offset > int(w.p.ReceiptFreshnessBlocks) || !active || s.validator == 12 {
			return false
		}
		pk := peerOf(vkey(s.validator))
		return snap.Contains(pk) && slices.Contains(naiveSub(snap.Participants(), w.runner.PubKey(), snap.K(w.p)), pk)
	}
	var order []int
	bucket := map[int][]int{}
	for i, s := range specs {
		if passes(s) {
			if _, ok := bucket[s.validator]; !ok {
				order = append(order, s.validator)
			}
			bucket[s.validator] = append(bucket[s.validator], i)
		}
	}
	for _, v := range order {
		idx := bucket[v]
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(specs[a].offset, specs[b].offset) })
		for _, i := range idx {
			attempts++
			if !specs[i].forged {
				counted = append(counted, i)
				anchor = max(anchor, height-uint64(specs[i].offset))
				break
			}
		}
	}
	slices.Sort(counted)
	return attempts, counted, anchor
}

// drawSpec favours validators of Sub_E ∪ Sub_{E+1} so that certificates
// are often accepted.
func (w *modeAWorld) drawSpec(t *rapid.T) receiptSpec {
	var inSub []int
	for i := range 12 {
		if pk := peerOf(vkey(i)); slices.Contains(w.subE, pk) || slices.Contains(w.subE1, pk) {
			inSub = append(inSub, i)
		}
	}
	v := rapid.IntRange(0, 12).Draw(t, "validator")
	e1 := rapid.Bool().Draw(t, "epochE1")
	if rapid.Bool().Draw(t, "favourSub") {
		v = rapid.SampledFrom(inSub).Draw(t, "subValidator")
		e1 = slices.Contains(w.subE1, peerOf(vkey(v)))
	}
	return receiptSpec{
		validator:   v,
		epochE1:     e1,
		offset:      rapid.IntRange(-2, 34).Draw(t, "offset"),
		accepting:   rapid.IntRange(0, 9).Draw(t, "accepting") > 0,
		forged:      rapid.IntRange(0, 3).Draw(t, "forged") == 0,
		otherRunner: rapid.IntRange(0, 19).Draw(t, "otherRunner") == 0,
	}
}

// TestCertificateMatchesReference: for every generated certificate — over
// the overlap window and after it, with forged, stale, future, foreign and
// duplicate receipts — the cycles charged equal the §8.3 formula with the
// reference model's attempt count, at most one receipt per raw validator
// key counts, the counted set and anchor match the reference, and a
// certificate never moves the anchor backwards.
func TestCertificateMatchesReference(t *testing.T) {
	accepted := 0
	rapid.Check(t, func(t *rapid.T) {
		w := newModeAWorld(t)
		cur := uint64(1100)
		prior := Record{}
		for round := range rapid.IntRange(1, 3).Draw(t, "rounds") {
			cur += uint64(rapid.IntRange(0, 40).Draw(t, "advance"))
			height := cur - uint64(rapid.IntRange(0, 3).Draw(t, "lag"))
			specs := rapid.SliceOfN(rapid.Custom(w.drawSpec), 0, 10).Draw(t, "receipts")
			rs := make([]wire.PresenceReceipt, len(specs))
			for i, s := range specs {
				rs[i] = w.build(t, height, s)
			}
			res, err := w.submit(t, cur, height, plenty, rs...)
			attempts, counted, anchor := w.refOutcome(cur, height, specs)
			if res.Cycles != CertificateCycles(w.p, len(rs), attempts) {
				t.Fatalf("round %d: cycles %d, want %d (attempts %d)", round, res.Cycles, CertificateCycles(w.p, len(rs), attempts), attempts)
			}
			if !slices.Equal(res.Counted(), counted) {
				t.Fatalf("round %d: counted %v, reference %v; verdicts %v", round, res.Counted(), counted, res.Verdicts)
			}
			keys := map[validators.PeerKey]bool{}
			for _, i := range res.Counted() {
				k := validators.PeerKey(rs[i].ValidatorPubKey.Raw())
				if keys[k] {
					t.Fatalf("validator %x counted twice", k[:4])
				}
				keys[k] = true
			}
			var wantErr error
			switch {
			case len(counted) < int(w.p.THard):
				wantErr = ErrBelowThreshold
			case anchor <= prior.Anchor:
				wantErr = ErrAnchorNotNewer
			}
			if !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
				t.Fatalf("round %d: err %v, want %v", round, err, wantErr)
			}
			rec, _ := w.record(t, cur)
			if rec.Anchor < prior.Anchor || (err == nil && rec.Anchor <= prior.Anchor) || (err != nil && rec != prior) {
				t.Fatalf("round %d: anchor %d → %d (err %v)", round, prior.Anchor, rec.Anchor, err)
			}
			if err == nil && rec != (Record{anchor, anchor + w.p.PresenceProofTTLBlocks}) {
				t.Fatalf("round %d: record %+v, reference anchor %d", round, rec, anchor)
			}
			if err == nil {
				accepted++
			}
			prior = rec
		}
	})
	if accepted == 0 {
		t.Fatal("the generator never produced an accepted certificate")
	}
	t.Logf("%d accepted certificates", accepted)
}
