package pebble

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	pdb "github.com/cockroachdb/pebble/v2"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
	"github.com/cip11/cip11/store/storetest"
)

func addr(i int) cip11.Address { var a cip11.Address; a[0], a[19] = byte(i>>8), byte(i); return a }

func mustOpen(t testing.TB, dir string, o Options) *Store {
	t.Helper()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestContract(t *testing.T) {
	storetest.TestStore(t, func(t *testing.T) (store.Store, func() store.Store) {
		dir := t.TempDir()
		s := mustOpen(t, dir, Options{Sync: SyncNever})
		return s, func() store.Store { return mustOpen(t, dir, Options{Sync: SyncNever}) }
	})
}

func TestReopenDiscardBatchReads(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{Sync: SyncNever})
	if _, ok, err := s.LastCommitted(); ok || err != nil {
		t.Fatal("fresh store reports a height", err)
	}
	must(t, s.Register(5, addr(1)))
	must(t, s.Begin(6))
	must(t, s.Registrar().Register(state.Runner{Address: addr(2)}))
	if _, ok, _ := s.Registrar().Latest(addr(2)); !ok {
		t.Fatal("batch read misses batch write")
	}
	s.Discard()
	if _, ok, _ := s.Registrar().Latest(addr(2)); ok {
		t.Fatal("discard kept a write")
	}
	if err := s.Registrar().Register(state.Runner{Address: addr(3)}); !errors.Is(err, store.ErrNoBatch) {
		t.Fatal(err)
	}
	must(t, s.Close())
	s = mustOpen(t, dir, Options{Sync: SyncNever})
	defer s.Close()
	if h, ok, err := s.LastCommitted(); h != 5 || !ok || err != nil {
		t.Fatal(h, ok, err)
	}
	v, err := s.At(5)
	must(t, err)
	if got := v.ActiveRunners(); len(got) != 1 || got[0] != addr(1) {
		t.Fatal(got)
	}
	if err := s.Begin(5); !errors.Is(err, store.ErrHeightOrder) {
		t.Fatal(err)
	}
}

// Register commits block h registering a.
func (s *Store) Register(h uint64, a cip11.Address) error {
	if err := s.Begin(h); err != nil {
		return err
	}
	if err := s.Registrar().Register(state.Runner{Address: a, LastHeartbeat: h}); err != nil {
		return err
	}
	return s.Commit()
}

func TestHistoryPruneImmutable(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{Sync: SyncNever, Retention: 10})
	defer s.Close()
	must(t, s.Register(1, addr(1)))
	must(t, s.Register(2, addr(2)))
	v2, err := s.At(2)
	must(t, err)
	for h := uint64(3); h <= 30; h++ {
		must(t, s.Begin(h))
		must(t, s.Registrar().Update(state.Runner{Address: addr(1), LastHeartbeat: h}))
		must(t, s.Commit())
	}
	// v2 was taken before the later writes and the pruning: unchanged.
	if r, ok := v2.Runner(addr(1)); !ok || r.LastHeartbeat != 1 {
		t.Fatal(r, ok, v2.Err())
	}
	var n int
	for r := range v2.ByAddress() {
		if r.LastHeartbeat != uint64(n+1) {
			t.Fatal(r)
		}
		n++
	}
	if n != 2 || v2.Err() != nil {
		t.Fatal(n, v2.Err())
	}
	for _, h := range []uint64{20, 25, 30} {
		v, err := s.At(h)
		must(t, err)
		if r, ok := v.Runner(addr(1)); !ok || r.LastHeartbeat != h {
			t.Fatal(h, r)
		}
		if r, ok := v.Runner(addr(2)); !ok || r.LastHeartbeat != 2 {
			t.Fatal(h, r)
		}
	}
	if _, err := s.At(19); !errors.Is(err, state.ErrUnknownHeight) {
		t.Fatal(err)
	}
	if _, err := s.At(31); !errors.Is(err, state.ErrUnknownHeight) {
		t.Fatal(err)
	}
	// Pruned versions are gone from the database.
	cnt := 0
	must(t, scan(s.db, runnerPrefix(addr(1)), prefixEnd(runnerPrefix(addr(1))), func(_, _ []byte) (bool, error) { cnt++; return true, nil }))
	if cnt != 11 { // versions 20..30
		t.Fatal("versions kept:", cnt)
	}
	// A view at the batch height shows the batch; later batch writes do not change it.
	must(t, s.Begin(31))
	must(t, s.Registrar().Update(state.Runner{Address: addr(2), LastHeartbeat: 31}))
	vb, err := s.At(31)
	must(t, err)
	must(t, s.Registrar().Update(state.Runner{Address: addr(2), LastHeartbeat: 99}))
	if r, _ := vb.Runner(addr(2)); r.LastHeartbeat != 31 {
		t.Fatal(r)
	}
	var hb []uint64
	for r := range vb.ByAddress() {
		hb = append(hb, r.LastHeartbeat)
	}
	if len(hb) != 2 || hb[0] != 30 || hb[1] != 31 {
		t.Fatal(hb)
	}
}

func TestNotAStoreNewerFormat(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "x"), []byte("hi"), 0o600))
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrNotAStore) {
		t.Fatal(err)
	}
	raw := func(k, v []byte) string {
		d := t.TempDir()
		db, err := pdb.Open(d, &pdb.Options{Logger: quietLogger{}})
		must(t, err)
		must(t, db.Set(k, v, pdb.Sync))
		must(t, db.Close())
		return d
	}
	if _, err := Open(raw([]byte("other"), []byte("x")), Options{}); !errors.Is(err, ErrNotAStore) {
		t.Fatal(err)
	}
	if _, err := Open(raw([]byte(keyFormat), be4(FormatVersion+1)), Options{}); !errors.Is(err, ErrNewerFormat) {
		t.Fatal(err)
	}
}

// TestCorruption: a stored value that fails to decode (a pending record,
// a runner's current record and a history version; an MRU record and a
// due-round key, which Open loads into memory) and a flipped byte in the
// height marker are ErrCorrupt, never a panic.
func TestCorruption(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{Sync: SyncNever})
	must(t, s.Register(1, addr(1)))
	must(t, s.Register(2, addr(2)))
	var id [32]byte
	id[0] = 7
	pk := engine.PendingByJobKey(id)
	mk := mru.Key(addr(1), 0)
	for _, k := range [][]byte{pk[:], mk[:], runnerKey(addr(1), 1), curKey(addr(1))} {
		must(t, s.db.Set(k, []byte{1, 2, 3}, pdb.Sync))
	}
	if _, _, err := s.Pending().Get(id); !errors.Is(err, ErrCorrupt) {
		t.Fatal(err)
	}
	// A historical view reads the history versions from disk.
	v, err := s.At(1)
	must(t, err)
	if _, ok := v.Runner(addr(1)); ok || !errors.Is(v.Err(), ErrCorrupt) {
		t.Fatalf("view 1: Runner: %v", v.Err())
	}
	v, err = s.At(1)
	must(t, err)
	for range v.ByAddress() {
	}
	if !errors.Is(v.Err(), ErrCorrupt) {
		t.Fatalf("view 1: ByAddress: %v", v.Err())
	}
	// The current records, the mru_key records and the due-round index
	// are loaded (and checked) by Open.
	must(t, s.Close())
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with a corrupt current record: %v", err)
	}
	editRaw(t, dir, func(db *pdb.DB) { must(t, db.Delete(curKey(addr(1)), pdb.Sync)) })
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open with a missing current record: %v", err)
	}
	db, err := pdb.Open(dir, &pdb.Options{Logger: quietLogger{}})
	must(t, err)
	m, c, err := db.Get([]byte(keyHeight))
	must(t, err)
	bad := bytes.Clone(m)
	must(t, c.Close())
	for i := range bad {
		flipped := bytes.Clone(bad)
		flipped[i] ^= 0x10
		must(t, db.Set([]byte(keyHeight), flipped, pdb.Sync))
		must(t, db.Close())
		if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("height marker byte %d flipped: %v", i, err)
		}
		db, err = pdb.Open(dir, &pdb.Options{Logger: quietLogger{}})
		must(t, err)
	}
	must(t, db.Close())
}

// TestCorruptMirrorsAtOpen: the mru_key records and the due-round index,
// which Open loads into memory, are checked there: an MRU record that does
// not decode and a due-round key of the wrong length are ErrCorrupt.
func TestCorruptMirrorsAtOpen(t *testing.T) {
	for name, c := range map[string]struct {
		k, v []byte
		also error
	}{
		"mru record": {func() []byte { k := mru.Key(addr(1), 0); return k[:] }(), []byte{1, 2, 3}, mru.ErrRecordLength},
		"due key":    {append([]byte(pendingDueDomain), 1, 2, 3), nil, nil},
	} {
		dir := t.TempDir()
		s := mustOpen(t, dir, Options{Sync: SyncNever})
		must(t, s.Register(1, addr(1)))
		must(t, s.Close())
		editRaw(t, dir, func(db *pdb.DB) { must(t, db.Set(c.k, c.v, pdb.Sync)) })
		_, err := Open(dir, Options{})
		if !errors.Is(err, ErrCorrupt) || (c.also != nil && !errors.Is(err, c.also)) {
			t.Errorf("%s: Open: %v, want ErrCorrupt", name, err)
		}
	}
}

// editRaw edits the pebble database in dir directly.
func editRaw(t *testing.T, dir string, edit func(db *pdb.DB)) {
	t.Helper()
	db, err := pdb.Open(dir, &pdb.Options{Logger: quietLogger{}})
	must(t, err)
	edit(db)
	must(t, db.Close())
}

func TestSpecKeys(t *testing.T) {
	s := mustOpen(t, t.TempDir(), Options{Sync: SyncNever})
	defer s.Close()
	r := engine.PendingSelectionV1{Version: 1, SubmittedAt: 4, SelectionStateHeight: 4, CommitteeSize: 3, SeedEpoch: 1, SeedView: 9}
	r.JobID[5] = 1
	must(t, s.Begin(4))
	must(t, s.Pending().Put(r))
	must(t, s.MRU().Put(addr(1), 1, mru.Record{Runner: addr(2), SetAt: 4}))
	must(t, s.Commit())
	pk := engine.PendingByJobKey(r.JobID)
	v, ok, err := get(s.db, pk[:])
	if !ok || err != nil || !bytes.Equal(v, r.Encode()) {
		t.Fatal("pending_by_job_key", ok, err)
	}
	if _, ok, _ := get(s.db, engine.PendingDueRoundKey(r)); !ok {
		t.Fatal("due-round key missing")
	}
	mk := mru.Key(addr(1), 1)
	want := mru.Record{Runner: addr(2), SetAt: 4}.Encode()
	if v, ok, _ := get(s.db, mk[:]); !ok || !bytes.Equal(v, want[:]) {
		t.Fatal("mru_key")
	}
	if got, err := s.Pending().DueAt(1, 9); err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	if got, err := s.Pending().DueBefore(1, 10); err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	if got, err := s.Pending().DueBefore(1, 9); err != nil || len(got) != 0 {
		t.Fatal(got, err)
	}
	if v, ok, _ := get(s.db, activeKey(0)); ok || v != nil {
		t.Fatal("no runner registered")
	}
}

func TestNilClosed(t *testing.T) {
	var s *Store
	if err := s.Begin(1); !errors.Is(err, store.ErrClosed) {
		t.Fatal(err)
	}
	if _, err := s.Registry().At(1); !errors.Is(err, store.ErrClosed) {
		t.Fatal(err)
	}
	s = mustOpen(t, t.TempDir(), Options{Sync: SyncNever})
	must(t, s.Register(1, addr(1)))
	v, err := s.At(1)
	must(t, err)
	must(t, s.Close())
	if _, ok := v.Runner(addr(1)); ok || !errors.Is(v.Err(), store.ErrClosed) {
		t.Fatal(v.Err())
	}
	if _, _, err := s.Jobs().Job([32]byte{}); !errors.Is(err, store.ErrClosed) {
		t.Fatal(err)
	}
}

// TestReputationConfigHistory: SetReputationConfig changes
// ReputationConfig_at(h) from its block on; views of earlier heights keep
// the old one, a discarded change is forgotten, and all of it survives a
// reopen.
func TestReputationConfigHistory(t *testing.T) {
	dir := t.TempDir()
	base := state.ReputationConfig{Normalizer: 7, WMinFloorX1e6: 3}
	s := mustOpen(t, dir, Options{Sync: SyncNever, ReputationConfig: &base})
	must(t, s.Register(1, addr(1)))
	next := state.ReputationConfig{Normalizer: 9, WMinFloorX1e6: 4}
	must(t, s.Begin(2))
	must(t, s.SetReputationConfig(state.ReputationConfig{Normalizer: 1}))
	s.Discard()
	must(t, s.Begin(2))
	must(t, s.SetReputationConfig(next))
	if v, err := s.At(2); err != nil || v.ReputationConfig() != next {
		t.Fatalf("batch view: %v %+v", err, v)
	}
	must(t, s.Commit())
	must(t, s.Register(3, addr(2)))
	check := func(s *Store) {
		t.Helper()
		for h, want := range map[uint64]state.ReputationConfig{1: base, 2: next, 3: next} {
			v, err := s.At(h)
			if err != nil || v.ReputationConfig() != want {
				t.Fatalf("At(%d): %v, config %+v, want %+v", h, err, v.ReputationConfig(), want)
			}
		}
	}
	check(s)
	must(t, s.Close())
	s = mustOpen(t, dir, Options{Sync: SyncNever})
	defer s.Close()
	check(s)
}

// TestBlockIndexWrites: the live and deadline index keys a block writes
// are their final state (a job assigned, re-assigned and finished in one
// block leaves no index key), they survive a reopen, and Discard restores
// the in-memory indexes.
func TestBlockIndexWrites(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{Sync: SyncNever})
	rec := func(id byte, st engine.Status, deadline uint64) engine.JobRecord {
		r := engine.JobRecord{Status: st, DeadlineBlock: deadline}
		r.JobID[0] = id
		return r
	}
	must(t, s.Begin(1))
	must(t, s.Jobs().Insert(rec(1, engine.StatusAssigned, 10)))
	must(t, s.Jobs().Update(rec(1, engine.StatusAssigned, 20)))
	must(t, s.Jobs().Update(rec(1, engine.StatusCompleted, 0)))
	must(t, s.Jobs().Insert(rec(2, engine.StatusPending, 0)))
	must(t, s.Jobs().Update(rec(2, engine.StatusAssigned, 30)))
	must(t, s.Commit())
	check := func(s *Store, live int, due int) {
		t.Helper()
		l, err := s.LiveJobs()
		must(t, err)
		d, err := s.Jobs().DueBefore(1 << 40)
		must(t, err)
		if len(l) != live || len(d) != due {
			t.Fatalf("live %d, due %d; want %d, %d", len(l), len(d), live, due)
		}
	}
	check(s, 1, 1)
	must(t, s.Begin(2))
	must(t, s.Jobs().Update(rec(2, engine.StatusCompleted, 0)))
	must(t, s.Jobs().Insert(rec(3, engine.StatusAssigned, 40)))
	check(s, 1, 1)
	s.Discard()
	check(s, 1, 1)
	must(t, s.Close())
	s = mustOpen(t, dir, Options{Sync: SyncNever})
	defer s.Close()
	check(s, 1, 1)
	n := 0
	for _, p := range []string{pfxLive, pfxDeadline} {
		must(t, scan(s.db, []byte(p), prefixEnd([]byte(p)), func(_, _ []byte) (bool, error) { n++; return true, nil }))
	}
	if n != 2 {
		t.Fatalf("%d index keys on disk, want 2", n)
	}
	if r, ok, err := s.Jobs().Job(rec(1, 0, 0).JobID); err != nil || !ok || r.Status != engine.StatusCompleted {
		t.Fatal(r, ok, err)
	}
}

// quietLogger keeps pebble's informational lines out of the tests that
// open a database directly (the store's own logger is its health).
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)      {}
func (quietLogger) Errorf(f string, a ...any) { pdb.DefaultLogger.Errorf(f, a...) }
func (quietLogger) Fatalf(f string, a ...any) { pdb.DefaultLogger.Fatalf(f, a...) }
