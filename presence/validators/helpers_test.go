package validators

import (
	"slices"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/wire"
)

// fataler is the part of testing.TB that *rapid.T also has.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// Deterministic test identities for the validator-set tests.

// vkey returns validator i's key: Ed25519 seed {i, 0x5a, …}.
func vkey(i int) *wire.ValidatorKey {
	var seed [32]byte
	seed[0], seed[1] = byte(i), byte(i>>8)
	for j := 2; j < 32; j++ {
		seed[j] = 0x5a
	}
	return wire.NewValidatorKey(seed)
}

func peerOf(k *wire.ValidatorKey) PeerKey { return PeerKey(k.PubKey().Raw()) }

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

// validators returns keys lo..hi-1 and their records (stake = index), both
// in the §5.4 canonical order: ascending raw peer_pubkey.
func validators(lo, hi int) ([]*wire.ValidatorKey, []Record) {
	var idx []int
	for i := lo; i < hi; i++ {
		idx = append(idx, i)
	}
	slices.SortFunc(idx, func(a, b int) int { return peerOf(vkey(a)).Compare(peerOf(vkey(b))) })
	ks := make([]*wire.ValidatorKey, len(idx))
	rs := make([]Record, len(idx))
	for j, i := range idx {
		ks[j] = vkey(i)
		rs[j] = Record{PeerPubKey: peerOf(ks[j]), Stake: cip11.U128From64(uint64(i))}
	}
	return ks, rs
}

func mustSnapshot(t fataler, epoch uint64, rs []Record, act uint64) *Snapshot {
	t.Helper()
	s, err := NewSnapshot(epoch, rs, act)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustEpochs(t fataler, prev, cur *Snapshot) Epochs {
	t.Helper()
	e, err := NewEpochs(prev, cur)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// smallParams: k = 3 for |V| = 4..8 under MIN 3 / MAX 3, t_hard 2.
func smallParams() cip11.Params {
	p := cip11.DefaultParams()
	p.MinSubset, p.MaxSubset, p.THard = 3, 3, 2
	return p
}
