package validators

import (
	"errors"
	"testing"
)

// participantsAt is the interface the block engine consumes (DECISIONS D25).
var _ interface {
	ParticipantsAt(h uint64) (int, error)
} = (*History)(nil)

// historyOf is three snapshots: epoch 0 of 1 validator from 0, epoch 3 of 4
// from 100, epoch 4 of 6 from 250.
func historyOf(t *testing.T) (*History, [3]*Snapshot) {
	t.Helper()
	_, one := validators(0, 1)
	_, four := validators(0, 4)
	_, six := validators(2, 8)
	s := [3]*Snapshot{mustSnapshot(t, 0, one, 0), mustSnapshot(t, 3, four, 100), mustSnapshot(t, 4, six, 250)}
	h, err := NewHistory(s[:]...)
	if err != nil {
		t.Fatal(err)
	}
	return h, s
}

// TestHistoryActiveBoundaries: the active snapshot switches exactly at each
// activation height (§5.3: active from activation_height), not a block
// earlier or later.
func TestHistoryActiveBoundaries(t *testing.T) {
	h, s := historyOf(t)
	for _, c := range []struct {
		h    uint64
		want *Snapshot
		n    int
	}{
		{0, s[0], 1}, {1, s[0], 1}, {99, s[0], 1},
		{100, s[1], 4}, {101, s[1], 4}, {249, s[1], 4},
		{250, s[2], 6}, {251, s[2], 6}, {^uint64(0), s[2], 6},
	} {
		got, err := h.Active(c.h)
		if err != nil || got != c.want {
			t.Errorf("Active(%d) = epoch %v, %v; want epoch %d", c.h, epochOf(got), err, c.want.Epoch())
		}
		if n, err := h.ParticipantsAt(c.h); err != nil || n != c.n {
			t.Errorf("ParticipantsAt(%d) = %d, %v; want %d", c.h, n, err, c.n)
		}
	}
}

func epochOf(s *Snapshot) any {
	if s == nil {
		return nil
	}
	return s.Epoch()
}

// TestHistoryBeforeFirstActivation: below the first activation height no
// set is active, and ParticipantsAt reports the same error, not 0.
func TestHistoryBeforeFirstActivation(t *testing.T) {
	_, rs := validators(0, 3)
	h, err := NewHistory(mustSnapshot(t, 7, rs, 50))
	if err != nil {
		t.Fatal(err)
	}
	for _, height := range []uint64{0, 49} {
		if s, err := h.Active(height); !errors.Is(err, ErrNoActiveSet) || s != nil {
			t.Errorf("Active(%d) = %v, %v", height, s, err)
		}
		if _, err := h.ParticipantsAt(height); !errors.Is(err, ErrNoActiveSet) {
			t.Errorf("ParticipantsAt(%d): %v", height, err)
		}
	}
	if n, err := h.ParticipantsAt(50); err != nil || n != 3 {
		t.Fatalf("ParticipantsAt(50) = %d, %v", n, err)
	}
}

func TestNewHistoryRejects(t *testing.T) {
	_, a := validators(0, 4)
	_, b := validators(2, 6)
	_, c := validators(5, 9)
	sa, sb := mustSnapshot(t, 1, a, 100), mustSnapshot(t, 2, b, 200)
	cases := []struct {
		name  string
		snaps []*Snapshot
		want  error
	}{
		{"empty", nil, ErrEmptyHistory},
		{"nil first", []*Snapshot{nil, sb}, ErrNilSnapshot},
		{"nil later", []*Snapshot{sa, nil}, ErrNilSnapshot},
		{"equal activation", []*Snapshot{sa, mustSnapshot(t, 2, b, 100)}, ErrHistoryOrder},
		{"decreasing activation", []*Snapshot{sb, mustSnapshot(t, 3, c, 150)}, ErrHistoryOrder},
		{"equal epoch", []*Snapshot{sa, mustSnapshot(t, 1, b, 200)}, ErrHistoryOrder},
		{"decreasing epoch", []*Snapshot{sb, mustSnapshot(t, 1, c, 300)}, ErrHistoryOrder},
		{"out of order", []*Snapshot{sb, sa}, ErrHistoryOrder},
		{"same identities", []*Snapshot{sa, mustSnapshot(t, 2, a, 200)}, ErrEpochNotAdvancing},
	}
	for _, c := range cases {
		if h, err := NewHistory(c.snaps...); !errors.Is(err, c.want) || h != nil {
			t.Errorf("%s: history %v, err %v; want %v", c.name, h != nil, err, c.want)
		}
	}
}

// TestHistoryImmutable: the caller's slice does not alias the history.
func TestHistoryImmutable(t *testing.T) {
	_, a := validators(0, 4)
	_, b := validators(2, 6)
	snaps := []*Snapshot{mustSnapshot(t, 1, a, 100), mustSnapshot(t, 2, b, 200)}
	h, err := NewHistory(snaps...)
	if err != nil {
		t.Fatal(err)
	}
	snaps[1] = snaps[0]
	if s, _ := h.Active(200); s.Epoch() != 2 {
		t.Fatalf("history changed with its input slice: epoch %d", s.Epoch())
	}
}
