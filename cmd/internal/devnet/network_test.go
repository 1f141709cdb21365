package devnet

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/cip11/cip11/adapters/node"
)

// TestDevnetFourValidators runs the network devnet briefly: every job ends
// completed, every validator computed the same AppHash at every height,
// and assignments reach runners from more than one validator of Sub(R)
// (k = 3 of 4, D33), the extra pushes acked Duplicate.
func TestDevnetFourValidators(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4-validator network with runners")
	}
	rep, err := RunNetwork(context.Background(), NetworkConfig{Validators: 4, Runners: 12, Duration: 5 * time.Second, NoSync: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *rep)
	if rep.Lost != 0 || rep.Completed == 0 || rep.Completed+rep.Expired != rep.Submitted {
		t.Fatalf("jobs: submitted %d completed %d expired %d lost %d", rep.Submitted, rep.Completed, rep.Expired, rep.Lost)
	}
	if !rep.AppHashesAgree || rep.HeightsCompared < rep.Blocks/2 {
		t.Fatalf("AppHashes agree %v over %d of %d heights", rep.AppHashesAgree, rep.HeightsCompared, rep.Blocks)
	}
	if rep.SentP50Millis <= 0 || rep.SentP50Millis > rep.PushP50Millis {
		t.Fatalf("dispatch p50 %.3f ms against push (ack) p50 %.3f ms: sending is part of the push latency", rep.SentP50Millis, rep.PushP50Millis)
	}
	if rep.PushesPerAssign < 2 || rep.PushesPerAssign > 3 || rep.DuplicateAcks == 0 {
		t.Fatalf("pushes per assignment %.2f, duplicate acks %d: k-fold delivery not seen", rep.PushesPerAssign, rep.DuplicateAcks)
	}
}

// TestNetworkDevnetChaos kills the fourth validator three times (f = 1 of 4) and
// restarts it on its directories while jobs flow: the chain goes on, no
// job is lost, the restarted validator catches up, agrees on every
// AppHash and its block log replays.
func TestNetworkDevnetChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4-validator network with kills")
	}
	rep, err := RunNetwork(context.Background(), NetworkConfig{Validators: 4, Runners: 12, Duration: 8 * time.Second, Chaos: true, NoSync: true, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *rep)
	if rep.ValidatorKills < 3 || !rep.CaughtUp || rep.CatchUpMaxSeconds <= 0 || !rep.Replayed() || !rep.AppHashesAgree || rep.HeightsCompared+2 < rep.Blocks {
		t.Fatalf("kills %d, caught up %v, replay %v, AppHashes agree %v", rep.ValidatorKills, rep.CaughtUp, rep.Replayed(), rep.AppHashesAgree)
	}
	if rep.Lost != 0 || rep.Completed == 0 {
		t.Fatalf("jobs: submitted %d completed %d expired %d lost %d", rep.Submitted, rep.Completed, rep.Expired, rep.Lost)
	}
}

// TestDevnetPauseCatchUp pauses the fourth validator's consensus for 6 s
// while jobs flow (its runners stay connected, as through a SIGSTOP):
// when it resumes far behind the head, it pushes no assignment whose
// deadline had passed at the head (issue 28: before, a paused or wiped
// validator pushed 110–130 for old heights), counts what it skipped by
// reason, and pushes again once at the head; no job is lost.
func TestDevnetPauseCatchUp(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4-validator network with a paused validator")
	}
	rep, err := RunNetwork(context.Background(), NetworkConfig{Validators: 4, Runners: 12, Duration: 12 * time.Second, Pause: 6 * time.Second,
		TimeoutBlocks: 8, NoSync: true, Seed: 5, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("behind %d blocks at resume; stale pushes %d; skipped %v; pushes after the pause %d; completed %d expired %d lost %d",
		rep.PausedBehind, rep.StalePushes, rep.PushesSkipped, rep.PausedPushesAfter, rep.Completed, rep.Expired, rep.Lost)
	if rep.PausedBehind <= 8 {
		t.Fatalf("the paused validator was %d blocks behind at resume: not past the deadlines (8 blocks), the test proves nothing", rep.PausedBehind)
	}
	if rep.StalePushes != 0 {
		t.Fatalf("%d pushes for assignments whose deadline had passed at the head", rep.StalePushes)
	}
	if rep.PushesSkipped[node.SkipDeadline] == 0 {
		t.Fatalf("skipped %v: the catching-up validator skipped nothing for a passed deadline", rep.PushesSkipped)
	}
	if rep.PausedPushesAfter == 0 {
		t.Fatal("the paused validator pushed nothing after catching up")
	}
	if rep.Lost != 0 || !rep.AppHashesAgree {
		t.Fatalf("lost %d, AppHashes agree %v", rep.Lost, rep.AppHashesAgree)
	}
}

// TestDevnetGossipCoverage runs the 4-validator devnet with and without
// presence gossip (each runner holds streams to k = 3 of 4 validators):
// without it a proposer sees only its own connections, with it the
// proposer's PresenceInput covers every connected runner (issue 20 §1).
func TestDevnetGossipCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("two 4-validator networks")
	}
	var reps [2]*NetworkReport
	for i, off := range []bool{true, false} {
		rep, err := RunNetwork(context.Background(), NetworkConfig{Validators: 4, Runners: 16, Duration: 5 * time.Second, NoSync: true, Seed: 9, NoGossip: off})
		if err != nil {
			t.Fatal(err)
		}
		reps[i] = rep
		t.Logf("gossip %v: coverage p50 %.3f min %.3f full %.1f%% over %d blocks; jobs/runner max %d mean %.2f; gossip bytes %d; lost %d",
			!off, rep.CoverageP50, rep.CoverageMin, rep.CoverageFullPct, rep.CoverageBlocks, rep.JobsPerRunnerMax, rep.JobsPerRunnerAvg, rep.GossipBytes, rep.Lost)
		if rep.Lost != 0 || !rep.AppHashesAgree {
			t.Fatalf("lost %d, AppHashes agree %v", rep.Lost, rep.AppHashesAgree)
		}
	}
	if off, on := reps[0], reps[1]; on.CoverageP50 < 0.99 || off.CoverageP50 > 0.9 || off.GossipBytes != 0 || on.GossipBytes == 0 {
		t.Fatalf("coverage p50 without gossip %.3f (want ≤ 0.9), with gossip %.3f (want ≥ 0.99); gossip bytes %d / %d",
			off.CoverageP50, on.CoverageP50, off.GossipBytes, on.GossipBytes)
	}
}

// TestDevnetReconfiguration: the network devnet with jobs flowing through
// a join and a removal (§5.3, §11.5): no job lost, AppHashes agree at
// every height on all five members, every runner ends connected only to
// validators of its final Sub(R), and the removed validator admits no
// connection after its cutoff.
func TestDevnetReconfiguration(t *testing.T) {
	rep, err := RunNetwork(context.Background(), NetworkConfig{Validators: 4, Runners: 20, Duration: 6 * time.Second, NoSync: true, Seed: 5,
		Reconfigure: true, AddAt: 16, RemoveAt: 30, Overlap: 8})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(rep)
	t.Logf("%s", js)
	switch {
	case rep.Lost != 0 || rep.Completed == 0:
		t.Fatalf("jobs: %d completed, %d lost", rep.Completed, rep.Lost)
	case !rep.AppHashesAgree || rep.HeightsCompared < 38:
		t.Fatalf("AppHashes agree %v over %d heights", rep.AppHashesAgree, rep.HeightsCompared)
	case rep.Epochs != 3:
		t.Fatalf("epochs %d", rep.Epochs)
	case rep.RunnersStray != 0 || rep.RunnersRehomed != 20:
		t.Fatalf("runners re-homed %d, stray %d", rep.RunnersRehomed, rep.RunnersStray)
	case !rep.Replayed():
		t.Fatal("a block log does not replay")
	case rep.RemovedAdmittedAfter != 0:
		t.Fatalf("the removed validator admitted %d connections after its cutoff", rep.RemovedAdmittedAfter)
	case rep.GoodbyesByValidators["OverlapExpired"]+rep.GoodbyesByRunners["OverlapExpired"] == 0:
		t.Fatalf("no Goodbye{OverlapExpired}: validators %v, runners %v", rep.GoodbyesByValidators, rep.GoodbyesByRunners)
	case len(rep.Overlap) != 2:
		t.Fatalf("overlap timeline %+v", rep.Overlap)
	}
	// §5.3: every runner holds its new-epoch links from (about) the
	// activation and none holds an old-epoch link past the cutoff.
	for _, tl := range rep.Overlap {
		if tl.Runners != 20 || tl.NewPairFirstUp < tl.Activation || tl.NewPairLastUp > tl.Activation+3 || tl.OldPairLastUp > tl.Cutoff+1 {
			t.Fatalf("epoch %d: %+v", tl.Epoch, tl)
		}
	}
}
