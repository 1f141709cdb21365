package seed

import (
	"errors"
	"math"
	"testing"
)

func TestRoundOrder(t *testing.T) {
	rs := []Round{{0, 0}, {0, 1}, {0, math.MaxUint64}, {1, 0}, {1, 5}, {math.MaxUint64, 0}}
	for i := range rs {
		for j := range rs {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := rs[i].Compare(rs[j]); got != want {
				t.Errorf("%v.Compare(%v) = %d, want %d", rs[i], rs[j], got, want)
			}
			if rs[i].Less(rs[j]) != (i < j) {
				t.Errorf("%v.Less(%v) wrong", rs[i], rs[j])
			}
		}
	}
	if s := (Round{3, 4}).String(); s != "(3, 4)" {
		t.Errorf("String = %q", s)
	}
}

func TestFixedSchedule(t *testing.T) {
	s := FixedSchedule{ViewsPerEpoch: 10, FirstView: 1, LastKnownEpoch: 5}
	for _, tc := range []struct {
		r        Round
		k        uint64
		want     Round
		mappable bool
		err      error
	}{
		{Round{0, 1}, 3, Round{0, 4}, true, nil},
		{Round{0, 8}, 3, Round{1, 1}, true, nil},   // carries across the epoch boundary
		{Round{0, 10}, 0, Round{0, 10}, true, nil}, // k = 0 is the identity
		{Round{2, 5}, 25, Round{4, 10}, true, nil},
		{Round{5, 9}, 3, Round{6, 2}, false, nil}, // epoch 6 schedule not known yet
		{Round{0, 0}, 1, Round{}, false, ErrRoundOutsideSchedule},
		{Round{0, 11}, 1, Round{}, false, ErrRoundOutsideSchedule},
		{Round{math.MaxUint64, 10}, 1, Round{}, false, ErrRoundOverflow},
	} {
		got, ok, err := s.Advance(tc.r, tc.k)
		if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
			t.Errorf("%v+%d: err %v, want %v", tc.r, tc.k, err, tc.err)
			continue
		}
		if err == nil && (got != tc.want || ok != tc.mappable) {
			t.Errorf("%v+%d = %v %v, want %v %v", tc.r, tc.k, got, ok, tc.want, tc.mappable)
		}
	}
	big := FixedSchedule{ViewsPerEpoch: 1, LastKnownEpoch: math.MaxUint64}
	if got, _, err := big.Advance(Round{0, 0}, math.MaxUint64); err != nil || got != (Round{math.MaxUint64, 0}) {
		t.Errorf("max k: %v %v", got, err)
	}
	if _, _, err := big.Advance(Round{1, 0}, math.MaxUint64); !errors.Is(err, ErrRoundOverflow) {
		t.Errorf("epoch overflow: %v", err)
	}
	wide := FixedSchedule{ViewsPerEpoch: math.MaxUint64, LastKnownEpoch: 3}
	// offset 2^65−3 = 1·(2^64−1) + (2^64−2)
	if got, _, err := wide.Advance(Round{0, math.MaxUint64 - 1}, math.MaxUint64); err != nil || got != (Round{1, math.MaxUint64 - 1}) {
		t.Errorf("128-bit offset: %v %v", got, err)
	}
	if _, _, err := (FixedSchedule{}).Advance(Round{}, 1); !errors.Is(err, ErrInvalidSchedule) {
		t.Errorf("zero views: %v", err)
	}
	if _, _, err := (FixedSchedule{ViewsPerEpoch: 2, FirstView: math.MaxUint64}).Advance(Round{}, 1); !errors.Is(err, ErrInvalidSchedule) {
		t.Errorf("view range overflows: %v", err)
	}
}

func TestSeedRound(t *testing.T) {
	s := FixedSchedule{ViewsPerEpoch: 100, LastKnownEpoch: 0}
	if r, ok, err := SeedRound(s.Advance, Round{0, 10}, 3); r != (Round{0, 13}) || !ok || err != nil {
		t.Errorf("SeedRound = %v %v %v", r, ok, err)
	}
	if r, ok, err := SeedRound(s.Advance, Round{0, 99}, 3); ok || err != nil || r != (Round{}) {
		t.Errorf("unmappable: %v %v %v", r, ok, err)
	}
	stuck := func(r Round, _ uint64) (Round, bool, error) { return r, true, nil }
	if _, _, err := SeedRound(stuck, Round{0, 1}, 3); !errors.Is(err, ErrAdvanceRoundRegressed) {
		t.Errorf("regressing advance: %v", err)
	}
}
