package node

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable ValidatorConfig.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// TestStatusStalled: a single validator (block time 100 ms, StallBlocks 3:
// stalled after 300 ms) reports its last block's applied time and age
// on Status, and stalled exactly once the age passes the threshold; a new
// block clears it. The clock is the validator's Now.
func TestStatusStalled(t *testing.T) {
	d := testDevnet(t, 0, nil)
	t0 := time.Date(2026, 12, 4, 16, 0, 0, 0, time.UTC)
	clk := &fakeClock{t: t0}
	v, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, NoSync: true, BlockTime: 100 * time.Millisecond,
		StallBlocks: 3, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	st := v.Status()
	if st.Height != 0 || !st.LatestBlockTime.IsZero() || st.LastBlockAgeMillis != 0 || st.StallAfterMillis != 300 || st.Stalled {
		t.Fatalf("before any block: %+v", st)
	}
	for range 2 {
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		after   time.Duration
		age     int64
		stalled bool
	}{
		{0, 0, false},
		{250 * time.Millisecond, 250, false},
		{300 * time.Millisecond, 300, false}, // not beyond the threshold yet
		{301 * time.Millisecond, 301, true},
		{10 * time.Second, 10000, true},
	} {
		clk.set(t0.Add(tc.after))
		st = v.Status()
		if st.Height != 2 || st.LatestBlockHeight != 2 || st.EarliestBlockHeight != 1 || !st.LatestBlockTime.Equal(t0) || st.LastBlockAgeMillis != tc.age ||
			st.Stalled != tc.stalled || st.CatchingUp || st.Peers != 0 || st.Validators != nil || st.Failed != "" {
			t.Fatalf("%v after the last block: %+v", tc.after, st)
		}
	}
	t1 := t0.Add(10 * time.Second)
	if err := v.ProduceBlock(); err != nil {
		t.Fatal(err)
	}
	clk.set(t1.Add(50 * time.Millisecond))
	if st = v.Status(); st.Height != 3 || !st.LatestBlockTime.Equal(t1) || st.LastBlockAgeMillis != 50 || st.Stalled {
		t.Fatalf("after a new block: %+v", st)
	}
}

// TestStallBlocksConfig: 0 is DefaultStallBlocks (8 block times), a
// negative count is ErrBadRequest.
func TestStallBlocksConfig(t *testing.T) {
	d := testDevnet(t, 0, nil)
	v, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, NoSync: true, BlockTime: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if got := v.Status().StallAfterMillis; got != 2000 || DefaultStallBlocks != 8 {
		t.Fatalf("default stall threshold %d ms (DefaultStallBlocks %d), want 8 × 250 ms", got, DefaultStallBlocks)
	}
	_, err = NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, NoSync: true, StallBlocks: -1})
	if !errors.Is(err, ErrBadRequest) {
		t.Fatalf("StallBlocks -1: %v", err)
	}
}
