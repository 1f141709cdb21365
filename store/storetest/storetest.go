package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/mru"
	"github.com/cip11/cip11/seed"
	"github.com/cip11/cip11/selection"
	"github.com/cip11/cip11/selection/engine"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
)

// Opener opens a new, empty store for one test case. t is the Go test the
// case runs under (for t.TempDir, t.Cleanup); the suite opens many stores
// per test.
//
// reopen is nil for a store without persistence. Otherwise the suite calls
// it after it has called s.Close() itself: reopen must open the same data
// again (the same directory, say) and return the new store. Every store
// the suite gets is closed by the suite.
type Opener func(t *testing.T) (s store.Store, reopen func() store.Store)

// errAny as an expected error means "some non-nil error": the contract
// requires a failure but names no sentinel.
var errAny = errors.New("storetest: any error")

// TestStore runs the contract suite against the stores open makes: a
// deterministic test of every lifecycle and store sentinel, then random
// operation sequences (pgregory.net/rapid; -rapid.checks tunes their
// number) checked step by step against a naive reference model. The
// package comment lists the checks.
func TestStore(t *testing.T, open Opener) {
	t.Run("Sentinels", func(t *testing.T) { testSentinels(t, open) })
	t.Run("DiscardRestores", func(t *testing.T) { testDiscardRestores(t, open) })
	t.Run("ViewImmutable", func(t *testing.T) { testViewImmutable(t, open) })
	t.Run("Reopen", func(t *testing.T) { testReopen(t, open) })
	t.Run("ModeA", func(t *testing.T) { testModeA(t, open) })
	t.Run("Random", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			s, reopen := open(t)
			h := &harness{s: s, reopen: reopen, m: newModel()}
			defer func() { _ = h.s.Close() }()
			rt.Repeat(h.actions())
		})
	})
}

// Value pools: small, so that keys collide and every error path is hit.
var (
	addrPool = func() []cip11.Address {
		out := make([]cip11.Address, 6)
		for i := range out {
			out[i] = cip11.Address{byte(0xa0 - 0x20*i%0x90), byte(i)} // not in pool order
		}
		return out
	}()
	idPool = func() [][32]byte {
		out := make([][32]byte, 8)
		for i := range out {
			out[i] = [32]byte{byte(i * 37 % 8), 0xee, byte(i)}
		}
		return out
	}()
	submitterPool = addrPool[:3]
)

func genRunner(t *rapid.T, addr cip11.Address) state.Runner {
	return state.Runner{
		Address:         addr,
		Health:          state.Health(rapid.IntRange(0, 3).Draw(t, "health")),
		LastHeartbeat:   rapid.Uint64Range(0, 20).Draw(t, "heartbeat"),
		Stake:           cip11.U128{Hi: rapid.Uint64Range(0, 1).Draw(t, "stakeHi"), Lo: rapid.Uint64().Draw(t, "stakeLo")},
		DelegatedActive: cip11.U128From64(rapid.Uint64Range(0, 100).Draw(t, "delegated")),
		ReputationX1e9:  rapid.Uint64Range(0, 2e9).Draw(t, "reputation"),
	}
}

func genAddrs(t *rapid.T, label string) []cip11.Address {
	return rapid.SliceOfN(rapid.SampledFrom(addrPool), 0, 3).Draw(t, label)
}

func genJob(t *rapid.T, id [32]byte) engine.JobRecord {
	return engine.JobRecord{
		Job: engine.Job{
			JobID:         id,
			Submitter:     rapid.SampledFrom(submitterPool).Draw(t, "submitter"),
			Kind:          mru.JobKind(rapid.IntRange(0, 5).Draw(t, "kind")),
			CommitteeSize: rapid.Uint32Range(1, 5).Draw(t, "m"),
			TimeoutBlocks: rapid.Uint64Range(1, 10).Draw(t, "timeout"),
		},
		SubmittedAt:      rapid.Uint64Range(0, 20).Draw(t, "submittedAt"),
		Status:           engine.Status(rapid.IntRange(int(engine.StatusPending), int(engine.StatusExpired)).Draw(t, "status")),
		Mode:             seed.Mode(rapid.IntRange(0, 1).Draw(t, "mode")),
		Branch:           selection.Branch(rapid.IntRange(0, 2).Draw(t, "branch")),
		Seed:             cip11.Hash{rapid.Byte().Draw(t, "seed")},
		AssignmentHeight: rapid.Uint64Range(0, 20).Draw(t, "assignmentHeight"),
		DeadlineBlock:    rapid.Uint64Range(0, 10).Draw(t, "deadline"),
		Committee:        genAddrs(t, "committee"),
		Delivered:        genAddrs(t, "delivered"),
		TimedOut:         genAddrs(t, "timedOut"),
		Reselections:     rapid.Uint32Range(0, 3).Draw(t, "reselections"),
		NextDraw:         rapid.Uint64Range(0, 10).Draw(t, "nextDraw"),
	}
}

// genPending draws a valid PendingSelectionV1 (version 1, T = S, M ≥ 2)
// submitted at or below h.
func genPending(t *rapid.T, id [32]byte, h uint64) engine.PendingSelectionV1 {
	s := rapid.Uint64Range(max(h, 2)-2, h).Draw(t, "S")
	return engine.PendingSelectionV1{
		Version: engine.PendingVersion, JobID: id, SubmittedAt: s, SelectionStateHeight: s,
		CommitteeSize:          rapid.Uint32Range(2, 7).Draw(t, "M"),
		SubmissionEpoch:        rapid.Uint64Range(0, 3).Draw(t, "submitEpoch"),
		SubmissionView:         rapid.Uint64Range(0, 3).Draw(t, "submitView"),
		SeedEpoch:              rapid.Uint64Range(0, 3).Draw(t, "seedEpoch"),
		SeedView:               rapid.Uint64Range(0, 3).Draw(t, "seedView"),
		SeedDelayViews:         rapid.Uint64Range(0, 4).Draw(t, "K"),
		CandidatesSnapshotRoot: cip11.Hash{rapid.Byte().Draw(t, "root")},
	}
}

// expect checks err against want: nil, errAny or a sentinel (errors.Is).
func expect(t rapid.TB, what string, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("%s: unexpected error %v", what, err)
	case want == errAny && err == nil:
		t.Fatalf("%s: no error, want one", what)
	case want != nil && want != errAny && !errors.Is(err, want):
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

func must(t rapid.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func sameJob(a, b engine.JobRecord) bool { return string(a.Encode()) == string(b.Encode()) }

// checkRegView compares a view of height h with the model's registry.
// cfg holds the first ReputationConfig seen (nil: none yet); the Store
// interface cannot change it, so every view must report the same one.
func checkRegView(t rapid.TB, what string, v state.RegistryView, h uint64, want regState, cfg **state.ReputationConfig) {
	t.Helper()
	if v.Height() != h {
		t.Fatalf("%s: Height() = %d, want %d", what, v.Height(), h)
	}
	if got := v.ActiveRunners(); !slices.Equal(got, want.order) {
		t.Fatalf("%s: ActiveRunners() = %x, want %x", what, got, want.order)
	}
	if got := v.ReputationConfig(); *cfg == nil {
		*cfg = &got
	} else if got != **cfg {
		t.Fatalf("%s: ReputationConfig() = %+v, want %+v as in every other view", what, got, **cfg)
	}
	for _, a := range addrPool {
		got, ok := v.Runner(a)
		w, wok := want.recs[a]
		if ok != wok || got != w {
			t.Fatalf("%s: Runner(%x) = %+v, %v; want %+v, %v", what, a, got, ok, w, wok)
		}
	}
	if sv, ok := v.(state.SortedView); ok {
		var got []state.Runner
		for r := range sv.ByAddress() {
			got = append(got, r)
		}
		wantSorted := make([]state.Runner, 0, len(want.order))
		for _, a := range want.order {
			wantSorted = append(wantSorted, want.recs[a])
		}
		slices.SortFunc(wantSorted, func(a, b state.Runner) int { return cmpAddr(a.Address, b.Address) })
		if !slices.Equal(got, wantSorted) {
			t.Fatalf("%s: ByAddress() = %+v, want %+v", what, got, wantSorted)
		}
	}
}

func cmpAddr(a, b cip11.Address) int {
	for i := range a {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return 0
}

func pendingEqual(a, b []engine.PendingSelectionV1) bool { return slices.Equal(a, b) }

func fmtIDs(ids [][32]byte) string {
	s := "["
	for i, id := range ids {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%x", id[:3])
	}
	return s + "]"
}

func errorsIsUnknown(err error) bool { return errors.Is(err, state.ErrUnknownHeight) }

func fmtAny(v []any) string { return fmt.Sprintf("%v", v) }
