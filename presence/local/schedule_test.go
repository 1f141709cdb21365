package local

import (
	"errors"
	"testing"

	"github.com/cip11/cip11"
	"pgregory.net/rapid"
)

// TestHeartbeatPhaseFrozen: values computed independently with a pure-Python
// Keccak-256 over chain_id_be8 ‖ address.
func TestHeartbeatPhaseFrozen(t *testing.T) {
	addr := rkey(t, 1).Address()
	if addr.String() != "135229109491df711fa932a5b4f993e6bee44fd4" {
		t.Fatalf("address %s", addr)
	}
	for cadence, want := range map[uint64]uint64{90: 36, 97: 17, 1: 0} {
		if got, err := HeartbeatPhase(7, addr, cadence); err != nil || got != want {
			t.Fatalf("phase mod %d = %d, %v; want %d", cadence, got, err, want)
		}
	}
	if _, err := HeartbeatPhase(7, addr, 0); !errors.Is(err, ErrZeroCadence) {
		t.Fatal(err)
	}
}

// TestHeartbeatPhaseSpreads: the phase is runner-specific — 2,000 runners
// hit every one of 20 buckets, none with more than twice its share.
func TestHeartbeatPhaseSpreads(t *testing.T) {
	counts := make([]int, 20)
	for i := range 2000 {
		a := cip11.Address{byte(i), byte(i >> 8), 0x42}
		ph, _ := HeartbeatPhase(1, a, 20)
		counts[ph]++
	}
	for b, c := range counts {
		if c == 0 || c > 200 {
			t.Fatalf("bucket %d has %d runners", b, c)
		}
	}
	p1, _ := HeartbeatPhase(1, addrA, 1000)
	p2, _ := HeartbeatPhase(2, addrA, 1000)
	if p1 == p2 {
		t.Fatal("phase does not depend on chain_id")
	}
}

func TestNewHeartbeatScheduleRejects(t *testing.T) {
	p := cip11.DefaultParams() // HEARTBEAT_TIMEOUT_BLOCKS = 100
	for _, c := range []struct{ cadence, margin uint64 }{{91, 10}, {1, 100}, {1, 200}} {
		if _, err := NewHeartbeatSchedule(1, addrA, c.cadence, c.margin, p); !errors.Is(err, ErrCadenceTooLong) {
			t.Fatalf("%+v: %v", c, err)
		}
	}
	if _, err := NewHeartbeatSchedule(1, addrA, 0, 10, p); !errors.Is(err, ErrZeroCadence) {
		t.Fatal(err)
	}
	s, err := NewHeartbeatSchedule(7, rkey(t, 1).Address(), 90, 10, p)
	if err != nil || s.Phase != 36 || s.Emergency != 90 {
		t.Fatalf("%+v %v", s, err)
	}
}

// TestHeartbeatNextDue (rapid): the next submission is in the runner's own
// phase bucket unless the emergency refresh comes first, is never later
// than last_heartbeat + HEARTBEAT_TIMEOUT_BLOCKS − margin when that is
// still ahead, and a runner that submits every time it is due never lets
// the floor go stale.
func TestHeartbeatNextDue(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := cip11.DefaultParams()
		margin := uint64(rapid.IntRange(0, 50).Draw(t, "margin"))
		cadence := uint64(rapid.IntRange(1, int(100-margin)).Draw(t, "cadence"))
		a := cip11.Address{byte(rapid.IntRange(0, 255).Draw(t, "a"))}
		s, err := NewHeartbeatSchedule(3, a, cadence, margin, p)
		if err != nil {
			t.Fatal(err)
		}
		last := uint64(rapid.IntRange(0, 1000).Draw(t, "last"))
		h := last + uint64(rapid.IntRange(0, 200).Draw(t, "dh"))
		due := s.NextDue(h, last)
		if due < h || due <= last {
			t.Fatalf("due %d before h %d / last %d", due, h, last)
		}
		emergency := last + s.Emergency
		switch {
		case emergency >= max(h, last+1) && due > emergency:
			t.Fatalf("due %d after emergency %d", due, emergency)
		case due%cadence != s.Phase && due != emergency && due != max(h, last+1):
			t.Fatalf("due %d is neither phase %d mod %d nor emergency %d", due, s.Phase, cadence, emergency)
		case due >= max(h, last+1)+cadence:
			t.Fatalf("due %d more than a cadence after %d", due, max(h, last+1))
		}
		// Submitting whenever due keeps h − last_heartbeat ≤ timeout − margin.
		cur := last
		for range 20 {
			next := s.NextDue(cur+1, cur)
			if next-cur > p.HeartbeatTimeoutBlocks-margin {
				t.Fatalf("gap %d exceeds %d", next-cur, p.HeartbeatTimeoutBlocks-margin)
			}
			cur = next
		}
	})
}

// TestHeartbeatOverdue: a runner on its steady schedule is not in an
// emergency. With cadence = HEARTBEAT_TIMEOUT_BLOCKS − margin (90 of 100,
// the node runner's choice) a heartbeat included in the runner's bucket at
// height L is due again at L + 90, which is both its bucket and the
// emergency bound: not overdue. A heartbeat that missed its bucket (the
// chain still shows an older one) is overdue from the bound on, and so is
// every height past it.
func TestHeartbeatOverdue(t *testing.T) {
	p := cip11.DefaultParams()
	s, err := NewHeartbeatSchedule(7011, cip11.Address{9}, 90, 10, p)
	if err != nil {
		t.Fatal(err)
	}
	onPhase := 1000 - 1000%90 + s.Phase // a height in the runner's bucket
	for _, c := range []struct {
		h, last uint64
		want    bool
	}{
		{onPhase + 90, onPhase, false},     // steady state: due in its bucket at the bound
		{onPhase + 89, onPhase, false},     // before the bound
		{onPhase + 91, onPhase, true},      // past the bound: the bucket's heartbeat did not land
		{onPhase + 90, onPhase - 1, true},  // the bound of an off-bucket last heartbeat
		{onPhase + 95, onPhase - 5, true},  // the bound, not in the bucket
		{onPhase + 180, onPhase, true},     // a whole cadence late
		{onPhase + 88, onPhase - 1, false}, // before the bound of an off-bucket one
	} {
		if got := s.Overdue(c.h, c.last); got != c.want {
			t.Errorf("Overdue(%d, %d) = %v, want %v (phase %d)", c.h, c.last, got, c.want, s.Phase)
		}
	}
}

type fixedRand uint64

func (f fixedRand) Uint64() uint64 { return uint64(f) }

// TestReconnectBackoff: 100 ms × 2^attempt capped at 30 s, ±25% jitter
// from the injected source, never above 30 s.
func TestReconnectBackoff(t *testing.T) {
	bases := []uint64{100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000}
	for a, b := range bases {
		lo := ReconnectDelayMillis(uint32(a), fixedRand(0))
		hi := ReconnectDelayMillis(uint32(a), fixedRand(^uint64(0)))
		if lo != b-b/4 || hi != min(b+b/4, 30000) {
			t.Fatalf("attempt %d: [%d, %d], base %d", a, lo, hi, b)
		}
	}
	if ReconnectDelayMillis(1<<31, fixedRand(0)) != 22500 {
		t.Fatal("huge attempt must sit at the cap")
	}
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.Uint32().Draw(t, "attempt")
		d := ReconnectDelayMillis(a, fixedRand(rapid.Uint64().Draw(t, "r")))
		b := uint64(30000)
		if a < 9 {
			b = 100 << a
		}
		if d < b-b/4 || d > min(b+b/4, 30000) {
			t.Fatalf("attempt %d: %d outside ±25%% of %d", a, d, b)
		}
	})
}

// TestResultTxRetry: first rebroadcast after the grace, then every
// interval; a reveal never before its window; nothing after Stop.
func TestResultTxRetry(t *testing.T) {
	p := cip11.DefaultParams() // grace 2, interval 2
	r := NewResultTxRetry(10, 0, p)
	for h, want := range map[uint64]bool{10: false, 11: false, 12: true} {
		if r.Due(h) != want {
			t.Fatalf("commit: Due(%d) = %v", h, !want)
		}
	}
	r.Rebroadcast(12)
	if r.Due(13) || !r.Due(14) {
		t.Fatal("interval")
	}
	r.Stop()
	if r.Due(100) {
		t.Fatal("due after Stop")
	}
	rev := NewResultTxRetry(10, 20, p)
	for h := uint64(0); h < 20; h++ {
		if rev.Due(h) {
			t.Fatalf("reveal due at %d before its window opens at 20", h)
		}
	}
	if !rev.Due(20) {
		t.Fatal("reveal not due when the window opens")
	}
	rev.Rebroadcast(20)
	if rev.Due(21) || !rev.Due(22) {
		t.Fatal("reveal interval")
	}
}
