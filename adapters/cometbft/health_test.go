package cometbft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cmtlog "github.com/cometbft/cometbft/libs/log"
)

// TestFatalLogger: CometBFT's "CONSENSUS FAILURE!!!" record, logged
// through a With-derived logger as the consensus module does, reaches
// onFatal once per record as ErrConsensusFailure carrying the recovered panic; every record still reaches the wrapped
// logger, and no other Error record is fatal.
func TestFatalLogger(t *testing.T) {
	var b bytes.Buffer
	next, err := NewLogger(&b, "error")
	if err != nil {
		t.Fatal(err)
	}
	var got []error
	l := cmtlog.Logger(fatalLogger{next: next, onFatal: func(err error) { got = append(got, err) }}).With("module", "consensus")
	l.Error("Failed writing to WAL", "err", "disk")
	l.Info("started")
	if len(got) != 0 {
		t.Fatalf("non-fatal records reported: %v", got)
	}
	l.With("height", 7).Error("CONSENSUS FAILURE!!!", "err", "failed to write priv_validator_state.json: no space left on device", "stack", "goroutine 1")
	if len(got) != 1 {
		t.Fatalf("%d fatal reports, want 1", len(got))
	}
	if !errors.Is(got[0], ErrConsensusFailure) ||
		got[0].Error() != "cometbft: consensus failure: failed to write priv_validator_state.json: no space left on device" {
		t.Fatalf("fatal error %q", got[0])
	}
	out := b.String()
	if !strings.Contains(out, "CONSENSUS FAILURE!!!") || !strings.Contains(out, "Failed writing to WAL") || !strings.Contains(out, "module=consensus") {
		t.Fatalf("the wrapped logger did not get the records:\n%s", out)
	}
	// a record without an err value names the message
	l.Error("CONSENSUS FAILURE!!!")
	if len(got) != 2 || got[1].Error() != "cometbft: consensus failure: CONSENSUS FAILURE!!!" {
		t.Fatalf("fatal reports %v", got)
	}
}

// TestConsensusFailureStopsRun: a one-validator network whose vote key's
// last-sign state can no longer be written (its path turned into a
// directory, as a full disk fails the same write) hits CometBFT's
// consensus failure; Node.Run returns ErrConsensusFailure naming the file
// within seconds instead of idling at a frozen height.
func TestConsensusFailureStopsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a validator")
	}
	_, nodes, _ := startNetWith(t, 1, 0, nil)
	nd := nodes[0]
	waitHeight(t, nodes, 3, 60*time.Second)
	run := make(chan error, 1)
	go func() { run <- nd.Run(context.Background()) }()
	select {
	case err := <-run:
		t.Fatalf("Run returned before any failure: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	blockSignState(t, filepath.Join(nd.home, "data", "priv_validator_state.json"))
	t0 := time.Now()
	select {
	case err := <-run:
		if !errors.Is(err, ErrConsensusFailure) || !strings.Contains(err.Error(), "priv_validator_state.json") {
			t.Fatalf("Run: %v; want ErrConsensusFailure naming the state file", err)
		}
		if !errors.Is(nd.Err(), ErrConsensusFailure) {
			t.Fatalf("Err after the failure: %v", nd.Err())
		}
		t.Logf("Run returned %v after the state file became unwritable: %v", time.Since(t0).Round(time.Millisecond), err)
	case <-time.After(10 * time.Second):
		t.Fatalf("Run still running 10 s after the state file became unwritable (height %d)", nd.V.Height())
	}
}

// TestStatusConsensusFacts: a two-validator network (both needed for a
// block) reports CometBFT's facts on /status: the latest block and its
// time, one peer, not catching up, both members connected and signing,
// and the stall threshold of 8 rounds of the default timeouts (8 × 600
// ms). With its peer stopped, the lone validator says stalled within
// that threshold (plus a second of polling) of its last block, and its
// peer shows disconnected with its last signed height frozen.
func TestStatusConsensusFacts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two validators")
	}
	_, nodes, _ := startNetWith(t, 2, 0, nil)
	waitHeight(t, nodes, 6, 60*time.Second)
	st := nodes[0].V.Status()
	if st.LatestBlockHeight < 6 || st.LatestBlockTime.IsZero() || time.Since(st.LatestBlockTime).Abs() > time.Minute ||
		st.Peers != 1 || st.CatchingUp || st.Stalled || st.StallAfterMillis != 4800 || st.Failed != "" {
		t.Fatalf("status %+v", st)
	}
	if len(st.Validators) != 2 {
		t.Fatalf("validators %+v", st.Validators)
	}
	for i, v := range st.Validators {
		if v.Index != i || v.Self != (i == 0) || !v.Connected || v.LastSignedHeight+3 < st.Height || len(v.PeerKey) != 64 || len(v.Address) != 40 {
			t.Fatalf("validator %d: %+v (height %d)", i, v, st.Height)
		}
	}
	if got := nodes[0].V.Genesis().Set[1].PeerPubKey; st.Validators[1].PeerKey != strings.ToLower(hexOf(got[:])) {
		t.Fatalf("validator 1 peer key %s, genesis %x", st.Validators[1].PeerKey, got)
	}

	id := nodes[1].ID()
	if err := nodes[1].Close(); err != nil {
		t.Fatal(err)
	}
	nodes[1] = nil
	nodes[0].DropPeer(id) // an in-process stop can leave a late dial behind (Node.DropPeer)
	last, moved := nodes[0].V.Height(), time.Now()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st = nodes[0].V.Status()
		if h := st.Height; h != last {
			last, moved = h, time.Now()
		}
		if st.Stalled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not stalled 20 s after its peer stopped: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(moved) // moved: this test's first sight of the last height, after the close
	if bt := time.Since(st.LatestBlockTime); bt > took {
		took = bt // the last block's header time, earlier
	}
	t.Logf("the lone validator reported stalled %v after its last block (height %d, age %d ms, threshold %d ms)", took.Round(time.Millisecond), st.Height, st.LastBlockAgeMillis, st.StallAfterMillis)
	if took > 10*time.Second || st.LastBlockAgeMillis <= st.StallAfterMillis {
		t.Fatalf("stalled after %v (age %d ms, threshold %d ms)", took, st.LastBlockAgeMillis, st.StallAfterMillis)
	}
	if st.Peers != 0 || st.Validators[1].Connected || !st.Validators[0].Connected || st.Validators[1].LastSignedHeight > st.LatestBlockHeight {
		t.Fatalf("the stopped peer: %+v", st)
	}
}

// TestStatusReadsStoresOncePerHeight: GET /status, asked by every runner
// process's chain view each tick, reads CometBFT's stores (the latest
// block's time, the commits) once per (latest block, applied height), not
// once per request; the answers at one height are the same facts.
func TestStatusReadsStoresOncePerHeight(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two validators")
	}
	_, nodes, _ := startNetWith(t, 2, 0, nil)
	waitHeight(t, nodes, 3, 60*time.Second)
	f := nodes[0].eng.facts
	f.mu.Lock()
	before := f.refreshes
	f.mu.Unlock()
	type key struct{ latest, applied uint64 }
	seen := map[key]bool{}
	byHeight := map[key]string{}
	asks := 0
	for t0 := time.Now(); (asks < 300 || len(seen) < 3) && time.Since(t0) < 30*time.Second; asks++ {
		time.Sleep(time.Millisecond) // over several heights
		applied := nodes[0].V.Height()
		st := nodes[0].V.Status()
		k := key{st.LatestBlockHeight, applied}
		seen[k] = true
		facts := fmt.Sprintf("%v %+v", st.LatestBlockTime, st.Validators)
		if prev, ok := byHeight[k]; ok && prev != facts {
			t.Fatalf("two answers at %+v: %s then %s", k, prev, facts)
		}
		byHeight[k] = facts
	}
	f.mu.Lock()
	reads := f.refreshes - before
	f.mu.Unlock()
	// a block stored or applied between a request's reads adds one key the
	// loop above did not see: at most twice the keys seen
	if len(seen) < 3 || reads == 0 || reads > uint64(2*len(seen)) {
		t.Fatalf("%d store reads over %d requests at %d (latest, applied) pairs", reads, asks, len(seen))
	}
	t.Logf("%d store reads for %d requests over %d (latest, applied) pairs", reads, asks, len(seen))
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, x := range b {
		out = append(out, digits[x>>4], digits[x&15])
	}
	return string(out)
}

// TestDevnetReportsFailure: the network devnet's run loop ends on a
// validator's fatal failure, naming the validator and the cause
// (FirstFailure, which cmd/internal/devnet calls); a healthy network reports
// none.
func TestDevnetReportsFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a validator")
	}
	_, nodes, _ := startNetWith(t, 1, 0, nil)
	all := []*Node{nil, nodes[0]}
	if err := FirstFailure(all); err != nil {
		t.Fatalf("a healthy network: %v", err)
	}
	nodes[0].fail(fmt.Errorf("%w: rename priv_validator_state.json: no space left on device", ErrConsensusFailure))
	err := FirstFailure(all)
	if !errors.Is(err, ErrConsensusFailure) || err.Error() != "validator 1: cometbft: consensus failure: rename priv_validator_state.json: no space left on device" {
		t.Fatalf("failure: %v", err)
	}
}

// blockSignState makes a last-sign state file's path a non-empty
// directory, so that the next write of the state (a temporary file
// renamed over it) fails. The running validator rewrites the file at
// every vote, so the removal is retried until the directory wins.
func blockSignState(t *testing.T, path string) {
	t.Helper()
	for range 100 {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.Mkdir(path, 0o755); err == nil {
			if err := os.Mkdir(filepath.Join(path, "blocker"), 0o755); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("could not replace %s by a directory", path)
}
