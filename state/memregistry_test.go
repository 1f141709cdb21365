package state

import (
	"errors"
	"slices"
	"testing"

	"github.com/cip11/cip11"
)

func a(b byte) cip11.Address { return cip11.Address{b} }

// TestHistory: At(h) shows the registry as stored at the end of h — later
// registrations and updates are invisible to earlier heights (§9.2 reads
// historical block-S state).
func TestHistory(t *testing.T) {
	m := NewMemRegistry(DefaultReputationConfig())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.Register(1, Runner{Address: a(2), LastHeartbeat: 1}))
	must(m.Register(1, Runner{Address: a(1), LastHeartbeat: 1}))
	must(m.Update(5, Runner{Address: a(2), Health: Paused, LastHeartbeat: 5}))
	must(m.Register(7, Runner{Address: a(3)}))
	must(m.SetReputationConfig(7, ReputationConfig{Normalizer: 100, WMinFloorX1e6: 0}))

	v4, _ := m.At(4)
	if !slices.Equal(v4.ActiveRunners(), []cip11.Address{a(2), a(1)}) {
		t.Fatalf("append order at 4: %v", v4.ActiveRunners())
	}
	if r, _ := v4.Runner(a(2)); r.Health != Healthy || r.LastHeartbeat != 1 {
		t.Fatalf("runner at 4 sees a later update: %+v", r)
	}
	if _, ok := v4.Runner(a(3)); ok {
		t.Fatal("runner registered at 7 visible at 4")
	}
	v7, _ := m.At(7)
	if r, _ := v7.Runner(a(2)); r.Health != Paused {
		t.Fatal("update at 5 not visible at 7")
	}
	if len(v7.ActiveRunners()) != 3 || v7.ReputationConfig().Normalizer != 100 || v4.ReputationConfig().Normalizer != 1 {
		t.Fatal("registration or config history wrong")
	}
	v0, _ := m.At(0)
	if len(v0.ActiveRunners()) != 0 {
		t.Fatal("height 0 sees registrations of height 1")
	}
}

func TestRegistryErrors(t *testing.T) {
	m := NewMemRegistry(DefaultReputationConfig())
	if err := m.Register(3, Runner{Address: a(1)}); err != nil {
		t.Fatal(err)
	}
	if err := m.Register(3, Runner{Address: a(1)}); !errors.Is(err, ErrAlreadyRegistered) {
		t.Fatalf("re-register: %v", err)
	}
	if err := m.Update(3, Runner{Address: a(9)}); !errors.Is(err, ErrNotRegistered) {
		t.Fatalf("update unknown: %v", err)
	}
	if err := m.Update(2, Runner{Address: a(1)}); !errors.Is(err, ErrHeightRegression) {
		t.Fatalf("write below last height: %v", err)
	}
}

// TestActiveRunnersIsCapped: appending to a view's list cannot write into
// the registry's backing array.
func TestActiveRunnersIsCapped(t *testing.T) {
	m := NewMemRegistry(DefaultReputationConfig())
	_ = m.Register(1, Runner{Address: a(1)})
	_ = m.Register(2, Runner{Address: a(2)})
	v1, _ := m.At(1)
	_ = append(v1.ActiveRunners(), a(9))
	v2, _ := m.At(2)
	if v2.ActiveRunners()[1] != a(2) {
		t.Fatal("view aliasing corrupted the registry")
	}
}

// TestRollback: Rollback(h) undoes every registration, update and
// configuration change at h or above, keeps everything below, and lets the
// next write be at h again (the discard of a block batch, package store).
func TestRollback(t *testing.T) {
	cfg := DefaultReputationConfig()
	m := NewMemRegistry(cfg)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.Register(1, Runner{Address: a(1), LastHeartbeat: 1}))
	must(m.Register(2, Runner{Address: a(2), LastHeartbeat: 2}))
	must(m.Update(3, Runner{Address: a(1), LastHeartbeat: 3}))
	must(m.Register(3, Runner{Address: a(3), LastHeartbeat: 3}))
	must(m.SetReputationConfig(3, ReputationConfig{Normalizer: 5}))
	m.Rollback(3)
	if r, ok := m.Latest(a(1)); !ok || r.LastHeartbeat != 1 {
		t.Fatalf("a(1) after rollback: %+v %v", r, ok)
	}
	if _, ok := m.Latest(a(3)); ok {
		t.Fatal("a(3) registered at 3 survived the rollback")
	}
	v, err := m.At(2)
	must(err)
	if len(v.ActiveRunners()) != 2 || v.ReputationConfig() != cfg {
		t.Fatalf("view 2: %v %+v", v.ActiveRunners(), v.ReputationConfig())
	}
	// Height 3 is writable again, a(3) can register again.
	must(m.Register(3, Runner{Address: a(3), LastHeartbeat: 3}))
	must(m.Update(3, Runner{Address: a(2), LastHeartbeat: 3}))
	v, err = m.At(3)
	must(err)
	if got := v.ActiveRunners(); len(got) != 3 || got[2] != a(3) {
		t.Fatalf("order after re-registration: %v", got)
	}
	// A rollback above every write changes nothing; the newest surviving
	// write height (2) still orders writes.
	m.Rollback(10)
	m.Rollback(3)
	if err := m.Update(1, Runner{Address: a(1)}); err == nil {
		t.Fatal("write at 1 after the newest surviving write at 2 was accepted")
	}
	must(m.Update(2, Runner{Address: a(1), LastHeartbeat: 2}))
}
