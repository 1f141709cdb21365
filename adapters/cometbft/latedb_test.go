package cometbft

import (
	"errors"
	"testing"
	"time"

	dbm "github.com/cometbft/cometbft-db"
)

// slowDB is an in-memory store whose Get waits for release.
type slowDB struct {
	dbm.DB
	entered, release chan struct{}
}

func (s slowDB) Get(k []byte) ([]byte, error) {
	close(s.entered)
	<-s.release
	return s.DB.Get(k)
}

// TestLateDBCloseWaitsForReads (issue 29): Node.Close's store close waits
// for a read in flight instead of sleeping past it, and a read, iterator
// or write after the close finds nothing or fails, never touching the
// closed store.
func TestLateDBCloseWaitsForReads(t *testing.T) {
	mem := dbm.NewMemDB()
	if err := mem.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	s := slowDB{DB: mem, entered: make(chan struct{}), release: make(chan struct{})}
	d := &lateDB{db: s}
	it, err := d.Iterator(nil, nil)
	if err != nil || !it.Valid() {
		t.Fatalf("iterator before close: %v", err)
	}
	b := d.NewBatch()
	got := make(chan []byte, 1)
	go func() {
		v, _ := d.Get([]byte("k"))
		got <- v
	}()
	<-s.entered
	closed := make(chan error, 1)
	go func() { closed <- (&lateDBs{dbs: []*lateDB{d}}).closeAll() }()
	select {
	case <-closed:
		t.Fatal("the store closed under a read in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(s.release)
	if v := <-got; string(v) != "v" {
		t.Fatalf("the read in flight got %q", v)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil { // CometBFT's own call: a no-op
		t.Fatal(err)
	}
	if v, err := d.Get([]byte("k")); v != nil || err != nil {
		t.Fatalf("Get after close: %q, %v", v, err)
	}
	if ok, err := d.Has([]byte("k")); ok || err != nil {
		t.Fatalf("Has after close: %v, %v", ok, err)
	}
	if it.Valid() || it.Key() != nil || it.Error() != nil || it.Close() != nil {
		t.Fatal("an iterator made before the close is not empty after it")
	}
	if it, err := d.ReverseIterator(nil, nil); err != nil || it.Valid() {
		t.Fatalf("iterator after close: %v", err)
	}
	if err := d.Set([]byte("k"), nil); !errors.Is(err, ErrStoreClosed) {
		t.Fatalf("Set after close: %v", err)
	}
	if err := b.Set([]byte("x"), []byte("y")); !errors.Is(err, ErrStoreClosed) {
		t.Fatalf("batch Set after close: %v", err)
	}
	if err := b.Write(); !errors.Is(err, ErrStoreClosed) {
		t.Fatalf("batch Write after close: %v", err)
	}
	if err := d.NewBatch().Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.closeNow(); err != nil {
		t.Fatal("a second close is a no-op")
	}
}
