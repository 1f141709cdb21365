package node

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node/httpapi"
)

func countKind(fs []httpapi.Failure, k httpapi.FailureKind) int {
	n := 0
	for _, f := range fs {
		if f.Kind == k {
			n++
		}
	}
	return n
}

// The dashboard's history survives a validator restart (issue 18 F): the
// block history, the chain-derived counters and the jobs' failure events
// are rebuilt from the block log (§8.1 recovery), and the restart itself is
// a failure event. No runner is connected, so the job's deadline passes and it is re-selected until it expires (§11.2).
func TestDashboardHistorySurvivesRestart(t *testing.T) {
	d := testDevnet(t, 3, nil)
	dir := t.TempDir()
	v := newTestValidator(t, d, dir)
	if _, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{7}, Kind: 1, Runners: 1, TimeoutBlocks: 2}); err != nil {
		t.Fatal(err)
	}
	const blocks = 30
	for range blocks {
		if err := v.ProduceBlock(); err != nil {
			t.Fatal(err)
		}
	}
	before := v.dashboard()
	if before.Totals.Restarts != 0 || countKind(before.Failures, httpapi.FailureRestart) != 0 {
		t.Fatalf("a fresh chain reports a restart: %+v", before.Totals)
	}
	if before.Totals.Reselections == 0 || before.Totals.Expired != 1 {
		t.Fatalf("no runner connected, yet totals %+v", before.Totals)
	}
	if countKind(before.Failures, httpapi.FailureReselected) != int(before.Totals.Reselections) || countKind(before.Failures, httpapi.FailureExpired) != 1 {
		t.Fatalf("failures before the restart: %+v", before.Failures)
	}
	if len(before.RecentBlocks) != blocks || before.RecentBlocks[0].Height != blocks || before.RecentBlocks[0].Time.IsZero() {
		t.Fatalf("recent blocks before the restart: %d, newest %+v", len(before.RecentBlocks), before.RecentBlocks[0])
	}
	for _, r := range before.Runners {
		if r.Connected || r.Present || r.LastPingHeight != 0 {
			t.Fatalf("runner row without any runner running: %+v", r)
		}
	}
	if len(before.Runners) != 3 {
		t.Fatalf("%d runner rows, want the 3 registered", len(before.Runners))
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}

	v2 := newTestValidator(t, d, dir)
	defer v2.Close()
	after := v2.dashboard()
	if len(after.RecentBlocks) != blocks || after.RecentBlocks[0].Height != blocks || after.RecentBlocks[blocks-1].Height != 1 {
		t.Fatalf("block history after the restart: %d blocks, newest %+v", len(after.RecentBlocks), after.RecentBlocks)
	}
	for i, b := range after.RecentBlocks {
		if w := before.RecentBlocks[i]; b.Height != w.Height || b.Txs != w.Txs || b.Assignments != w.Assignments {
			t.Fatalf("rebuilt block %d = %+v, before the restart %+v", i, b, w)
		}
		// Its time is when it was appended to the block log (blocks.times,
		// issue 18 #22): after the previous block was applied, not after
		// this one was.
		w := before.RecentBlocks[i]
		if b.Time.IsZero() || b.Time.After(w.Time) || (i+1 < blocks && b.Time.Before(before.RecentBlocks[i+1].Time)) {
			t.Fatalf("rebuilt block %d at %v; applied at %v before the restart", b.Height, b.Time, w.Time)
		}
	}
	bt, at := before.Totals, after.Totals
	if at.Submitted != bt.Submitted || at.Assigned != bt.Assigned || at.Reselections != bt.Reselections ||
		at.Expired != bt.Expired || at.Completed != bt.Completed || at.Accepted != bt.Accepted || at.Blocks != blocks {
		t.Fatalf("chain-derived totals: before %+v, after %+v", bt, at)
	}
	if at.Restarts != 1 || at.Pushed != 0 || at.PushFailed != 0 {
		t.Fatalf("after the restart: %+v", at)
	}
	if !after.StartedAt.After(before.StartedAt) {
		t.Fatalf("started_at %v, before %v", after.StartedAt, before.StartedAt)
	}
	if f := after.Failures[0]; f.Kind != httpapi.FailureRestart || f.Height != blocks {
		t.Fatalf("newest failure after the restart: %+v", f)
	}
	if countKind(after.Failures, httpapi.FailureReselected) != countKind(before.Failures, httpapi.FailureReselected) ||
		countKind(after.Failures, httpapi.FailureExpired) != 1 {
		t.Fatalf("rebuilt failures: %+v", after.Failures)
	}

	// blocks produced after the restart join the rebuilt history
	if err := v2.ProduceBlock(); err != nil {
		t.Fatal(err)
	}
	again := v2.dashboard()
	if len(again.RecentBlocks) != blocks+1 || again.RecentBlocks[0].Height != blocks+1 || again.RecentBlocks[0].Time.IsZero() ||
		again.RecentBlocks[1].Height != blocks {
		t.Fatalf("history after one more block: %+v", again.RecentBlocks[:2])
	}
}

// BenchmarkDashboard measures one GET /dashboard.json snapshot over a
// tracker holding 2,000 jobs, each re-selected until it expired (no runner
// connected). The core keeps the counts, failures and outcomes the page
// reads incrementally, so a snapshot scans only the jobs still open.
func BenchmarkDashboard(b *testing.B) {
	v := benchValidator(b, 3)
	for i := range 2000 {
		if _, err := v.SubmitJob(&JobSpec{Submitter: cip11.Address{9}, Kind: 1, Runners: 1, TimeoutBlocks: 1, Nonce: uint64(i)}); err != nil {
			b.Fatal(err)
		}
	}
	for range 12 {
		if err := v.ProduceBlock(); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		_ = v.dashboard()
	}
}

// newestFailures keeps exactly the n newest of any sequence, newest first
// (timed before untimed, then by height), ties in arrival order — checked
// against a stable sort of everything.
func TestNewestFailures(t *testing.T) {
	base := time.Date(2026, 12, 4, 16, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + rng.IntN(8)
		var all []httpapi.Failure
		f := newestFailures{n: n}
		for i := range rng.IntN(40) {
			x := httpapi.Failure{Height: uint64(rng.IntN(6)), Detail: fmt.Sprint(i)}
			if rng.IntN(3) > 0 {
				x.Time = base.Add(time.Duration(rng.IntN(5)) * time.Second)
			}
			all = append(all, x)
			f.add(x)
		}
		slices.SortStableFunc(all, func(a, b httpapi.Failure) int {
			if c := b.Time.Compare(a.Time); c != 0 {
				return c
			}
			return cmp.Compare(b.Height, a.Height)
		})
		want := all[:min(n, len(all))]
		if !slices.EqualFunc(f.list, want, func(a, b httpapi.Failure) bool { return a.Detail == b.Detail }) {
			t.Fatalf("trial %d (n %d): got %v, want %v", trial, n, f.list, want)
		}
	}
}

// BenchmarkStatus measures one GET /status answer (Backend.Status) of a
// validator whose registry holds 1,000 active runners: what every runner
// process's chain view asks each tick.
func BenchmarkStatus(b *testing.B) {
	v := benchValidator(b, 1000)
	for range 3 {
		if err := v.ProduceBlock(); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.status(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// benchValidator is a validator on a fresh genesis with runners genesis
// runners, closed when b ends.
func benchValidator(b *testing.B, runners int) *Validator {
	d, err := GenerateGenesis(GenesisOptions{Seed: 9, Runners: runners, QUIC: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	v, err := NewValidator(ValidatorConfig{Genesis: d.Genesis, Keys: d.Validator, DataDir: b.TempDir(), NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { v.Close() })
	return v
}
