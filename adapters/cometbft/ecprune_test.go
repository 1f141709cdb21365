package cometbft

import (
	"errors"
	"fmt"
	"testing"

	dbm "github.com/cometbft/cometbft-db"
)

// TestRetainPrunesExtendedCommits: pruneExtCommits deletes the extended
// commits below the base and nothing else — not those at or above it,
// not the other keys (another prefix, a key of the EC range that is no
// height) — and refuses a key layout it does not know.
func TestRetainPrunesExtendedCommits(t *testing.T) {
	db := dbm.NewMemDB()
	for h := 1; h <= 20; h++ {
		for _, p := range []string{"EC", "C", "H", "SC"} {
			if err := db.Set(fmt.Appendf(nil, "%s:%d", p, h), []byte{1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = db.Set([]byte("EC:x"), []byte{1})
	_ = db.Set([]byte("version"), []byte("v1"))
	n, err := pruneExtCommits(db, 12)
	if err != nil || n != 11 {
		t.Fatalf("pruned %d (%v), want 11", n, err)
	}
	for h := 1; h <= 20; h++ {
		ok, _ := db.Has(fmt.Appendf(nil, "EC:%d", h))
		if ok != (h >= 12) {
			t.Fatalf("EC:%d present %v after pruning below 12", h, ok)
		}
		for _, p := range []string{"C", "H", "SC"} {
			if ok, _ := db.Has(fmt.Appendf(nil, "%s:%d", p, h)); !ok {
				t.Fatalf("%s:%d deleted", p, h)
			}
		}
	}
	if ok, _ := db.Has([]byte("EC:x")); !ok {
		t.Fatal("EC:x deleted")
	}
	if n, err := pruneExtCommits(db, 12); n != 0 || err != nil {
		t.Fatalf("again: %d, %v", n, err)
	}
	_ = db.Set([]byte("version"), []byte("v2"))
	if _, err := pruneExtCommits(db, 20); !errors.Is(err, ErrKeyLayout) {
		t.Fatalf("v2 layout: %v, want ErrKeyLayout", err)
	}
}
