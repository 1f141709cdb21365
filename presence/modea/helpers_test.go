package modea

import (
	"bytes"
	"slices"
	"sort"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/presence/validators"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

// fataler is the part of testing.TB that *rapid.T also has.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// Deterministic test identities for the Mode-A tests.

var (
	addrA = cip11.Address{0xaa}
	addrB = cip11.Address{0xbb}
	addrC = cip11.Address{0xcc}
)

// vkey returns validator i's key: Ed25519 seed {i, 0x5a, …}.
func vkey(i int) *wire.ValidatorKey {
	var seed [32]byte
	seed[0], seed[1] = byte(i), byte(i>>8)
	for j := 2; j < 32; j++ {
		seed[j] = 0x5a
	}
	return wire.NewValidatorKey(seed)
}

func peerOf(k *wire.ValidatorKey) validators.PeerKey { return validators.PeerKey(k.PubKey().Raw()) }

// rkey returns runner i's key: secp256k1 secret {0x11, i, 0, …, 1}.
func rkey(t fataler, i int) *wire.RunnerKey {
	var s [32]byte
	s[0], s[1], s[31] = 0x11, byte(i), 1
	k, err := wire.NewRunnerKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// validatorKeys returns keys lo..hi-1 and their records (stake = index),
// both in the §5.4 canonical order: ascending raw peer_pubkey.
func validatorKeys(lo, hi int) ([]*wire.ValidatorKey, []validators.Record) {
	var idx []int
	for i := lo; i < hi; i++ {
		idx = append(idx, i)
	}
	slices.SortFunc(idx, func(a, b int) int { return peerOf(vkey(a)).Compare(peerOf(vkey(b))) })
	ks := make([]*wire.ValidatorKey, len(idx))
	rs := make([]validators.Record, len(idx))
	for j, i := range idx {
		ks[j] = vkey(i)
		rs[j] = validators.Record{PeerPubKey: peerOf(ks[j]), Stake: cip11.U128From64(uint64(i))}
	}
	return ks, rs
}

func mustSnapshot(t fataler, epoch uint64, rs []validators.Record, act uint64) *validators.Snapshot {
	t.Helper()
	s, err := validators.NewSnapshot(epoch, rs, act)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// registryWith registers addrs at height 1.
func registryWith(t fataler, addrs ...cip11.Address) *state.MemRegistry {
	reg := state.NewMemRegistry(state.DefaultReputationConfig())
	for _, a := range addrs {
		if err := reg.Register(1, state.Runner{Address: a, Stake: cip11.U128From64(1)}); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func regAt(t fataler, r *state.MemRegistry, h uint64) state.RegistryView {
	t.Helper()
	v, err := r.At(h)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// naiveSub is the §5.1 definition read literally: sort every validator by
// keccak256(R.auth_pubkey ‖ v.peer_pubkey), take the first k.
func naiveSub(rs []validators.Record, runner wire.PubKey, k int) []validators.PeerKey {
	type kv struct {
		key cip11.Hash
		v   validators.PeerKey
	}
	var all []kv
	for _, r := range rs {
		all = append(all, kv{cip11.Keccak256(runner.Raw(), r.PeerPubKey[:]), r.PeerPubKey})
	}
	sort.SliceStable(all, func(i, j int) bool { return bytes.Compare(all[i].key[:], all[j].key[:]) < 0 })
	out := make([]validators.PeerKey, 0, k)
	for _, x := range all[:k] {
		out = append(out, x.v)
	}
	return out
}

// overlapWorld is an E → E+1 reconfiguration: E = validators 0..7, E+1 =
// validators 4..11, activation of E+1 at 1000, OVERLAP_BLOCKS 160, k = 3
// (MIN = MAX = 3), t_hard 2.
type overlapWorld struct {
	p      cip11.Params
	e      validators.Epochs
	runner *wire.RunnerKey
	onlyE  validators.PeerKey // in Sub_E(runner) but not in Sub_{E+1}(runner)
	onlyE1 validators.PeerKey // in Sub_{E+1}(runner), in snapshot E but not in Sub_E(runner)
	both   validators.PeerKey // in both subsets
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
// snapshot E but not Sub_E.
func tryOverlapWorld(t fataler, r int) (overlapWorld, bool) {
	p := cip11.DefaultParams()
	p.MinSubset, p.MaxSubset, p.THard, p.OverlapBlocks = 3, 3, 2, 160
	_, a := validatorKeys(0, 8)
	_, b := validatorKeys(4, 12)
	e, err := validators.NewEpochs(mustSnapshot(t, 5, a, 0), mustSnapshot(t, 6, b, 1000))
	if err != nil {
		t.Fatal(err)
	}
	w := overlapWorld{p: p, e: e, runner: rkey(t, r)}
	subE, _ := w.e.Previous.Sub(w.runner.PubKey(), p)
	subE1, _ := w.e.Current.Sub(w.runner.PubKey(), p)
	foundE, foundB, foundE1 := false, false, false
	for _, v := range subE {
		if slices.Contains(subE1, v) {
			w.both, foundB = v, true
		} else {
			w.onlyE, foundE = v, true
		}
	}
	for _, v := range subE1 {
		if !slices.Contains(subE, v) && w.e.Previous.Contains(v) {
			w.onlyE1, foundE1 = v, true
		}
	}
	return w, foundE && foundB && foundE1
}
