package local

import (
	"github.com/cip11/cip11"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/wire"
)

var (
	addrA = cip11.Address{0xaa}
	addrB = cip11.Address{0xbb}
	addrC = cip11.Address{0xcc}
)

// fataler is the part of testing.TB that *rapid.T also has.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

// rkey returns runner i's key: secp256k1 secret {0x11, i, 0, …, 1}.
func rkey(t fataler, i int) *wire.RunnerKey {
	t.Helper()
	var s [32]byte
	s[0], s[1], s[31] = 0x11, byte(i), 1
	k, err := wire.NewRunnerKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// registryWith registers addrs at height 1.
func registryWith(t fataler, addrs ...cip11.Address) *state.MemRegistry {
	t.Helper()
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
