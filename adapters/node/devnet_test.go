package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cip11/cip11/replay"
)

// End to end (issue: devnet with about 20 runners for a few seconds):
// every job completes, none is lost, and a replay of the block log the
// validator wrote reproduces every block's outputs and state digest.
func TestDevnetEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("devnet run")
	}
	dir := t.TempDir()
	// PushWindow 2: a block with more than two seats is pushed paced, in
	// the background (quic.Server.PushWith), the others all at once.
	rep, err := RunDevnet(context.Background(), DevnetConfig{Runners: 20, Duration: 4 * time.Second, BlockTime: 300 * time.Millisecond,
		DataDir: dir, NoSync: true, Seed: 3, PushWindow: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *rep)
	if rep.Lost != 0 || rep.Submitted == 0 || rep.Completed != rep.Submitted {
		t.Fatalf("submitted %d, completed %d, expired %d, lost %d", rep.Submitted, rep.Completed, rep.Expired, rep.Lost)
	}
	if rep.Acked == 0 || rep.FirstDraws == 0 {
		t.Fatalf("no acks (%d) or first draws (%d)", rep.Acked, rep.FirstDraws)
	}
	f, err := os.Open(filepath.Join(dir, "blocks.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := replay.Run(f, replay.Config{})
	if err != nil {
		t.Fatalf("replay of the devnet's blocks: %v", err)
	}
	if uint64(s.Blocks) != rep.Blocks {
		t.Fatalf("replayed %d blocks, devnet made %d", s.Blocks, rep.Blocks)
	}
}

// Chaos (issue: a chaos run with 0 lost jobs): runners killed mid-job and
// restarted, connections dropped with Goodbye, and the validator
// restarted on its Pebble directory while jobs flow; every job still ends
// completed or expired by rule, and the block log, which spans every
// validator start, replays exactly.
func TestDevnetChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("devnet run")
	}
	dir := t.TempDir()
	rep, err := RunDevnet(context.Background(), DevnetConfig{Runners: 16, Duration: 8 * time.Second, BlockTime: 150 * time.Millisecond,
		DataDir: dir, NoSync: false, Seed: 5, Chaos: true, TimeoutBlocks: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *rep)
	if rep.Lost != 0 || rep.Submitted == 0 || rep.Completed+rep.Expired != rep.Submitted {
		t.Fatalf("submitted %d, completed %d, expired %d, lost %d", rep.Submitted, rep.Completed, rep.Expired, rep.Lost)
	}
	if rep.ValidatorStarts < 2 || rep.RunnerKills == 0 || rep.ConnDrops == 0 {
		t.Fatalf("chaos did not inject every fault: %d validator starts, %d runner kills, %d drops", rep.ValidatorStarts, rep.RunnerKills, rep.ConnDrops)
	}
	f, err := os.Open(filepath.Join(dir, "blocks.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := replay.Run(f, replay.Config{}); err != nil {
		t.Fatalf("replay of the chaos run's blocks: %v", err)
	}
}
