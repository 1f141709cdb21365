package cometbft

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRetainTrimsConsensusWAL: trimWAL keeps the head and the newest
// rotated chunk of CometBFT's WAL group and nothing else is touched.
func TestRetainTrimsConsensusWAL(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"wal", "wal.000", "wal.001", "wal.002", "wal.009", "wal.010", "wal.CORRUPTED", "other"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if walKeepChunks != 1 {
		t.Fatalf("walKeepChunks %d, want 1", walKeepChunks)
	}
	n, err := trimWAL(dir, walKeepChunks)
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
	if n, err := trimWAL(dir, walKeepChunks); err != nil || n != 0 {
		t.Fatalf("second trim removed %d, %v", n, err)
	}
}
