package cometbft

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cip11/cip11"
	"github.com/cip11/cip11/adapters/node"
)

// freeBase finds a base port whose n validators' TCP and UDP ports are free.
func freeBase(t testing.TB, n int) int {
	t.Helper()
	b := freePorts(n)
	if b == 0 {
		t.Fatal("no free ports")
	}
	return b
}

// digests records every validator's state digest per height.
type digests struct {
	mu sync.Mutex
	m  map[uint64]map[int]cip11.Hash
}

func (d *digests) hook(i int) func(uint64, cip11.Hash) {
	return func(h uint64, x cip11.Hash) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.m == nil {
			d.m = map[uint64]map[int]cip11.Hash{}
		}
		if d.m[h] == nil {
			d.m[h] = map[int]cip11.Hash{}
		}
		d.m[h][i] = x
	}
}

func startNet(t *testing.T, n, runners int) (*Network, []*Node, *digests) {
	t.Helper()
	d := &digests{}
	nw, nodes, _ := startNetWith(t, n, runners, d.hook)
	return nw, nodes, d
}

// startNetWith starts an n-validator network on loopback, validator i
// told its finalizations through hook(i) (nil: none); stop closes it once
// (it also runs at cleanup).
func startNetWith(t *testing.T, n, runners int, hook func(i int) func(uint64, cip11.Hash)) (*Network, []*Node, func()) {
	t.Helper()
	return startOpts(t, NetworkOptions{Validators: n, Runners: runners, Seed: 1, BasePort: freeBase(t, n)}, hook)
}

// startOpts generates the network o describes, writes it to a temporary
// directory and starts a node on every home (a validator that joins later
// follows as a full node); hook as for startNetWith.
func startOpts(t *testing.T, o NetworkOptions, hook func(i int) func(uint64, cip11.Hash)) (*Network, []*Node, func()) {
	t.Helper()
	nw, err := NewNetwork(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := nw.Write(dir); err != nil {
		t.Fatal(err)
	}
	nodes := make([]*Node, len(nw.Homes))
	var once sync.Once
	stop := func() { once.Do(func() { closeAll(nodes) }) }
	t.Cleanup(stop)
	for i := range nodes {
		var fin func(uint64, cip11.Hash)
		if hook != nil {
			fin = hook(i)
		}
		nd, err := StartNode(context.Background(), NodeConfig{Home: filepath.Join(dir, fmt.Sprintf("v%d", i)), NoSync: true, OnFinalized: fin})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = nd
	}
	return nw, nodes, stop
}

func waitHeight(t *testing.T, nodes []*Node, h uint64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		ok := true
		for _, nd := range nodes {
			if nd != nil && nd.V.Height() < h {
				ok = false
			}
		}
		if ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i, nd := range nodes {
		if nd != nil {
			t.Logf("validator %d at height %d (cometbft %d, peers %d)", i, nd.V.Height(), nd.Height(), nd.Peers())
		}
	}
	t.Fatalf("not every validator reached height %d within %v", h, within)
}

func TestFourValidatorsAgree(t *testing.T) {
	_, nodes, d := startNet(t, 4, 8)
	waitHeight(t, nodes, 10, 60*time.Second)
	d.mu.Lock()
	defer d.mu.Unlock()
	for h := uint64(1); h <= 10; h++ {
		var first cip11.Hash
		if len(d.m[h]) != 4 {
			t.Fatalf("height %d: %d digests", h, len(d.m[h]))
		}
		for i, x := range d.m[h] {
			if first == (cip11.Hash{}) {
				first = x
			} else if x != first {
				t.Fatalf("height %d: validator %d digest %x differs", h, i, x)
			}
		}
	}
}

// TestDevnetFourValidators runs the network devnet briefly: every job ends
// completed, every validator computed the same AppHash at every height,
// and assignments reach runners from more than one validator of Sub(R)
// (k = 3 of 4, D33), the extra pushes acked Duplicate.
func TestDevnetFourValidators(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4-validator network with runners")
	}
	rep, err := RunDevnet(context.Background(), DevnetConfig{Validators: 4, Runners: 12, Duration: 5 * time.Second, NoSync: true, Seed: 3})
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

// TestDevnetChaos kills the fourth validator three times (f = 1 of 4) and
// restarts it on its directories while jobs flow: the chain goes on, no
// job is lost, the restarted validator catches up, agrees on every
// AppHash and its block log replays.
func TestDevnetChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4-validator network with kills")
	}
	rep, err := RunDevnet(context.Background(), DevnetConfig{Validators: 4, Runners: 12, Duration: 8 * time.Second, Chaos: true, NoSync: true, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *rep)
	if rep.ValidatorKills < 3 || !rep.CaughtUp || rep.CatchUpMaxSeconds <= 0 || !rep.ReplayAgrees || !rep.AppHashesAgree || rep.HeightsCompared+2 < rep.Blocks {
		t.Fatalf("kills %d, caught up %v, replay %v, AppHashes agree %v", rep.ValidatorKills, rep.CaughtUp, rep.ReplayAgrees, rep.AppHashesAgree)
	}
	if rep.Lost != 0 || rep.Completed == 0 {
		t.Fatalf("jobs: submitted %d completed %d expired %d lost %d", rep.Submitted, rep.Completed, rep.Expired, rep.Lost)
	}
}

// closeAll closes the nodes in parallel.
func closeAll(nodes []*Node) {
	var wg sync.WaitGroup
	for _, nd := range nodes {
		if nd != nil {
			wg.Go(func() { nd.Close() })
		}
	}
	wg.Wait()
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
	rep, err := RunDevnet(context.Background(), DevnetConfig{Validators: 4, Runners: 12, Duration: 12 * time.Second, Pause: 6 * time.Second,
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
