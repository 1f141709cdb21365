package validators

import (
	"bytes"
	"errors"
	"slices"
	"sort"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
	"pgregory.net/rapid"
)

// TestSubsetSizeTable pins §5.1 k = min(|V|, clamp(ceil(log2|V|)+1, 3, 8)),
// computed by hand, including every |V| the spec names.
func TestSubsetSizeTable(t *testing.T) {
	p := cip11.DefaultParams()
	want := map[int]int{
		0: 0, 1: 1, 2: 2, 3: 3, 4: 3,
		5: 4, 6: 4, 7: 4, 8: 4,
		9: 5, 10: 5, 11: 5, 12: 5, 13: 5, 14: 5, 15: 5, 16: 5,
		17: 6, 32: 6, 33: 7, 64: 7, 65: 8, 100: 8, 128: 8, 129: 8, 1 << 20: 8,
	}
	for n, k := range want {
		if got := p.SubsetSize(n); got != k {
			t.Errorf("k(|V|=%d) = %d, want %d", n, got, k)
		}
	}
	// Mode-A sized parameters: K_HARD_MIN needs effective_k ≥ 20.
	p.MinSubset, p.MaxSubset = 20, 64
	for n, k := range map[int]int{1: 1, 19: 19, 20: 20, 21: 20, 1 << 20: 21, 1 << 30: 31} {
		if got := p.SubsetSize(n); got != k {
			t.Errorf("Mode-A k(|V|=%d) = %d, want %d", n, got, k)
		}
	}
}

// TestSetHash: keccak256 over the canonically ordered raw peer_pubkeys
// (§5.1, §8.3), frozen from an independent pure-Python Keccak; stake
// excluded; order included.
func TestSetHash(t *testing.T) {
	_, rs := validators(0, 6)
	s := mustSnapshot(t, 0, rs, 0)
	if got := s.Hash().String(); got != "9ba27673387ef5e1ab3bd18958217f6e1e2920178ca57a2e2e3cbbf5aa7f7e28" {
		t.Fatalf("validator_set_hash = %s", got)
	}
	var cat []byte
	for _, r := range rs {
		cat = append(cat, r.PeerPubKey[:]...)
	}
	if s.Hash() != cip11.Keccak256(cat) {
		t.Fatal("hash is not keccak256 of the concatenated raw keys")
	}
	restaked := slices.Clone(rs)
	for i := range restaked {
		restaked[i].Stake = cip11.U128{Hi: 7, Lo: uint64(i) * 1000}
	}
	if SetHash(restaked) != s.Hash() {
		t.Fatal("stake moved validator_set_hash")
	}
	swapped := slices.Clone(rs)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	if SetHash(swapped) == s.Hash() {
		t.Fatal("order did not move validator_set_hash")
	}
}

func TestNewSnapshotRejects(t *testing.T) {
	if _, err := NewSnapshot(0, nil, 0); !errors.Is(err, ErrEmptyValidatorSet) {
		t.Fatalf("empty: %v", err)
	}
	_, rs := validators(0, 3)
	if _, err := NewSnapshot(0, append(rs, rs[1]), 0); !errors.Is(err, ErrDuplicateValidator) {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := NewSnapshot(0, []Record{rs[0], rs[0]}, 0); !errors.Is(err, ErrDuplicateValidator) {
		t.Fatalf("adjacent duplicate: %v", err)
	}
}

// TestSnapshotRejectsNonCanonicalOrder: §5.4 participants are "canonically
// ordered by peer_pubkey" — strictly ascending raw bytes. Any other order is
// rejected with its own sentinel by NewSnapshot and NextSnapshot, never
// silently sorted or accepted as given.
func TestSnapshotRejectsNonCanonicalOrder(t *testing.T) {
	_, rs := validators(0, 6)
	if !slices.IsSortedFunc(rs, func(a, b Record) int { return a.PeerPubKey.Compare(b.PeerPubKey) }) {
		t.Fatal("test records are not canonical")
	}
	swapped := slices.Clone(rs)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	descending := slices.Clone(rs)
	slices.Reverse(descending)
	lastTwo := slices.Clone(rs)
	lastTwo[4], lastTwo[5] = lastTwo[5], lastTwo[4]
	for name, order := range map[string][]Record{"first two swapped": swapped, "descending": descending, "last two swapped": lastTwo} {
		if s, err := NewSnapshot(0, order, 0); !errors.Is(err, ErrParticipantsNotCanonical) {
			t.Errorf("NewSnapshot, %s: snapshot %v, err %v", name, s != nil, err)
		}
	}
	cur := mustSnapshot(t, 0, rs, 0)
	if _, _, err := NextSnapshot(cur, 1, swapped, 10); !errors.Is(err, ErrParticipantsNotCanonical) {
		t.Errorf("NextSnapshot, same identities reordered: %v", err)
	}
	_, more := validators(0, 7)
	slices.Reverse(more)
	if _, _, err := NextSnapshot(cur, 1, more, 10); !errors.Is(err, ErrParticipantsNotCanonical) {
		t.Errorf("NextSnapshot, new identities out of order: %v", err)
	}
	if _, err := NewSnapshot(0, rs[:1], 0); err != nil {
		t.Errorf("one participant is canonical: %v", err)
	}
}

// TestSubFrozen: Sub(R) for |V| = 6 (k = 4), frozen from the independent
// Python computation.
func TestSubFrozen(t *testing.T) {
	_, rs := validators(0, 6)
	s := mustSnapshot(t, 0, rs, 0)
	sub, err := s.Sub(rkey(t, 1).PubKey(), cip11.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"52231e57", "744c410d", "4cdbc2c8", "435ca880"}
	if len(sub) != len(want) {
		t.Fatalf("len %d", len(sub))
	}
	for i, v := range sub {
		if got := cip11.Hash(v).String()[:8]; got != want[i] {
			t.Fatalf("sub[%d] = %s, want %s", i, got, want[i])
		}
	}
}

// naiveSub is the §5.1 definition read literally: sort every validator by
// keccak256(R.auth_pubkey ‖ v.peer_pubkey), take the first k.
func naiveSub(rs []Record, runner wire.PubKey, k int) []PeerKey {
	type kv struct {
		key cip11.Hash
		v   PeerKey
	}
	var all []kv
	for _, r := range rs {
		all = append(all, kv{cip11.Keccak256(runner.Raw(), r.PeerPubKey[:]), r.PeerPubKey})
	}
	sort.SliceStable(all, func(i, j int) bool { return bytes.Compare(all[i].key[:], all[j].key[:]) < 0 })
	out := make([]PeerKey, 0, k)
	for _, x := range all[:k] {
		out = append(out, x.v)
	}
	return out
}

// TestSubMatchesNaive checks the top-k selection against the literal sort
// over random sets, sizes and parameters.
func TestSubMatchesNaive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 40).Draw(t, "n")
		lo := rapid.IntRange(0, 200).Draw(t, "lo")
		_, rs := validators(lo, lo+n)
		p := cip11.DefaultParams()
		p.MinSubset = uint32(rapid.IntRange(1, 10).Draw(t, "min"))
		p.MaxSubset = p.MinSubset + uint32(rapid.IntRange(0, 10).Draw(t, "extra"))
		runner := rkey(t, rapid.IntRange(0, 255).Draw(t, "runner")).PubKey()
		s := mustSnapshot(t, 0, rs, 0)
		got, err := s.Sub(runner, p)
		if err != nil {
			t.Fatal(err)
		}
		if want := naiveSub(rs, runner, p.SubsetSize(n)); !slices.Equal(got, want) {
			t.Fatalf("Sub = %x, want %x", got, want)
		}
	})
}

func TestSubRejectsValidatorKeyAsRunner(t *testing.T) {
	_, rs := validators(0, 3)
	s := mustSnapshot(t, 0, rs, 0)
	if _, err := s.Sub(vkey(9).PubKey(), cip11.DefaultParams()); !errors.Is(err, ErrNotRunnerKey) {
		t.Fatalf("err = %v", err)
	}
	if _, err := s.Sub(wire.PubKey{}, cip11.DefaultParams()); !errors.Is(err, ErrNotRunnerKey) {
		t.Fatalf("zero key: err = %v", err)
	}
}

// TestNextSnapshot is the §5.4 rule: subset_epoch and validator_set_hash
// change only when the ordered identity list changes.
func TestNextSnapshot(t *testing.T) {
	_, rs := validators(0, 4)
	cur := mustSnapshot(t, 3, rs, 100)

	restaked := slices.Clone(rs)
	restaked[2].Stake = cip11.U128From64(999)
	next, activated, err := NextSnapshot(cur, 4, restaked, 500)
	if err != nil || activated || next.Epoch() != 3 || next.Hash() != cur.Hash() || next.ActivationHeight() != 100 {
		t.Fatalf("stake-only advance: activated=%v epoch=%d err=%v", activated, next.Epoch(), err)
	}
	if next.Participants()[2].Stake != cip11.U128From64(999) {
		t.Fatal("stake not refreshed")
	}

	_, rs2 := validators(0, 5)
	next, activated, err = NextSnapshot(cur, 4, rs2, 500)
	if err != nil || !activated || next.Epoch() != 4 || next.Hash() == cur.Hash() || next.ActivationHeight() != 500 {
		t.Fatalf("a new identity is a reconfiguration: activated=%v err=%v", activated, err)
	}
	if _, _, err := NextSnapshot(cur, 3, rs2, 500); !errors.Is(err, ErrEpochNotAdvancing) {
		t.Fatalf("same epoch: %v", err)
	}
	if _, _, err := NextSnapshot(cur, 4, rs2, 99); !errors.Is(err, ErrActivationRegressed) {
		t.Fatalf("activation regress: %v", err)
	}
	if _, _, err := NextSnapshot(cur, 4, nil, 500); !errors.Is(err, ErrEmptyValidatorSet) {
		t.Fatalf("empty: %v", err)
	}
}

func TestNewEpochsRejects(t *testing.T) {
	_, a := validators(0, 4)
	_, b := validators(2, 6)
	e0 := mustSnapshot(t, 0, a, 0)
	if _, err := NewEpochs(e0, nil); !errors.Is(err, ErrNoActiveSnapshot) {
		t.Fatal(err)
	}
	if _, err := NewEpochs(e0, mustSnapshot(t, 0, b, 10)); !errors.Is(err, ErrEpochNotAdvancing) {
		t.Fatal(err)
	}
	if _, err := NewEpochs(e0, mustSnapshot(t, 1, a, 10)); !errors.Is(err, ErrEpochNotAdvancing) {
		t.Fatal("same identities must not be a successor")
	}
	if _, err := NewEpochs(mustSnapshot(t, 0, a, 50), mustSnapshot(t, 1, b, 10)); !errors.Is(err, ErrActivationRegressed) {
		t.Fatal(err)
	}
	if _, err := (Epochs{}).Select(0, wire.EpochPair{}, cip11.DefaultParams()); !errors.Is(err, ErrNoActiveSnapshot) {
		t.Fatal(err)
	}
}

// overlapWorld is an E → E+1 reconfiguration: E = validators 0..7, E+1 =
// validators 4..11, activation of E+1 at 1000, OVERLAP_BLOCKS 160, k = 3.
type overlapWorld struct {
	p          cip11.Params
	e          Epochs
	runner     *wire.RunnerKey
	onlyE      PeerKey // in Sub_E(runner) but not in Sub_{E+1}(runner)
	onlyE1     PeerKey // in Sub_{E+1}(runner), in snapshot E but not in Sub_E(runner)
	both       PeerKey // in both subsets (may be zero if none)
	hasBoth    bool
	notInE1Set PeerKey // in snapshot E only
}

func newOverlapWorld(t fataler) overlapWorld {
	for r := 1; r < 200; r++ {
		if w, ok := tryOverlapWorld(t, r); ok {
			return w
		}
	}
	t.Fatal("no runner gives a cross-epoch test world")
	return overlapWorld{}
}

// tryOverlapWorld builds the world for runner r and reports whether it has
// a validator only in Sub_E, one in both subsets, and one in Sub_{E+1} and
// snapshot E but not Sub_E. (A validator in both snapshots has the same sort
// key in each, so the shared validators' order is the same in both epochs
// and Sub_E and Sub_{E+1} restricted to them are nested prefixes.)
func tryOverlapWorld(t fataler, r int) (overlapWorld, bool) {
	p := smallParams()
	p.OverlapBlocks = 160
	_, a := validators(0, 8)
	_, b := validators(4, 12)
	w := overlapWorld{p: p, runner: rkey(t, r)}
	w.e = mustEpochs(t, mustSnapshot(t, 5, a, 0), mustSnapshot(t, 6, b, 1000))
	subE, _ := w.e.Previous.Sub(w.runner.PubKey(), p)
	subE1, _ := w.e.Current.Sub(w.runner.PubKey(), p)
	for _, r := range a {
		if !w.e.Current.Contains(r.PeerPubKey) {
			w.notInE1Set = r.PeerPubKey
		}
	}
	foundE, foundE1 := false, false
	for _, v := range subE {
		if slices.Contains(subE1, v) {
			w.both, w.hasBoth = v, true
		} else {
			w.onlyE, foundE = v, true
		}
	}
	for _, v := range subE1 {
		if !slices.Contains(subE, v) && w.e.Previous.Contains(v) {
			w.onlyE1, foundE1 = v, true
		}
	}
	return w, foundE && foundE1 && w.hasBoth
}

// TestAdmissionEpochPaired is the §5.3 point 2 / §6.2 predicate across the
// OVERLAP_BLOCKS window: each offer selects exactly one snapshot and both
// membership and subset resolve in that snapshot; the cutoff is the exact
// block activation + OVERLAP_BLOCKS, with no grace.
func TestAdmissionEpochPaired(t *testing.T) {
	w := newOverlapWorld(t)
	pe, pe1 := w.e.Previous.Pair(), w.e.Current.Pair()
	cross := wire.EpochPair{SubsetEpoch: pe1.SubsetEpoch, ValidatorSetHash: pe.ValidatorSetHash}
	cross2 := wire.EpochPair{SubsetEpoch: pe.SubsetEpoch, ValidatorSetHash: pe1.ValidatorSetHash}
	cases := []struct {
		name  string
		h     uint64
		offer wire.EpochPair
		v     PeerKey
		err   error
	}{
		{"E before reconfiguration", 999, pe, w.onlyE, nil},
		{"E+1 before its activation", 999, pe1, w.onlyE1, ErrSnapshotNotYetActive},
		{"E+1 at activation", 1000, pe1, w.onlyE1, nil},
		{"E during overlap", 1000, pe, w.onlyE, nil},
		{"E last overlap block", 1159, pe, w.onlyE, nil},
		{"E at cutoff block", 1160, pe, w.onlyE, ErrOverlapExpired},
		{"E+1 at cutoff block", 1160, pe1, w.onlyE1, nil},
		{"E hash with E+1 membership", 1000, pe, w.onlyE1, ErrOutsideSubset},
		{"E+1 hash with E membership", 1000, pe1, w.onlyE, ErrValidatorNotInSet},
		{"cross-product E+1 epoch, E hash", 1000, cross, w.onlyE, ErrEpochPairUnknown},
		{"cross-product E epoch, E+1 hash", 1000, cross2, w.onlyE1, ErrEpochPairUnknown},
		{"validator only in snapshot E offered E+1", 1000, pe1, w.notInE1Set, ErrValidatorNotInSet},
		{"unknown hash", 1000, wire.EpochPair{SubsetEpoch: 6}, w.onlyE1, ErrEpochPairUnknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := w.e.Admit(c.h, c.offer, c.v, w.runner.PubKey(), w.p)
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if err == nil && s.Pair() != c.offer {
				t.Fatalf("selected %v, offered %v", s.Pair(), c.offer)
			}
		})
	}
	if _, err := w.e.Admit(1000, pe1, w.onlyE1, vkey(1).PubKey(), w.p); !errors.Is(err, ErrNotRunnerKey) {
		t.Fatalf("validator key as runner: %v", err)
	}
}

// TestPairsAndWireAdmission: Pairs feeds wire.Local.Epochs and AdmitsRunner
// its Admits hook; the pair list shrinks exactly at the cutoff.
func TestPairsAndWireAdmission(t *testing.T) {
	w := newOverlapWorld(t)
	for h, want := range map[uint64]int{0: 1, 999: 1, 1000: 2, 1159: 2, 1160: 1} {
		if got := len(w.e.Pairs(h, w.p)); got != want {
			t.Errorf("Pairs(%d) has %d, want %d", h, got, want)
		}
	}
	admits := w.e.AdmitsRunner(1100, w.onlyE, w.p)
	if !admits(w.e.Previous.Pair(), w.runner.PubKey()) || admits(w.e.Current.Pair(), w.runner.PubKey()) {
		t.Fatal("AdmitsRunner disagrees with the epoch-paired rule")
	}
	sat := w.e
	p := w.p
	p.OverlapBlocks = ^uint64(0)
	if sat.OverlapEnd(p) != ^uint64(0) {
		t.Fatal("OverlapEnd must saturate")
	}
}

func TestModeAGuardOnSnapshot(t *testing.T) {
	_, rs := validators(0, 40)
	s := mustSnapshot(t, 0, rs, 0)
	p := cip11.DefaultParams()
	p.PresentFirstEnabled, p.PresenceHardExcludeEnabled = true, true // D24: no Mode A without present-first
	if s.ModeAEffective(p) {
		t.Fatal("default MAX_SUBSET = 8 must never make Mode A effective")
	}
	p.MinSubset, p.MaxSubset = 20, 20
	if !s.ModeAEffective(p) { // effective_k = 20, t_hard = 11 = floor(20/2)+1
		t.Fatal("k = 20, t_hard = 11 should be effective")
	}
	p.THard = 10
	if s.ModeAEffective(p) {
		t.Fatal("t_hard below floor(k/2)+1 must not be effective")
	}
}
