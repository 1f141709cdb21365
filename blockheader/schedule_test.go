package blockheader

import (
	"errors"
	"testing"

	"github.com/cip11/cip11/seed"
)

// TestCheckSchedule pins the §9.2 rule "R.round equals the expected
// absolute seed round" on a height schedule (D30, D31): epoch 0 from
// height 1, epoch 1 from height 50, epoch 2 from 90, known through 200.
// Block h's round must be Round(epoch_at(h), h) and its parent beacon the
// seed of Round(epoch_at(h−1), h−1). Every negative here passes the
// stateless Check: only the schedule tells them apart.
func TestCheckSchedule(t *testing.T) {
	s := seed.HeightSchedule{Activations: []uint64{1, 50, 90}, KnownThrough: 200}
	// hdr is a header at height with round (re, height) and the beacon
	// (be, height−1).
	hdr := func(height, re, be uint64) *Header {
		h := &Header{Version: Version, Round: seed.Round{Epoch: re, View: height}, Finalized: height - 1, ConsumedSeeds: seed.ConsumedSeedsV1{}}
		if height > 1 {
			h.ParentBeacon = &seed.Beacon{Round: seed.Round{Epoch: be, View: height - 1}, Signature: sig(0xaa)}
		}
		return h
	}
	for _, tc := range []struct {
		name   string
		height uint64
		h      *Header
		sched  seed.HeightSchedule
		want   error
	}{
		{"genesis", 1, hdr(1, 0, 0), s, nil},
		{"inside epoch 0", 10, hdr(10, 0, 0), s, nil},
		{"last height of epoch 0", 49, hdr(49, 0, 0), s, nil},
		{"activation height: round E+1, beacon E", 50, hdr(50, 1, 0), s, nil},
		{"inside epoch 1", 51, hdr(51, 1, 1), s, nil},
		{"second activation", 90, hdr(90, 2, 1), s, nil},
		{"at known_through", 200, hdr(200, 2, 2), s, nil},
		{"no beacon: presence is Check's rule", 10, func() *Header { h := hdr(10, 0, 0); h.ParentBeacon = nil; return h }(), s, nil},
		{"stale-epoch beacon after the activation", 51, hdr(51, 1, 0), s, ErrBeaconEpoch},
		{"stale-epoch beacon two epochs on", 95, hdr(95, 2, 0), s, ErrBeaconEpoch},
		{"next-epoch beacon before the activation", 50, hdr(50, 1, 1), s, ErrBeaconEpoch},
		{"round epoch too low at the activation", 50, hdr(50, 0, 0), s, ErrRoundEpoch},
		{"round epoch too low after the activation", 60, hdr(60, 0, 0), s, ErrRoundEpoch},
		{"round epoch too high before the activation", 49, hdr(49, 1, 0), s, ErrRoundEpoch},
		{"round epoch too high beyond the schedule", 10, hdr(10, 3, 0), s, ErrRoundEpoch},
		{"round view not the height", 11, hdr(10, 0, 0), s, ErrRoundView},
		{"beacon view not h-1", 10, func() *Header { h := hdr(10, 0, 0); h.ParentBeacon.Round.View = 8; return h }(), s, ErrBeaconRound},
		{"height past known_through", 201, hdr(201, 2, 2), s, ErrHeightUnscheduled},
		{"height before the first activation", 5, hdr(5, 0, 0), seed.HeightSchedule{Activations: []uint64{6}, KnownThrough: 10}, ErrHeightUnscheduled},
		{"beacon's height before the first activation", 6, hdr(6, 0, 0), seed.HeightSchedule{Activations: []uint64{6}, KnownThrough: 10}, ErrHeightUnscheduled},
		{"height 0", 0, hdr(1, 0, 0), s, ErrZeroHeight},
		{"no activations", 1, hdr(1, 0, 0), seed.HeightSchedule{KnownThrough: 10}, seed.ErrInvalidSchedule},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckSchedule(tc.h, tc.height, tc.sched)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.want) || countSentinels(err) != 1 {
				t.Fatalf("CheckSchedule = %v, want %v", err, tc.want)
			}
		})
	}
	// The stateless rules accept every schedule negative whose views are right: Check alone
	// cannot tell a retired epoch's beacon or a wrong round epoch (SPEC-NOTES H4).
	for _, h := range []struct {
		height uint64
		h      *Header
	}{{51, hdr(51, 1, 0)}, {50, hdr(50, 0, 0)}, {49, hdr(49, 1, 0)}, {201, hdr(201, 2, 2)}} {
		if err := Check(h.h, h.height); err != nil {
			t.Errorf("Check at %d: %v", h.height, err)
		}
	}
	if err := CheckSchedule(nil, 1, s); !errors.Is(err, ErrNilHeader) {
		t.Fatalf("CheckSchedule(nil) = %v", err)
	}
}
