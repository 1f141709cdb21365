package replay_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/replay"
)

// TestRetainReplayPrunedLog: a pruned log (a base line at 40, blocks 41 …)
// is refused without Config.Pruned (chainlog.ErrPruned); with it, over a
// store holding the state at 70 it resumes there, checks the digest at 70
// and reaches the digest of a replay from block 1; over an empty store,
// or a store at or below the base, it is ErrStoreMismatch.
func TestRetainReplayPrunedLog(t *testing.T) {
	log := genLog(t, smallChain)
	mem, err := replay.Run(bytes.NewReader(log), replay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	lines := splitLines(log)
	pruned := joinLines(lines[:1], [][]byte{[]byte(`{"base":{"height":40,"reconfigurations":[]}}`)}, lines[41:])

	if _, err := replay.Run(bytes.NewReader(pruned), replay.Config{}); !errors.Is(err, chainlog.ErrPruned) {
		t.Fatalf("pruned log without Pruned: %v, want ErrPruned", err)
	}
	if _, err := replay.Run(bytes.NewReader(pruned), replay.Config{Pruned: true}); !errors.Is(err, blockexec.ErrStoreMismatch) {
		t.Fatalf("pruned log over an empty store: %v, want ErrStoreMismatch", err)
	}
	low := t.TempDir()
	if _, err := replay.Run(bytes.NewReader(log), replay.Config{Limit: 40, Options: blockexec.Options{OpenStore: openPebble(low)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Run(bytes.NewReader(pruned), replay.Config{Pruned: true, Options: blockexec.Options{OpenStore: openPebble(low)}}); !errors.Is(err, blockexec.ErrStoreMismatch) {
		t.Fatalf("pruned log over a store at its base: %v, want ErrStoreMismatch", err)
	}

	dir := t.TempDir()
	if _, err := replay.Run(bytes.NewReader(log), replay.Config{Limit: 70, Options: blockexec.Options{OpenStore: openPebble(dir)}}); err != nil {
		t.Fatal(err)
	}
	s, err := replay.Run(bytes.NewReader(pruned), replay.Config{Pruned: true, Options: blockexec.Options{OpenStore: openPebble(dir)}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Base != 40 || s.Resumed != 30 || s.Blocks != mem.Blocks-70 || s.FinalDigest != mem.FinalDigest || s.LastHeight != mem.LastHeight {
		t.Fatalf("pruned replay %+v, from block 1 %+v", s, mem)
	}
	// Pruned on an unpruned log changes nothing
	if s, err := replay.Run(bytes.NewReader(log), replay.Config{Pruned: true}); err != nil || s != mem {
		t.Fatalf("Pruned on a log from block 1: %+v %v", s, err)
	}
}
