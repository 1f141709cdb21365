package storetest

import (
	"slices"

	"pgregory.net/rapid"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
)

// harness drives one store and the model through one random sequence.
type harness struct {
	s      store.Store
	reopen func() store.Store
	m      *model
	cfg    *state.ReputationConfig

	views   []heldView    // views of settled heights, re-checked every step
	results []heldResults // earlier return values, which later writes must not change
}

type heldView struct {
	v      state.RegistryView
	h      uint64
	want   regState
	active []cip11.Address // ActiveRunners() when taken
}

type heldResults struct {
	what string
	got  any // the slice as returned
	want any // a private copy
}

const maxHeld = 6

func (h *harness) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"":               h.invariants,
		"begin":          h.begin,
		"commit":         h.commit,
		"discard":        h.discard,
		"reopen":         h.doReopen,
		"register":       h.register,
		"updateRunner":   h.updateRunner,
		"latest":         h.latest,
		"view":           h.view,
		"insertJob":      h.insertJob,
		"updateJob":      h.updateJob,
		"getJob":         h.getJob,
		"jobsDueBefore":  h.jobsDueBefore,
		"putPending":     h.putPending,
		"deletePending":  h.deletePending,
		"getPending":     h.getPending,
		"dueAt":          h.dueAt,
		"pendingBefore":  h.pendingBefore,
		"putMRU":         h.putMRU,
		"getMRU":         h.getMRU,
		"liveJobs":       h.liveJobs,
		"mruRecords":     h.mruRecords,
		"writeInBatch":   h.writeInBatch,
		"beginNextBlock": h.beginNext,
	}
}

// noBatch is the error every write must return outside a batch.
func (h *harness) writeErr(ifOpen error) error {
	if !h.m.open {
		return store.ErrNoBatch
	}
	return ifOpen
}

func (h *harness) invariants(t *rapid.T) {
	last, ok, err := h.s.LastCommitted()
	must(t, "LastCommitted", err)
	if ok != h.m.hasLast || ok && last != h.m.last {
		t.Fatalf("LastCommitted() = %d, %v; want %d, %v", last, ok, h.m.last, h.m.hasLast)
	}
	for _, hv := range h.views {
		checkRegView(t, "earlier view", hv.v, hv.h, hv.want, &h.cfg)
		if !slices.Equal(hv.active, hv.want.order) {
			t.Fatalf("ActiveRunners() slice of an earlier view at %d changed: %x, want %x", hv.h, hv.active, hv.want.order)
		}
	}
	for _, r := range h.results {
		if !equalAny(r.got, r.want) {
			t.Fatalf("an earlier %s result changed under later writes: %v, want %v", r.what, r.got, r.want)
		}
	}
}

func equalAny(a, b any) bool {
	switch a := a.(type) {
	case [][32]byte:
		return slices.Equal(a, b.([][32]byte))
	case []store.MRUEntry:
		return slices.Equal(a, b.([]store.MRUEntry))
	case []engine.PendingSelectionV1:
		return slices.Equal(a, b.([]engine.PendingSelectionV1))
	}
	panic("storetest: unknown held result")
}

func hold[S ~[]E, E any](h *harness, what string, got S) {
	h.results = append(h.results, heldResults{what, got, slices.Clone(got)})
	if len(h.results) > maxHeld {
		h.results = h.results[1:]
	}
}

func (h *harness) beginAt(t *rapid.T, height uint64) {
	var want error
	switch {
	case h.m.open:
		want = store.ErrBatchOpen
	case h.m.hasLast && height <= h.m.last:
		want = store.ErrHeightOrder
	}
	expect(t, "Begin", h.s.Begin(height), want)
	if want == nil {
		h.m.begin(height)
	}
}

func (h *harness) begin(t *rapid.T) {
	lo := uint64(0)
	if h.m.hasLast {
		lo = max(h.m.last, 2) - 2
	}
	h.beginAt(t, rapid.Uint64Range(lo, lo+5).Draw(t, "h"))
}

// beginNext opens the next block when none is open (the common case).
func (h *harness) beginNext(t *rapid.T) {
	if h.m.open {
		t.Skip("batch open")
	}
	next := uint64(0)
	if h.m.hasLast {
		next = h.m.last + rapid.Uint64Range(1, 2).Draw(t, "gap")
	}
	h.beginAt(t, next)
}

func (h *harness) commit(t *rapid.T) {
	if !h.m.open {
		expect(t, "Commit outside a batch", h.s.Commit(), errAny)
		return
	}
	must(t, "Commit", h.s.Commit())
	h.m.commit()
	h.checkAll(t)
}

func (h *harness) discard(t *rapid.T) {
	h.s.Discard()
	h.m.discard()
	h.checkAll(t)
}

func (h *harness) doReopen(t *rapid.T) {
	if h.reopen == nil {
		t.Skip("no persistence")
	}
	must(t, "Close", h.s.Close())
	h.s = h.reopen()
	h.m.discard() // an open batch does not survive
	h.views, h.results = nil, nil
	h.checkAll(t)
}

// writeInBatch keeps batches busy: a burst of valid writes.
func (h *harness) writeInBatch(t *rapid.T) {
	if !h.m.open {
		t.Skip("no batch")
	}
	for range rapid.IntRange(1, 4).Draw(t, "n") {
		switch rapid.IntRange(0, 3).Draw(t, "op") {
		case 0:
			h.register(t)
		case 1:
			h.insertJob(t)
		case 2:
			h.putPending(t)
		case 3:
			h.putMRU(t)
		}
	}
}

func (h *harness) register(t *rapid.T) {
	r := genRunner(t, rapid.SampledFrom(addrPool).Draw(t, "addr"))
	_, exists := h.m.cur.reg.recs[r.Address]
	want := h.writeErr(nil)
	if want == nil && exists {
		want = state.ErrAlreadyRegistered
	}
	expect(t, "Register", h.s.Registrar().Register(r), want)
	if want == nil {
		h.m.cur.reg.order = append(h.m.cur.reg.order, r.Address)
		h.m.cur.reg.recs[r.Address] = r
	}
}

func (h *harness) updateRunner(t *rapid.T) {
	r := genRunner(t, rapid.SampledFrom(addrPool).Draw(t, "addr"))
	_, exists := h.m.cur.reg.recs[r.Address]
	want := h.writeErr(nil)
	if want == nil && !exists {
		want = state.ErrNotRegistered
	}
	expect(t, "Registrar.Update", h.s.Registrar().Update(r), want)
	if want == nil {
		h.m.cur.reg.recs[r.Address] = r
	}
}

func (h *harness) latest(t *rapid.T) {
	a := rapid.SampledFrom(addrPool).Draw(t, "addr")
	h.checkLatest(t, a)
}

func (h *harness) checkLatest(t rapid.TB, a cip11.Address) {
	got, ok, err := h.s.Registrar().Latest(a)
	must(t, "Latest", err)
	w, wok := h.m.cur.reg.recs[a]
	if ok != wok || got != w {
		t.Fatalf("Latest(%x) = %+v, %v; want %+v, %v", a, got, ok, w, wok)
	}
}

func (h *harness) view(t *rapid.T) {
	top, ok := h.m.top()
	if !ok {
		t.Skip("no height yet")
	}
	at := rapid.Uint64Range(0, top).Draw(t, "at")
	h.checkView(t, at, true)
}

// checkView reads At(at) and compares it; hold keeps settled views for
// later immutability checks.
func (h *harness) checkView(t rapid.TB, at uint64, keep bool) {
	v, err := h.s.Registry().At(at)
	if at < h.m.required() && errorsIsUnknown(err) {
		return // beyond the retention window: allowed
	}
	must(t, "At", err)
	want := h.m.regAt(at)
	checkRegView(t, "At", v, at, want, &h.cfg)
	// Settled: at a committed height, or passed by a commit. A height in
	// the open batch's gap can still receive a block if the batch is
	// discarded (see the store.Store contract).
	settled := h.m.hasLast && at <= h.m.last
	if keep && settled {
		h.views = append(h.views, heldView{v, at, want.clone(), v.ActiveRunners()})
		if len(h.views) > maxHeld {
			h.views = h.views[1:]
		}
	}
}

func (h *harness) insertJob(t *rapid.T) {
	r := genJob(t, rapid.SampledFrom(idPool).Draw(t, "id"))
	_, exists := h.m.cur.jobs[r.JobID]
	want := h.writeErr(nil)
	if want == nil && exists {
		want = engine.ErrDuplicateJob
	}
	expect(t, "Insert", h.s.Jobs().Insert(r), want)
	if want == nil {
		h.m.cur.jobs[r.JobID] = cloneJob(r)
	}
	scribble(&r) // the store must not retain the caller's slices
}

func (h *harness) updateJob(t *rapid.T) {
	r := genJob(t, rapid.SampledFrom(idPool).Draw(t, "id"))
	_, exists := h.m.cur.jobs[r.JobID]
	want := h.writeErr(nil)
	if want == nil && !exists {
		want = engine.ErrUnknownJob
	}
	expect(t, "JobStore.Update", h.s.Jobs().Update(r), want)
	if want == nil {
		h.m.cur.jobs[r.JobID] = cloneJob(r)
	}
	scribble(&r)
}

// scribble overwrites r's slices in place.
func scribble(r *engine.JobRecord) {
	for _, list := range [][]cip11.Address{r.Committee, r.Delivered, r.TimedOut} {
		for i := range list {
			list[i] = cip11.Address{0xde, 0xad}
		}
	}
}

func (h *harness) getJob(t *rapid.T) {
	h.checkJob(t, rapid.SampledFrom(idPool).Draw(t, "id"))
}

func (h *harness) checkJob(t rapid.TB, id [32]byte) {
	got, ok, err := h.s.Jobs().Job(id)
	must(t, "Job", err)
	w, wok := h.m.cur.jobs[id]
	if ok != wok || ok && !sameJob(got, w) {
		t.Fatalf("Job(%x) = %+v, %v; want %+v, %v", id[:3], got, ok, w, wok)
	}
	if !ok {
		return
	}
	scribble(&got) // the caller may modify a returned record freely
	again, _, err := h.s.Jobs().Job(id)
	must(t, "Job", err)
	if !sameJob(again, w) {
		t.Fatalf("Job(%x) changed after the caller modified a returned record: %+v", id[:3], again)
	}
}

func (h *harness) jobsDueBefore(t *rapid.T) {
	h.checkJobsDue(t, rapid.Uint64Range(0, 12).Draw(t, "before"), true)
}

func (h *harness) checkJobsDue(t rapid.TB, before uint64, keep bool) {
	got, err := h.s.Jobs().DueBefore(before)
	must(t, "JobStore.DueBefore", err)
	if want := h.m.jobsDueBefore(before); !slices.Equal(got, want) {
		t.Fatalf("JobStore.DueBefore(%d) = %s, want %s", before, fmtIDs(got), fmtIDs(want))
	}
	if keep {
		hold(h, "JobStore.DueBefore", got)
	}
}

func (h *harness) putPending(t *rapid.T) {
	r := genPending(t, rapid.SampledFrom(idPool).Draw(t, "id"), h.m.h)
	_, exists := h.m.cur.pend[r.JobID]
	want := h.writeErr(nil)
	if want == nil && exists {
		want = engine.ErrPendingExists
	}
	expect(t, "Pending.Put", h.s.Pending().Put(r), want)
	if want == nil {
		h.m.cur.pend[r.JobID] = r
	}
}

func (h *harness) deletePending(t *rapid.T) {
	id := rapid.SampledFrom(idPool).Draw(t, "id")
	r, exists := h.m.cur.pend[id]
	if !exists {
		r = genPending(t, id, h.m.h)
	}
	want := h.writeErr(nil)
	if want == nil && !exists {
		want = errAny // no live record to consume (engine.ErrNoLivePending for Mem)
	}
	expect(t, "Pending.Delete", h.s.Pending().Delete(r), want)
	if want == nil {
		delete(h.m.cur.pend, id)
	}
}

func (h *harness) getPending(t *rapid.T) {
	h.checkPending(t, rapid.SampledFrom(idPool).Draw(t, "id"))
}

func (h *harness) checkPending(t rapid.TB, id [32]byte) {
	got, ok, err := h.s.Pending().Get(id)
	must(t, "Pending.Get", err)
	w, wok := h.m.cur.pend[id]
	if ok != wok || got != w {
		t.Fatalf("Pending.Get(%x) = %+v, %v; want %+v, %v", id[:3], got, ok, w, wok)
	}
}

func (h *harness) dueAt(t *rapid.T) {
	e, v := rapid.Uint64Range(0, 4).Draw(t, "epoch"), rapid.Uint64Range(0, 4).Draw(t, "view")
	h.checkDueAt(t, e, v, true)
}

func (h *harness) checkDueAt(t rapid.TB, e, v uint64, keep bool) {
	got, err := h.s.Pending().DueAt(e, v)
	must(t, "DueAt", err)
	if want := h.m.dueAt(e, v); !pendingEqual(got, want) {
		t.Fatalf("DueAt(%d, %d) = %+v, want %+v", e, v, got, want)
	}
	if keep {
		hold(h, "DueAt", got)
	}
}

func (h *harness) pendingBefore(t *rapid.T) {
	e, v := rapid.Uint64Range(0, 4).Draw(t, "epoch"), rapid.Uint64Range(0, 4).Draw(t, "view")
	h.checkPendingBefore(t, e, v, true)
}

func (h *harness) checkPendingBefore(t rapid.TB, e, v uint64, keep bool) {
	got, err := h.s.Pending().DueBefore(e, v)
	must(t, "Pending.DueBefore", err)
	if want := h.m.dueBefore(e, v); !pendingEqual(got, want) {
		t.Fatalf("Pending.DueBefore(%d, %d) = %+v, want %+v", e, v, got, want)
	}
	if keep {
		hold(h, "Pending.DueBefore", got)
	}
}

func (h *harness) putMRU(t *rapid.T) {
	k := mruK{rapid.SampledFrom(submitterPool).Draw(t, "submitter"), mru.JobKind(rapid.IntRange(0, 5).Draw(t, "kind"))}
	r := mru.Record{Runner: rapid.SampledFrom(addrPool).Draw(t, "runner"), SetAt: h.m.h}
	want := h.writeErr(nil)
	expect(t, "MRU.Put", h.s.MRU().Put(k.sub, k.kind, r), want)
	if want == nil {
		h.m.cur.mru[k] = r
	}
}

func (h *harness) getMRU(t *rapid.T) {
	k := mruK{rapid.SampledFrom(submitterPool).Draw(t, "submitter"), mru.JobKind(rapid.IntRange(0, 5).Draw(t, "kind"))}
	h.checkMRU(t, k)
}

func (h *harness) checkMRU(t rapid.TB, k mruK) {
	got, ok, err := h.s.MRU().Get(k.sub, k.kind)
	must(t, "MRU.Get", err)
	w, wok := h.m.cur.mru[k]
	if ok != wok || got != w {
		t.Fatalf("MRU.Get(%x, %v) = %+v, %v; want %+v, %v", k.sub, k.kind, got, ok, w, wok)
	}
}

func (h *harness) liveJobs(t *rapid.T) { h.checkLive(t, true) }

func (h *harness) checkLive(t rapid.TB, keep bool) {
	got, err := h.s.LiveJobs()
	must(t, "LiveJobs", err)
	if want := h.m.liveJobs(); !slices.Equal(got, want) {
		t.Fatalf("LiveJobs() = %s, want %s", fmtIDs(got), fmtIDs(want))
	}
	if keep {
		hold(h, "LiveJobs", got)
	}
}

func (h *harness) mruRecords(t *rapid.T) { h.checkMRURecords(t, true) }

func (h *harness) checkMRURecords(t rapid.TB, keep bool) {
	got, err := h.s.MRURecords()
	must(t, "MRURecords", err)
	want := h.m.mruRecords()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i] == store.MRUEntry{Submitter: want[i].k.sub, Kind: want[i].k.kind, Record: want[i].r}
	}
	if !ok {
		t.Fatalf("MRURecords() = %+v, want %+v", got, want)
	}
	if keep {
		hold(h, "MRURecords", got)
	}
}

// checkAll compares everything the store can be asked with the model.
func (h *harness) checkAll(t rapid.TB) {
	t.Helper()
	for _, id := range idPool {
		h.checkJob(t, id)
		h.checkPending(t, id)
	}
	for _, a := range addrPool {
		h.checkLatest(t, a)
	}
	for _, sub := range submitterPool {
		for k := range 6 {
			h.checkMRU(t, mruK{sub, mru.JobKind(k)})
		}
	}
	h.checkLive(t, false)
	h.checkMRURecords(t, false)
	for before := range uint64(12) {
		h.checkJobsDue(t, before, false)
	}
	for e := range uint64(5) {
		for v := range uint64(5) {
			h.checkDueAt(t, e, v, false)
			h.checkPendingBefore(t, e, v, false)
		}
	}
	got, err := h.s.PendingRecords()
	must(t, "PendingRecords", err)
	if want := h.m.pending(func(engine.PendingSelectionV1) bool { return true }); !pendingEqual(got, want) {
		t.Fatalf("PendingRecords() = %+v, want %+v", got, want)
	}
	if top, ok := h.m.top(); ok {
		for at := max(top, 3) - 3; at <= top; at++ {
			h.checkView(t, at, false)
		}
	}
}
