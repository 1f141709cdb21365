package engine

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/selection"
)

func sampleRecord() JobRecord {
	r := JobRecord{Job: job(7, 3), SubmittedAt: 9, Status: StatusAssigned, Mode: seed.ModeDelayed,
		Branch: selection.BranchFullSet, AssignmentHeight: 14, DeadlineBlock: 64, Reselections: 1, NextDraw: 4,
		Committee: []cip11.Address{addr(1), addr(2), addr(3)}, Delivered: []cip11.Address{addr(2)}, TimedOut: []cip11.Address{addr(9)}}
	r.Seed[0] = 0x5e
	return r
}

// TestJobRecordRoundTrip: decode(encode(r)) = r and re-encodes to the same
// bytes; every truncation and a trailing byte are ErrJobRecord.
func TestJobRecordRoundTrip(t *testing.T) {
	b := sampleRecord().Encode()
	r, err := DecodeJobRecord(b)
	if err != nil || !bytes.Equal(r.Encode(), b) {
		t.Fatalf("round trip: %v", err)
	}
	for n := range len(b) {
		if _, err := DecodeJobRecord(b[:n]); !errors.Is(err, ErrJobRecord) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	if _, err := DecodeJobRecord(append(bytes.Clone(b), 0)); !errors.Is(err, ErrJobRecord) {
		t.Fatalf("trailing byte: %v", err)
	}
	bad := bytes.Clone(b)
	bad[0] = 2
	if _, err := DecodeJobRecord(bad); !errors.Is(err, ErrJobRecord) {
		t.Fatalf("version 2: %v", err)
	}
}

// FuzzDecodeJobRecord: no panic; anything accepted re-encodes identically.
func FuzzDecodeJobRecord(f *testing.F) {
	f.Add(sampleRecord().Encode())
	f.Add(JobRecord{Status: StatusPending}.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeJobRecord(b)
		if err == nil && !bytes.Equal(r.Encode(), b) {
			t.Fatal("accepted a non-canonical record")
		}
	})
}

// TestMemJobStoreDeadlineIndex: only assigned jobs are due, ascending by
// (deadline, job_id), and an update moves the entry.
func TestMemJobStoreDeadlineIndex(t *testing.T) {
	m := NewMemJobStore()
	mk := func(id byte, st Status, deadline uint64) JobRecord {
		return JobRecord{Job: job(id, 1), Status: st, DeadlineBlock: deadline}
	}
	for _, r := range []JobRecord{mk(3, StatusAssigned, 10), mk(1, StatusAssigned, 10), mk(2, StatusAssigned, 5), mk(4, StatusPending, 1)} {
		if err := m.Insert(r); err != nil {
			t.Fatal(err)
		}
	}
	ids, _ := m.DueBefore(11)
	if len(ids) != 3 || ids[0][0] != 2 || ids[1][0] != 1 || ids[2][0] != 3 {
		t.Fatalf("due %v", ids)
	}
	if err := m.Update(mk(2, StatusCompleted, 5)); err != nil {
		t.Fatal(err)
	}
	if ids, _ = m.DueBefore(11); len(ids) != 2 {
		t.Fatalf("completed job still due: %v", ids)
	}
	if err := m.Update(mk(9, StatusAssigned, 1)); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("update of unknown job: %v", err)
	}
	if err := m.Insert(mk(1, StatusAssigned, 1)); !errors.Is(err, ErrDuplicateJob) {
		t.Fatalf("duplicate insert: %v", err)
	}
}
