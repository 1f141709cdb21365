package storetest

import (
	"slices"
	"testing"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
)

func tOpen(t *testing.T, open Opener) (store.Store, func() store.Store) {
	t.Helper()
	s, reopen := open(t)
	if s == nil {
		t.Fatal("open returned a nil store")
	}
	return s, reopen
}

func fixedJob(i int, st engine.Status, deadline uint64) engine.JobRecord {
	return engine.JobRecord{
		Job:    engine.Job{JobID: idPool[i], Submitter: addrPool[0], Kind: mru.Llm, CommitteeSize: 2, TimeoutBlocks: 5},
		Status: st, DeadlineBlock: deadline, Committee: []cip11.Address{addrPool[1], addrPool[2]},
	}
}

func fixedPending(i int, s uint64) engine.PendingSelectionV1 {
	return engine.PendingSelectionV1{Version: engine.PendingVersion, JobID: idPool[i], SubmittedAt: s,
		SelectionStateHeight: s, CommitteeSize: 2, SeedEpoch: 1, SeedView: 2}
}

func is(t *testing.T, what string, err, want error) {
	t.Helper()
	expect(t, what, err, want)
}

// allWrites performs one write of every kind and returns their errors.
func allWrites(s store.Store) map[string]error {
	return map[string]error{
		"Registrar.Register": s.Registrar().Register(state.Runner{Address: addrPool[5]}),
		"Registrar.Update":   s.Registrar().Update(state.Runner{Address: addrPool[0]}),
		"Jobs.Insert":        s.Jobs().Insert(fixedJob(7, engine.StatusAssigned, 3)),
		"Jobs.Update":        s.Jobs().Update(fixedJob(0, engine.StatusCompleted, 3)),
		"Pending.Put":        s.Pending().Put(fixedPending(6, 1)),
		"Pending.Delete":     s.Pending().Delete(fixedPending(1, 1)),
		"MRU.Put":            s.MRU().Put(addrPool[0], mru.Http, mru.Record{Runner: addrPool[1], SetAt: 1}),
	}
}

func testSentinels(t *testing.T, open Opener) {
	t.Run("ErrNoBatch", func(t *testing.T) {
		s, _ := tOpen(t, open)
		defer s.Close()
		for what, err := range allWrites(s) {
			is(t, what+" on an empty store", err, store.ErrNoBatch)
		}
		is(t, "Commit without Begin", s.Commit(), errAny)
		is(t, "Begin", s.Begin(1), nil)
		is(t, "Register", s.Registrar().Register(state.Runner{Address: addrPool[0]}), nil)
		is(t, "Insert", s.Jobs().Insert(fixedJob(0, engine.StatusPending, 0)), nil)
		is(t, "Put", s.Pending().Put(fixedPending(1, 1)), nil)
		is(t, "Commit", s.Commit(), nil)
		for what, err := range allWrites(s) {
			is(t, what+" after Commit", err, store.ErrNoBatch)
		}
		is(t, "Begin", s.Begin(2), nil)
		s.Discard()
		for what, err := range allWrites(s) {
			is(t, what+" after Discard", err, store.ErrNoBatch)
		}
		// Nothing of the refused writes is visible.
		if _, ok, _ := s.Jobs().Job(idPool[7]); ok {
			t.Fatal("a write refused with ErrNoBatch is visible")
		}
	})
	t.Run("ErrBatchOpen", func(t *testing.T) {
		s, _ := tOpen(t, open)
		defer s.Close()
		is(t, "Begin(1)", s.Begin(1), nil)
		is(t, "Begin(2) with 1 open", s.Begin(2), store.ErrBatchOpen)
		is(t, "Begin(1) with 1 open", s.Begin(1), store.ErrBatchOpen)
		is(t, "Commit", s.Commit(), nil)
		is(t, "Begin(2)", s.Begin(2), nil)
	})
	t.Run("ErrHeightOrder", func(t *testing.T) {
		s, _ := tOpen(t, open)
		defer s.Close()
		if _, ok, err := s.LastCommitted(); ok || err != nil {
			t.Fatalf("LastCommitted on an empty store: ok %v, err %v", ok, err)
		}
		is(t, "Begin(5)", s.Begin(5), nil)
		is(t, "Commit", s.Commit(), nil)
		if h, ok, err := s.LastCommitted(); h != 5 || !ok || err != nil {
			t.Fatalf("LastCommitted = %d, %v, %v; want 5, true, nil", h, ok, err)
		}
		is(t, "Begin(5) after 5", s.Begin(5), store.ErrHeightOrder)
		is(t, "Begin(4) after 5", s.Begin(4), store.ErrHeightOrder)
		is(t, "Begin(0) after 5", s.Begin(0), store.ErrHeightOrder)
		is(t, "Begin(7)", s.Begin(7), nil)
		s.Discard()
		is(t, "Begin(6) after a discarded 7", s.Begin(6), nil)
		is(t, "Commit", s.Commit(), nil)
		if h, _, _ := s.LastCommitted(); h != 6 {
			t.Fatalf("LastCommitted = %d, want 6", h)
		}
	})
	t.Run("HeightZero", func(t *testing.T) {
		s, _ := tOpen(t, open)
		defer s.Close()
		is(t, "Begin(0) on an empty store", s.Begin(0), nil)
		is(t, "Commit", s.Commit(), nil)
		if h, ok, _ := s.LastCommitted(); h != 0 || !ok {
			t.Fatalf("LastCommitted = %d, %v; want 0, true", h, ok)
		}
		is(t, "Begin(0) after 0", s.Begin(0), store.ErrHeightOrder)
	})
	t.Run("ErrPendingExists", func(t *testing.T) {
		s, _ := tOpen(t, open)
		defer s.Close()
		is(t, "Begin", s.Begin(1), nil)
		is(t, "Put", s.Pending().Put(fixedPending(0, 1)), nil)
		is(t, "second Put in the batch", s.Pending().Put(fixedPending(0, 0)), engine.ErrPendingExists)
		is(t, "Commit", s.Commit(), nil)
		is(t, "Begin", s.Begin(2), nil)
		is(t, "second Put after Commit", s.Pending().Put(fixedPending(0, 2)), engine.ErrPendingExists)
		is(t, "Delete", s.Pending().Delete(fixedPending(0, 1)), nil)
		is(t, "Put after Delete", s.Pending().Put(fixedPending(0, 2)), nil)
		if got, _, _ := s.Pending().Get(idPool[0]); got != fixedPending(0, 2) {
			t.Fatalf("Get = %+v", got)
		}
		is(t, "Delete of no live record", s.Pending().Delete(fixedPending(3, 2)), errAny)
	})
	t.Run("ErrDuplicateJob", func(t *testing.T) {
		s, _ := tOpen(t, open)
		defer s.Close()
		is(t, "Begin", s.Begin(1), nil)
		is(t, "Insert", s.Jobs().Insert(fixedJob(0, engine.StatusPending, 0)), nil)
		is(t, "Insert again", s.Jobs().Insert(fixedJob(0, engine.StatusAssigned, 4)), engine.ErrDuplicateJob)
		is(t, "Commit", s.Commit(), nil)
		is(t, "Begin", s.Begin(2), nil)
		is(t, "Insert after Commit", s.Jobs().Insert(fixedJob(0, engine.StatusAssigned, 4)), engine.ErrDuplicateJob)
		if r, _, _ := s.Jobs().Job(idPool[0]); r.Status != engine.StatusPending {
			t.Fatalf("a refused Insert changed the record: %+v", r)
		}
	})
	t.Run("ErrUnknownJob", func(t *testing.T) {
		s, _ := tOpen(t, open)
		defer s.Close()
		is(t, "Begin", s.Begin(1), nil)
		is(t, "Update of an absent job", s.Jobs().Update(fixedJob(0, engine.StatusAssigned, 4)), engine.ErrUnknownJob)
		if _, ok, _ := s.Jobs().Job(idPool[0]); ok {
			t.Fatal("a refused Update created the job")
		}
	})
	t.Run("ErrAlreadyRegistered", func(t *testing.T) {
		s, _ := tOpen(t, open)
		defer s.Close()
		is(t, "Begin", s.Begin(1), nil)
		is(t, "Register", s.Registrar().Register(state.Runner{Address: addrPool[0]}), nil)
		is(t, "Register again", s.Registrar().Register(state.Runner{Address: addrPool[0], Stake: cip11.U128From64(9)}), state.ErrAlreadyRegistered)
		is(t, "Commit", s.Commit(), nil)
		is(t, "Begin", s.Begin(2), nil)
		is(t, "Register after Commit", s.Registrar().Register(state.Runner{Address: addrPool[0]}), state.ErrAlreadyRegistered)
		v, err := s.Registry().At(2)
		is(t, "At(2)", err, nil)
		if got := v.ActiveRunners(); !slices.Equal(got, addrPool[:1]) {
			t.Fatalf("ActiveRunners = %x", got)
		}
	})
	t.Run("ErrNotRegistered", func(t *testing.T) {
		s, _ := tOpen(t, open)
		defer s.Close()
		is(t, "Begin", s.Begin(1), nil)
		is(t, "Update of an unregistered runner", s.Registrar().Update(state.Runner{Address: addrPool[0]}), state.ErrNotRegistered)
	})
	t.Run("ErrClosed", func(t *testing.T) {
		s, _ := tOpen(t, open)
		is(t, "Begin", s.Begin(1), nil)
		is(t, "Commit", s.Commit(), nil)
		is(t, "Close", s.Close(), nil)
		is(t, "Begin after Close", s.Begin(2), store.ErrClosed)
	})
}

// testDiscardRestores: after Discard every read is what it was after the
// last Commit, with writes of every kind in the discarded batch.
func testDiscardRestores(t *testing.T, open Opener) {
	s, _ := tOpen(t, open)
	defer s.Close()
	w := func(what string, err error) { t.Helper(); is(t, what, err, nil) }
	w("Begin", s.Begin(1))
	w("Register", s.Registrar().Register(state.Runner{Address: addrPool[0], LastHeartbeat: 1}))
	w("Register", s.Registrar().Register(state.Runner{Address: addrPool[1], LastHeartbeat: 1}))
	w("Insert", s.Jobs().Insert(fixedJob(0, engine.StatusAssigned, 4)))
	w("Insert", s.Jobs().Insert(fixedJob(1, engine.StatusPending, 0)))
	w("Put", s.Pending().Put(fixedPending(1, 1)))
	w("MRU.Put", s.MRU().Put(addrPool[0], mru.Llm, mru.Record{Runner: addrPool[1], SetAt: 1}))
	w("Commit", s.Commit())

	snap := func() string {
		var out []any
		for _, id := range idPool {
			r, ok, err := s.Jobs().Job(id)
			p, pok, perr := s.Pending().Get(id)
			out = append(out, string(r.Encode()), ok, err, p, pok, perr)
		}
		for _, a := range addrPool {
			r, ok, err := s.Registrar().Latest(a)
			out = append(out, r, ok, err)
		}
		for k := range 6 {
			r, ok, err := s.MRU().Get(addrPool[0], mru.JobKind(k))
			out = append(out, r, ok, err)
		}
		live, err := s.LiveJobs()
		recs, err2 := s.MRURecords()
		due, err3 := s.Jobs().DueBefore(100)
		pd, err4 := s.Pending().DueBefore(100, 0)
		v, err5 := s.Registry().At(1)
		out = append(out, live, err, recs, err2, due, err3, pd, err4, err5)
		if v != nil {
			out = append(out, v.ActiveRunners())
			for _, a := range addrPool {
				r, ok := v.Runner(a)
				out = append(out, r, ok)
			}
		}
		return fmtAny(out)
	}
	before := snap()
	w("Begin", s.Begin(2))
	w("Register", s.Registrar().Register(state.Runner{Address: addrPool[2]}))
	w("Update", s.Registrar().Update(state.Runner{Address: addrPool[0], Health: state.Paused, LastHeartbeat: 2}))
	w("Insert", s.Jobs().Insert(fixedJob(2, engine.StatusAssigned, 1)))
	w("Update", s.Jobs().Update(fixedJob(0, engine.StatusCompleted, 4)))
	w("Update", s.Jobs().Update(fixedJob(1, engine.StatusAssigned, 2)))
	w("Delete", s.Pending().Delete(fixedPending(1, 1)))
	w("Put", s.Pending().Put(fixedPending(3, 2)))
	w("MRU.Put", s.MRU().Put(addrPool[0], mru.Llm, mru.Record{Runner: addrPool[2], SetAt: 2}))
	w("MRU.Put", s.MRU().Put(addrPool[0], mru.Mcp, mru.Record{Runner: addrPool[2], SetAt: 2}))
	if during := snap(); during == before {
		t.Fatal("the batch's writes are not visible inside the batch")
	}
	s.Discard()
	if after := snap(); after != before {
		t.Fatalf("Discard did not restore the committed state:\nbefore %s\nafter  %s", before, after)
	}
	if h, _, _ := s.LastCommitted(); h != 1 {
		t.Fatalf("LastCommitted = %d after Discard, want 1", h)
	}
}

// testViewImmutable: a view of a committed height never changes under
// later writes, commits and discards.
func testViewImmutable(t *testing.T, open Opener) {
	s, _ := tOpen(t, open)
	defer s.Close()
	w := func(what string, err error) { t.Helper(); is(t, what, err, nil) }
	w("Begin", s.Begin(1))
	w("Register", s.Registrar().Register(state.Runner{Address: addrPool[0], LastHeartbeat: 1}))
	w("Register", s.Registrar().Register(state.Runner{Address: addrPool[1], LastHeartbeat: 1}))
	w("Commit", s.Commit())
	v1, err := s.Registry().At(1)
	w("At(1)", err)
	active := v1.ActiveRunners()
	want := regState{order: slices.Clone(addrPool[:2]), recs: map[cip11.Address]state.Runner{
		addrPool[0]: {Address: addrPool[0], LastHeartbeat: 1}, addrPool[1]: {Address: addrPool[1], LastHeartbeat: 1}}}
	var cfg *state.ReputationConfig
	check := func(when string) {
		t.Helper()
		checkRegView(t, "At(1) "+when, v1, 1, want, &cfg)
		if !slices.Equal(active, want.order) {
			t.Fatalf("the ActiveRunners slice of At(1) changed %s: %x", when, active)
		}
		v, err := s.Registry().At(1)
		w("At(1) again", err)
		checkRegView(t, "a new At(1) "+when, v, 1, want, &cfg)
	}
	check("at once")
	w("Begin", s.Begin(2))
	w("Register", s.Registrar().Register(state.Runner{Address: addrPool[2]}))
	w("Update", s.Registrar().Update(state.Runner{Address: addrPool[0], Health: state.Unhealthy, LastHeartbeat: 2}))
	check("under the next batch's writes")
	v2, err := s.Registry().At(2)
	w("At(2) in the batch", err)
	if len(v2.ActiveRunners()) != 3 {
		t.Fatalf("At(batch height) does not show the batch's registration: %x", v2.ActiveRunners())
	}
	if r, _ := v2.Runner(addrPool[0]); r.Health != state.Unhealthy {
		t.Fatalf("At(batch height) does not show the batch's update: %+v", r)
	}
	s.Discard()
	check("after Discard")
	w("Begin", s.Begin(3))
	w("Register", s.Registrar().Register(state.Runner{Address: addrPool[3]}))
	w("Update", s.Registrar().Update(state.Runner{Address: addrPool[1], Health: state.Paused, LastHeartbeat: 3}))
	w("Commit", s.Commit())
	check("after a later Commit")
	v3, err := s.Registry().At(3)
	w("At(3)", err)
	if got := v3.ActiveRunners(); !slices.Equal(got, []cip11.Address{addrPool[0], addrPool[1], addrPool[3]}) {
		t.Fatalf("At(3).ActiveRunners = %x", got)
	}
	v2, err = s.Registry().At(2) // a height with no block of its own: the end state of 1
	w("At(2)", err)
	checkRegView(t, "At(2)", v2, 2, want, &cfg)
}

// testReopen: a reopened store holds exactly the last commit.
func testReopen(t *testing.T, open Opener) {
	s, reopen := tOpen(t, open)
	if reopen == nil {
		_ = s.Close()
		t.Skip("the store has no persistence")
	}
	w := func(what string, err error) { t.Helper(); is(t, what, err, nil) }
	w("Begin", s.Begin(3))
	w("Register", s.Registrar().Register(state.Runner{Address: addrPool[0], LastHeartbeat: 3}))
	w("Insert", s.Jobs().Insert(fixedJob(0, engine.StatusAssigned, 4)))
	w("Put", s.Pending().Put(fixedPending(1, 3)))
	w("MRU.Put", s.MRU().Put(addrPool[0], mru.Llm, mru.Record{Runner: addrPool[1], SetAt: 3}))
	w("Commit", s.Commit())
	w("Begin", s.Begin(4))
	w("Register", s.Registrar().Register(state.Runner{Address: addrPool[1]}))
	w("Insert", s.Jobs().Insert(fixedJob(2, engine.StatusAssigned, 4)))
	w("Close with a batch open", s.Close())
	s = reopen()
	defer s.Close()
	if h, ok, err := s.LastCommitted(); h != 3 || !ok || err != nil {
		t.Fatalf("LastCommitted after reopen = %d, %v, %v; want 3, true, nil", h, ok, err)
	}
	is(t, "Begin(3) after reopen", s.Begin(3), store.ErrHeightOrder)
	if _, ok, _ := s.Jobs().Job(idPool[2]); ok {
		t.Fatal("an uncommitted job survived reopen")
	}
	if _, ok, _ := s.Jobs().Job(idPool[0]); !ok {
		t.Fatal("a committed job is lost on reopen")
	}
	if p, ok, _ := s.Pending().Get(idPool[1]); !ok || p != fixedPending(1, 3) {
		t.Fatalf("pending after reopen: %+v, %v", p, ok)
	}
	if r, ok, _ := s.MRU().Get(addrPool[0], mru.Llm); !ok || r.Runner != addrPool[1] {
		t.Fatalf("mru after reopen: %+v, %v", r, ok)
	}
	v, err := s.Registry().At(3)
	w("At(3)", err)
	if got := v.ActiveRunners(); !slices.Equal(got, addrPool[:1]) {
		t.Fatalf("ActiveRunners after reopen = %x", got)
	}
	if _, ok, _ := s.Registrar().Latest(addrPool[1]); ok {
		t.Fatal("an uncommitted registration survived reopen")
	}
}
