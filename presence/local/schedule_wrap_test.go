package local

import "testing"

// TestNextDueHugeCadence: the next bucket is found without wrapping when
// effective_cadence_blocks is above 2^63 (a governance value): with cadence
// 2^63+3 and phase 7, the bucket after height 4 is 7 (it was 5 when
// Phase + Cadence wrapped).
func TestNextDueHugeCadence(t *testing.T) {
	s := HeartbeatSchedule{Phase: 7, Cadence: 1<<63 + 3, Emergency: ^uint64(0)}
	if got := s.NextDue(4, 0); got != 7 {
		t.Fatalf("NextDue(4, 0) = %d, want 7", got)
	}
	if got := s.NextDue(8, 0); got != 1<<63+10 {
		t.Fatalf("NextDue(8, 0) = %d, want 2^63+10", got)
	}
}
