package replay_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cip11/cip11/adapters/pebble"
	"github.com/cip11/cip11/blockexec"
	"github.com/cip11/cip11/chainlog"
	"github.com/cip11/cip11/replay"
	"github.com/cip11/cip11/state"
	"github.com/cip11/cip11/store"
)

// openPebble is an Options.OpenStore over the pebble store in dir, fsync
// off (the tests do not crash the machine).
func openPebble(dir string) func(chainlog.Header) (store.Store, error) {
	return func(h chainlog.Header) (store.Store, error) {
		cfg := state.ReputationConfig{Normalizer: uint64(h.Reputation.Normalizer), WMinFloorX1e6: uint64(h.Reputation.WMinFloorX1e6)}
		return pebble.Open(dir, pebble.Options{Sync: pebble.SyncNever, ReputationConfig: &cfg})
	}
}

func lastCommitted(t *testing.T, dir string) uint64 {
	t.Helper()
	s, err := pebble.Open(dir, pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h, ok, err := s.LastCommitted()
	if err != nil || !ok {
		t.Fatalf("LastCommitted: %d %v %v", h, ok, err)
	}
	return h
}

// TestRunResumesOverPebble: a replay over pebble stopped after 60 blocks
// resumes from the store's last committed block, checks the state digest
// there against the log, and reaches the digest of an uninterrupted
// in-memory run; a store ahead of the log is ErrStoreMismatch.
func TestRunResumesOverPebble(t *testing.T) {
	log := genLog(t, smallChain)
	mem, err := replay.Run(bytes.NewReader(log), replay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first, err := replay.Run(bytes.NewReader(log), replay.Config{Limit: 60, Options: blockexec.Options{OpenStore: openPebble(dir)}})
	if err != nil || first.Blocks != 60 || first.Resumed != 0 {
		t.Fatalf("first part: %+v %v", first, err)
	}
	if h := lastCommitted(t, dir); h != 60 {
		t.Fatalf("store at %d after 60 blocks", h)
	}
	rest, err := replay.Run(bytes.NewReader(log), replay.Config{Options: blockexec.Options{OpenStore: openPebble(dir)}})
	if err != nil {
		t.Fatal(err)
	}
	if rest.Resumed != 60 || rest.Blocks != mem.Blocks-60 || rest.FinalDigest != mem.FinalDigest {
		t.Fatalf("resumed run %+v, uninterrupted %+v", rest, mem)
	}
	// The store now holds every block: a shorter log is a mismatch.
	short := bytes.Join(splitLines(log)[:101], []byte("\n")) // header + 100 blocks
	if _, err := replay.Run(bytes.NewReader(short), replay.Config{Options: blockexec.Options{OpenStore: openPebble(dir)}}); !errors.Is(err, blockexec.ErrStoreMismatch) {
		t.Fatalf("store ahead of the log: %v, want ErrStoreMismatch", err)
	}
}

// TestRunResumeChecksDigest: resuming a store on a log whose state at the
// store's height differs is a Divergence at that height, and the store is
// left as it was.
func TestRunResumeChecksDigest(t *testing.T) {
	dir := t.TempDir()
	if _, err := replay.Run(bytes.NewReader(genLog(t, smallChain)), replay.Config{Limit: 40, Options: blockexec.Options{OpenStore: openPebble(dir)}}); err != nil {
		t.Fatal(err)
	}
	other := smallChain
	other.Seed++
	_, err := replay.Run(bytes.NewReader(genLog(t, other)), replay.Config{Options: blockexec.Options{OpenStore: openPebble(dir)}})
	var d *blockexec.Divergence
	if !errors.As(err, &d) || d.Height != 40 || d.Field != "state_digest (resumed store)" {
		t.Fatalf("got %v, want a resumed-store Divergence at 40", err)
	}
	if h := lastCommitted(t, dir); h != 40 {
		t.Fatalf("store at %d, want 40", h)
	}
}

// TestRunNeverCommitsDivergence: a block whose outputs differ from the log
// is discarded, so the store ends at the block before it, and a resumed
// run over the corrected log continues from there.
func TestRunNeverCommitsDivergence(t *testing.T) {
	log := genLog(t, smallChain)
	lines := splitLines(log)
	b := decodeBlock(t, lines[50])
	b.Out.StateDigest[0] ^= 1
	tampered := joinLines(lines[:50], [][]byte{encodeBlock(t, &b)}, lines[51:])
	dir := t.TempDir()
	_, err := replay.Run(bytes.NewReader(tampered), replay.Config{Options: blockexec.Options{OpenStore: openPebble(dir)}})
	var d *blockexec.Divergence
	if !errors.As(err, &d) || d.Height != uint64(b.Height) {
		t.Fatalf("got %v, want a Divergence at %d", err, b.Height)
	}
	if h := lastCommitted(t, dir); h != uint64(b.Height)-1 {
		t.Fatalf("store at %d, want %d", h, b.Height-1)
	}
	mem, err := replay.Run(bytes.NewReader(log), replay.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := replay.Run(bytes.NewReader(log), replay.Config{Options: blockexec.Options{OpenStore: openPebble(dir)}})
	if err != nil || s.FinalDigest != mem.FinalDigest {
		t.Fatalf("resumed: %+v %v, want digest %s", s, err, mem.FinalDigest)
	}
}
