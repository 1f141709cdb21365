package presence

import (
	"errors"
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/state"
)

var (
	addrA = cip11.Address{0xaa}
	addrB = cip11.Address{0xbb}
	addrC = cip11.Address{0xcc}
	addrD = cip11.Address{0xdd}
)

func healthy(a cip11.Address, hb uint64) state.Runner {
	return state.Runner{Address: a, Health: state.Healthy, LastHeartbeat: hb, Stake: cip11.U128From64(1), ReputationX1e9: 1_000_000_000}
}

func at(t *testing.T, r *state.MemRegistry, h uint64) state.RegistryView {
	t.Helper()
	v, err := r.At(h)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRegistryIndexBasisPin is the §7.2 "Registry index basis" pin test:
// seed ACTIVE_RUNNERS_KEY with [A, B, C] through production registration,
// mark one unhealthy and one stale without rewriting the list, check that
// indices 0/1/2 still map to A/B/C, then register D and check it gets index 3
// — all read through state.RegistryView, the reader selection uses, and
// through this package's index→address resolution.
func TestRegistryIndexBasisPin(t *testing.T) {
	reg := state.NewMemRegistry(state.DefaultReputationConfig())
	for _, a := range []cip11.Address{addrA, addrB, addrC} {
		if err := reg.Register(1, healthy(a, 1)); err != nil {
			t.Fatal(err)
		}
	}
	unhealthy := healthy(addrB, 1)
	unhealthy.Health = state.Unhealthy
	if err := reg.Update(5, unhealthy); err != nil {
		t.Fatal(err)
	}
	if err := reg.Update(500, healthy(addrA, 1)); err != nil { // A's heartbeat is now stale (500−1 > 100)
		t.Fatal(err)
	}
	parent := at(t, reg, 500)
	if got := parent.ActiveRunners(); !slices.Equal(got, []cip11.Address{addrA, addrB, addrC}) {
		t.Fatalf("after health changes ActiveRunners = %v, want [A B C]", got)
	}
	if r, _ := parent.Runner(addrB); r.Health != state.Unhealthy {
		t.Fatal("B's health change was not recorded")
	}
	all, _ := NewSet(3, []int{0, 1, 2})
	if got, err := Addresses(all, parent); err != nil || !slices.Equal(got, []cip11.Address{addrA, addrB, addrC}) {
		t.Fatalf("indices 0/1/2 map to %v (%v), want A/B/C", got, err)
	}

	if err := reg.Register(501, healthy(addrD, 501)); err != nil {
		t.Fatal(err)
	}
	next := at(t, reg, 501)
	if got := next.ActiveRunners(); !slices.Equal(got, []cip11.Address{addrA, addrB, addrC, addrD}) {
		t.Fatalf("after registering D ActiveRunners = %v, want [A B C D]", got)
	}
	d, _ := NewSet(4, []int{3})
	if got, err := Addresses(d, next); err != nil || !slices.Equal(got, []cip11.Address{addrD}) {
		t.Fatalf("index 3 maps to %v (%v), want D", got, err)
	}
	// §8.5: D is not in the H−1 = 500 basis, so a proposer for block 501 drops it.
	if s := FromAddresses(parent, []cip11.Address{addrD, addrC}); !slices.Equal(s.Indices(), []int{2}) || s.RegistrySize() != 3 {
		t.Fatalf("FromAddresses at basis 500 = %v over %d, want [2] over 3", s.Indices(), s.RegistrySize())
	}
}

func TestView(t *testing.T) {
	reg := state.NewMemRegistry(state.DefaultReputationConfig())
	for _, a := range []cip11.Address{addrC, addrA, addrD, addrB} { // append order, not address order
		if err := reg.Register(1, healthy(a, 1)); err != nil {
			t.Fatal(err)
		}
	}
	parent := at(t, reg, 1)
	s, err := Decode([]byte{0x01, 0x00, 0b0000_0101}, 4) // indices 0 and 2: C and D
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewView(s, parent)
	if err != nil {
		t.Fatal(err)
	}
	for a, want := range map[cip11.Address]bool{addrA: false, addrB: false, addrC: true, addrD: true, {0x01}: false} {
		if v.IsPresent(a) != want {
			t.Errorf("IsPresent(%x) = %v", a[:1], !want)
		}
	}
	if v.Len() != 2 || !v.Set().Equal(s) {
		t.Error("View Len/Set")
	}
	if got := FromAddresses(parent, []cip11.Address{addrD, addrC, addrD, {0x01}}); !got.Equal(s) {
		t.Errorf("FromAddresses = %v, want [0 2]", got.Indices())
	}
	wrong, _ := NewSet(5, nil)
	if _, err := NewView(wrong, parent); !errors.Is(err, ErrRegistryMismatch) {
		t.Errorf("NewView over a wrong-size set: %v", err)
	}
	if _, err := Addresses(wrong, parent); !errors.Is(err, ErrRegistryMismatch) {
		t.Errorf("Addresses over a wrong-size set: %v", err)
	}
	var zero View
	if zero.IsPresent(addrA) || zero.Len() != 0 {
		t.Error("zero View is not empty")
	}
}

func BenchmarkNewView5000(b *testing.B) {
	reg := state.NewMemRegistry(state.DefaultReputationConfig())
	for i := range 5000 {
		a := cip11.Address{byte(i >> 8), byte(i)}
		if err := reg.Register(1, state.Runner{Address: a}); err != nil {
			b.Fatal(err)
		}
	}
	parent, _ := reg.At(1)
	s := FromFunc(parent, func(a cip11.Address) bool { return a[1]%2 == 0 })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewView(s, parent); err != nil {
			b.Fatal(err)
		}
	}
}
