package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cip11/cip11/adapters/pebble"
)

// TestRetainImportSnapshot: ImportSnapshot rebuilds a validator
// snapshot's state store in a new directory at the snapshot's height,
// returns its metadata; it refuses another chain's header (ErrSnapshot),
// an altered or missing chunk (ErrSnapshotChunk, naming the file; nothing
// written), a non-empty target (pebble.ErrImportTarget) and a meta.json
// that is not its directory's.
func TestRetainImportSnapshot(t *testing.T) {
	d := testDevnet(t, 4, nil)
	dir := t.TempDir()
	v := snapValidator(t, d, dir, 32, 0)
	produce(t, v, 64, 1)
	hdr, app := v.hdr, v.LastBlock().Out.StateDigest
	v.Close()
	root := filepath.Join(dir, "snapshots")
	hs, err := SnapshotHeights(root)
	if err != nil || len(hs) != 2 || hs[0] != 32 || hs[1] != 64 {
		t.Fatalf("SnapshotHeights: %v %v", hs, err)
	}
	if _, err := SnapshotHeights(filepath.Join(dir, "nothing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("SnapshotHeights of a missing directory: %v", err)
	}
	snap := SnapshotDir(root, 64)
	store := filepath.Join(t.TempDir(), "store")
	got, err := ImportSnapshot(snap, store, hdr)
	if err != nil {
		t.Fatal(err)
	}
	if got.Height != 64 || got.AppHash != app || got.Base >= 64 {
		t.Fatalf("imported %+v, want height 64 digest %s", got, app)
	}
	ps, err := pebble.Open(store, pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h, ok, err := ps.LastCommitted(); h != 64 || !ok || err != nil {
		t.Fatalf("the imported store is at %d %v %v", h, ok, err)
	}
	ps.Close()
	if _, err := ImportSnapshot(snap, store, hdr); !errors.Is(err, pebble.ErrImportTarget) {
		t.Fatalf("import into a store: %v", err)
	}

	other := hdr
	other.ChainID += "-other"
	fresh := filepath.Join(t.TempDir(), "store")
	if _, err := ImportSnapshot(snap, fresh, other); !errors.Is(err, ErrSnapshot) || !strings.Contains(err.Error(), "another chain") {
		t.Fatalf("another chain's header: %v", err)
	}
	if _, err := ImportSnapshot(SnapshotDir(root, 32), fresh, hdr); err != nil {
		t.Fatalf("the snapshot at 32: %v", err)
	}

	chunk := filepath.Join(snap, chunkName(1))
	b, err := os.ReadFile(chunk)
	if err != nil {
		t.Fatal(err)
	}
	b[0] ^= 1
	if err := os.WriteFile(chunk, b, 0o644); err != nil {
		t.Fatal(err)
	}
	fresh = filepath.Join(t.TempDir(), "store")
	if _, err := ImportSnapshot(snap, fresh, hdr); !errors.Is(err, ErrSnapshotChunk) || !strings.Contains(err.Error(), chunk) {
		t.Fatalf("altered chunk: %v", err)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Fatalf("the refused import wrote %s: %v", fresh, err)
	}
	os.Remove(chunk)
	if _, err := ImportSnapshot(snap, fresh, hdr); !errors.Is(err, ErrSnapshotChunk) || !strings.Contains(err.Error(), chunk) {
		t.Fatalf("missing chunk: %v", err)
	}
	// the meta.json of 32 in the directory of 64
	mb, _ := os.ReadFile(filepath.Join(SnapshotDir(root, 32), "meta.json"))
	os.WriteFile(filepath.Join(snap, "meta.json"), mb, 0o644)
	if _, err := ImportSnapshot(snap, fresh, hdr); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("meta.json of another height: %v", err)
	}
	os.WriteFile(filepath.Join(snap, "meta.json"), []byte("{"), 0o644)
	if _, err := ImportSnapshot(snap, fresh, hdr); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("broken meta.json: %v", err)
	}
}
