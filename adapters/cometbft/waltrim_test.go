package cometbft

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRetainTrimsConsensusWAL: trimWAL keeps the head and the newest
// keep rotated chunks of CometBFT's WAL group and nothing else is touched.
func TestRetainTrimsConsensusWAL(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"wal", "wal.000", "wal.001", "wal.002", "wal.009", "wal.010", "wal.CORRUPTED", "other"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := trimWAL(dir, 1)
	if err != nil || n != 4 {
		t.Fatalf("removed %d, %v", n, err)
	}
	ents, _ := os.ReadDir(dir)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if want := []string{"other", "wal", "wal.010", "wal.CORRUPTED"}; !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
	if n, err := trimWAL(dir, 1); err != nil || n != 0 {
		t.Fatalf("second trim removed %d, %v", n, err)
	}
	if n, err := trimWAL(dir, 0); err != nil || n != 1 {
		t.Fatalf("trim to the head removed %d, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "wal")); err != nil {
		t.Fatal(err)
	}
}

// TestRetainWALHeadSettles: the trim keeps the newest rotated chunk until
// the head has been the same file across walSettled commits after the
// first — the end markers of those heights are in it — and again from a
// rotation (the head renamed to a chunk, a new head) on; a missing head
// keeps the chunk.
func TestRetainWALHeadSettles(t *testing.T) {
	dir := t.TempDir()
	head := filepath.Join(dir, "wal")
	var w walHead
	w.observe(dir)
	if w.keep() != 1 {
		t.Fatal("no head: want the newest chunk kept")
	}
	if err := os.WriteFile(head, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range walSettled + 1 {
		if w.keep() != 1 {
			t.Fatalf("after %d commits on one head: keep %d, want 1", i, w.keep())
		}
		w.observe(dir)
	}
	if w.keep() != 0 {
		t.Fatalf("after %d commits on one head: keep %d, want 0", walSettled+1, w.keep())
	}
	if err := os.Rename(head, filepath.Join(dir, "wal.000")); err != nil { // the group rotates
		t.Fatal(err)
	}
	if err := os.WriteFile(head, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w.observe(dir)
	if w.keep() != 1 {
		t.Fatal("just after a rotation: want the newest chunk kept")
	}
}
