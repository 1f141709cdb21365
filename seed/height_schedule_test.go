package seed_test

import (
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/cip11/cip11/seed"
)

// TestHeightScheduleAdvance pins advance_round on the CometBFT height
// schedule (D30): the view is the height, the epoch changes at an activation
// height, and a target past KnownThrough is not mappable yet (§9.2).
func TestHeightScheduleAdvance(t *testing.T) {
	s := seed.HeightSchedule{Activations: []uint64{1, 50, 90}, KnownThrough: 200}
	cases := []struct {
		name string
		r    seed.Round
		k    uint64
		want seed.Round
		ok   bool
		err  error
	}{
		{"inside epoch 0", seed.Round{Epoch: 0, View: 10}, 5, seed.Round{Epoch: 0, View: 15}, true, nil},
		{"k = 0 stays", seed.Round{Epoch: 0, View: 10}, 0, seed.Round{Epoch: 0, View: 10}, true, nil},
		{"last view of epoch 0", seed.Round{Epoch: 0, View: 40}, 9, seed.Round{Epoch: 0, View: 49}, true, nil},
		{"onto the activation height", seed.Round{Epoch: 0, View: 40}, 10, seed.Round{Epoch: 1, View: 50}, true, nil},
		{"across two activations", seed.Round{Epoch: 0, View: 45}, 50, seed.Round{Epoch: 2, View: 95}, true, nil},
		{"the known horizon", seed.Round{Epoch: 2, View: 190}, 10, seed.Round{Epoch: 2, View: 200}, true, nil},
		{"past the known horizon: not mappable", seed.Round{Epoch: 2, View: 190}, 11, seed.Round{}, false, nil},
		{"epoch does not match the view", seed.Round{Epoch: 1, View: 10}, 1, seed.Round{}, false, seed.ErrRoundOutsideSchedule},
		{"view before the first activation", seed.Round{Epoch: 0, View: 0}, 1, seed.Round{}, false, seed.ErrRoundOutsideSchedule},
		{"view past the horizon", seed.Round{Epoch: 2, View: 201}, 0, seed.Round{}, false, seed.ErrRoundOutsideSchedule},
		{"overflow", seed.Round{Epoch: 2, View: 150}, ^uint64(0), seed.Round{}, false, seed.ErrRoundOverflow},
	}
	for _, c := range cases {
		got, ok, err := s.Advance(c.r, c.k)
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) || ok != c.ok || got != c.want {
			t.Errorf("%s: Advance(%v, %d) = %v, %v, %v; want %v, %v, %v", c.name, c.r, c.k, got, ok, err, c.want, c.ok, c.err)
		}
	}
}

func TestHeightScheduleInvalid(t *testing.T) {
	for name, s := range map[string]seed.HeightSchedule{
		"no activations":          {KnownThrough: 10},
		"activations not rising":  {Activations: []uint64{1, 5, 5}, KnownThrough: 10},
		"horizon before the last": {Activations: []uint64{1, 20}, KnownThrough: 19},
	} {
		if _, _, err := s.Advance(seed.Round{View: 1}, 1); !errors.Is(err, seed.ErrInvalidSchedule) {
			t.Errorf("%s: err = %v, want ErrInvalidSchedule", name, err)
		}
		if _, err := s.EpochAt(1); !errors.Is(err, seed.ErrInvalidSchedule) {
			t.Errorf("%s: EpochAt err = %v, want ErrInvalidSchedule", name, err)
		}
	}
}

// TestHeightScheduleProperties: advance_round composes (advancing a then b
// is advancing a+b), keeps view = height + k and never moves the epoch
// backwards (D30), and SeedRound accepts it for every K ≥ 1 (§9.2).
func TestHeightScheduleProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "epochs")
		acts := []uint64{rapid.Uint64Range(0, 10).Draw(t, "first")}
		for len(acts) < n {
			acts = append(acts, acts[len(acts)-1]+rapid.Uint64Range(1, 40).Draw(t, "gap"))
		}
		s := seed.HeightSchedule{Activations: acts, KnownThrough: acts[n-1] + rapid.Uint64Range(0, 100).Draw(t, "horizon")}
		view := rapid.Uint64Range(acts[0], s.KnownThrough).Draw(t, "view")
		e, err := s.EpochAt(view)
		if err != nil {
			t.Fatal(err)
		}
		r := seed.Round{Epoch: e, View: view}
		a, b := rapid.Uint64Range(0, 80).Draw(t, "a"), rapid.Uint64Range(0, 80).Draw(t, "b")
		ab, okAB, err := s.Advance(r, a+b)
		if err != nil {
			t.Fatal(err)
		}
		mid, okA, err := s.Advance(r, a)
		if err != nil {
			t.Fatal(err)
		}
		if !okA {
			if okAB {
				t.Fatalf("a+b mappable but a is not")
			}
			return
		}
		two, ok2, err := s.Advance(mid, b)
		if err != nil || ok2 != okAB || two != ab {
			t.Fatalf("advance %d then %d = %v,%v,%v; advance %d = %v,%v", a, b, two, ok2, err, a+b, ab, okAB)
		}
		if okA && (mid.View != view+a || mid.Epoch < r.Epoch) {
			t.Fatalf("advance(%v, %d) = %v", r, a, mid)
		}
		if a > 0 && okA {
			if got, ok, err := seed.SeedRound(s.Advance, r, a); err != nil || !ok || got != mid {
				t.Fatalf("SeedRound = %v, %v, %v", got, ok, err)
			}
		}
	})
}
